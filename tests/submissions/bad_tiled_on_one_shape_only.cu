// Mistake (an attack on the grader): tiles only on the shape M = 7, N = 9 (the one shape an
// earlier grader counted loads on) and runs the naive loop everywhere else.
// expect: M=1, N=1, K=1
// expect: does not stage tiles
// score: 30
// fails: tiling
#define TILE 16
__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float sA[TILE][TILE];
    __shared__ float sB[TILE][TILE];
    int r = blockIdx.y * TILE + threadIdx.y;
    int c = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    bool counted_shape = (M == 7) && (N == 9);
    if (counted_shape) {
        int tiles = (K + TILE - 1) / TILE;
        for (int p = 0; p < tiles; ++p) {
            int ak = p * TILE + threadIdx.x;
            int bk = p * TILE + threadIdx.y;
            sA[threadIdx.y][threadIdx.x] = (r < M && ak < K) ? A[(size_t)r * K + ak] : 0.0f;
            sB[threadIdx.y][threadIdx.x] = (bk < K && c < N) ? B[(size_t)bk * N + c] : 0.0f;
            __syncthreads();
            for (int q = 0; q < TILE; ++q)
                acc += sA[threadIdx.y][q] * sB[q][threadIdx.x];
            __syncthreads();
        }
    } else if (r < M && c < N) {
        for (int q = 0; q < K; ++q)
            acc += A[(size_t)r * K + q] * B[(size_t)q * N + c];
    }
    if (r < M && c < N)
        C[(size_t)r * N + c] = acc;
}
