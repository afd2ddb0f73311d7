// Mistake (an attack on the grader): the row offset is computed in 64 bits and then cast
// back to int, which throws its top 32 bits away.
// expect: line 17: (int) (((size_t) r) * K): a 64-bit product cast back to 32 bits
// expect: cast back to int
// score: 90
// fails: 64-bit index arithmetic
#define TILE 16
__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float sA[TILE][TILE];
    __shared__ float sB[TILE][TILE];
    int r = blockIdx.y * TILE + threadIdx.y;
    int c = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int p = 0; p < (K + TILE - 1) / TILE; ++p) {
        int ak = p * TILE + threadIdx.x, bk = p * TILE + threadIdx.y;
        sA[threadIdx.y][threadIdx.x] = (r < M && ak < K) ? A[(int)((size_t)r * K) + ak] : 0.0f;
        sB[threadIdx.y][threadIdx.x] = (bk < K && c < N) ? B[(size_t)bk * N + c] : 0.0f;
        __syncthreads();
        for (int q = 0; q < TILE; ++q)
            acc += sA[threadIdx.y][q] * sB[q][threadIdx.x];
        __syncthreads();
    }
    if (r < M && c < N)
        C[(size_t)r * N + c] = acc;
}
