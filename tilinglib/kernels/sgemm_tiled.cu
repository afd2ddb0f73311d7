// Tiled SGEMM: C = A * B for N x N row-major float matrices, through shared memory.
// Launch: block (TILE, TILE, 1), grid (N / TILE, N / TILE); assumes N % TILE == 0.
// Each block stages a TILE x TILE piece of A and of B in shared memory, then every thread
// uses each staged element TILE times: 0.25 * TILE FLOP per byte of global traffic.
// Compile with options=["-DTILE=16"] to change the tile, ["-DPAD=1"] to pad each row.
#ifndef TILE
#define TILE 32
#endif
#ifndef PAD
#define PAD 0
#endif

__global__ void sgemmTiled(int N, const float* __restrict__ A, const float* __restrict__ B,
                           float* __restrict__ C)
{
    __shared__ float As[TILE][TILE + PAD];
    __shared__ float Bs[TILE][TILE + PAD];

    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;

    for (int t = 0; t < N / TILE; ++t) {
        // Each thread copies one element of each tile.
        As[ty][tx] = A[row * N + (t * TILE + tx)];
        Bs[ty][tx] = B[(t * TILE + ty) * N + col];
        // Wait until the whole tile is loaded before anyone reads it.
        __syncthreads();

        for (int k = 0; k < TILE; ++k) {
            sum += As[ty][k] * Bs[k][tx];
        }
        // Wait until everyone is done with this tile before the next loads overwrite it.
        __syncthreads();
    }
    C[row * N + col] = sum;
}
