// Double-buffered tiled SGEMM: the tiled kernel of lesson 03 with two shared buffers, so
// that the next tile's loads from global memory are in flight while this tile is used.
// Launch and assumptions as for sgemm_tiled: block (TILE, TILE, 1), grid (N / TILE, N / TILE),
// N % TILE == 0. Shared memory: 2 buffers x 2 tiles x TILE x TILE x 4 bytes (16,384 B at 32).
//
// One __syncthreads() per tile is enough: in step t the threads read buffer t % 2 and
// write buffer (t + 1) % 2. That buffer was last read in step t - 1, and the barrier that
// ends step t - 1 separates those reads from these writes; the barrier that ends step t
// separates these writes from the reads of step t + 1.
#ifndef TILE
#define TILE 32
#endif

__global__ void sgemmTiledDB(int N, const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C)
{
    __shared__ float As[2][TILE][TILE];
    __shared__ float Bs[2][TILE][TILE];

    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int tiles = N / TILE;
    float sum = 0.0f;

    // Prologue: stage tile 0 in buffer 0.
    As[0][ty][tx] = A[row * N + tx];
    Bs[0][ty][tx] = B[ty * N + col];
    __syncthreads();

    for (int t = 0; t < tiles; ++t) {
        int cur = t & 1;
        // Start the loads of tile t + 1 into registers; they complete while we compute.
        float a_next = 0.0f;
        float b_next = 0.0f;
        if (t + 1 < tiles) {
            a_next = A[row * N + (t + 1) * TILE + tx];
            b_next = B[((t + 1) * TILE + ty) * N + col];
        }
        for (int k = 0; k < TILE; ++k) {
            sum += As[cur][ty][k] * Bs[cur][k][tx];
        }
        // Park tile t + 1 in the other buffer, then one barrier for both purposes.
        if (t + 1 < tiles) {
            As[cur ^ 1][ty][tx] = a_next;
            Bs[cur ^ 1][ty][tx] = b_next;
        }
        __syncthreads();
    }
    C[row * N + col] = sum;
}
