// C++ `const int` at file scope as array bounds and loop steps (the developer blog's
// transposes), and a device-side assert on the launch shape (SGEMM_CUDA's kernels 4 and 5).
#include <cassert>

const int TILE_DIM = 32;
const int BLOCK_ROWS = 8;

__global__ void transposePadded(float *odata, const float *idata) {
    assert(blockDim.x == TILE_DIM && blockDim.y == BLOCK_ROWS);
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    const int width = gridDim.x * TILE_DIM;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    }
    __syncthreads();

    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        odata[(y + j) * width + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}
