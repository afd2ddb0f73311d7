// Matrix transpose, out = in^T for N x N row-major floats, in three versions (lesson 05).
// Launch: block (TILE, TILE, 1), grid (N / TILE, N / TILE); N % TILE == 0.
//
// transposeNaive:  reads rows (coalesced), writes columns (32 sectors per warp).
// transposeShared: stages a TILE x TILE tile in shared memory so that both the global read
//                  and the global write are row-wise; the tile is written by rows and read
//                  by columns, T[tx][ty]: without padding all 32 lanes of a warp hit one
//                  bank (a 32-way conflict). -DPAD=1 adds one word per row, which moves
//                  each row by one bank and removes the conflict.
#ifndef TILE
#define TILE 32
#endif
#ifndef PAD
#define PAD 0
#endif

__global__ void transposeNaive(int N, const float* __restrict__ in, float* __restrict__ out)
{
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    out[x * N + y] = in[y * N + x];
}

__global__ void transposeShared(int N, const float* __restrict__ in, float* __restrict__ out)
{
    __shared__ float T[TILE][TILE + PAD];

    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    T[threadIdx.y][threadIdx.x] = in[y * N + x];
    __syncthreads();

    // The block's tile lands at the mirrored block position; read the tile by columns.
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    out[y * N + x] = T[threadIdx.x][threadIdx.y];
}
