// Transpose through a 32x32 shared tile, BLOCK_ROWS rows of threads looping over the tile.
// Unpadded, the column read tile[threadIdx.x][...] is a 32-way bank conflict; -DPAD=1 fixes it.
#define TILE_DIM 32
#define BLOCK_ROWS 8
#ifndef PAD
#define PAD 0
#endif

__global__ void transpose_shared(float *odata, const float *idata)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + PAD];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    int width = gridDim.x * TILE_DIM;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();

    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        odata[(y + j) * width + x] = tile[threadIdx.x][threadIdx.y + j];
}
