// Mistake (an attack on the grader): the 32-bit product hides in a __device__ helper whose
// int result is the index.
// expect: line 10: r * cols (in idx())
// expect: __device__ function
// score: 90
// fails: 64-bit index arithmetic
#define TILE 16
__device__ int idx(int r, int cols, int c)
{
    return r * cols + c;
}
__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float sA[TILE][TILE];
    __shared__ float sB[TILE][TILE];
    int r = blockIdx.y * TILE + threadIdx.y;
    int c = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int p = 0; p < (K + TILE - 1) / TILE; ++p) {
        int ak = p * TILE + threadIdx.x, bk = p * TILE + threadIdx.y;
        sA[threadIdx.y][threadIdx.x] = (r < M && ak < K) ? A[idx(r, K, ak)] : 0.0f;
        sB[threadIdx.y][threadIdx.x] = (bk < K && c < N) ? B[idx(bk, N, c)] : 0.0f;
        __syncthreads();
        for (int q = 0; q < TILE; ++q)
            acc += sA[threadIdx.y][q] * sB[q][threadIdx.x];
        __syncthreads();
    }
    if (r < M && c < N)
        C[idx(r, N, c)] = acc;
}
