// Mistake (an attack on the grader): naive where nvcc compiles device code (__CUDA_ARCH__
// defined), tiled elsewhere; the emulator defines __CUDA_ARCH__ as nvcc does, so the grader
// runs the naive branch, as the GPU would.
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
#ifdef __CUDA_ARCH__
    if (r < M && c < N)
        for (int q = 0; q < K; ++q)
            acc += A[(size_t)r * K + q] * B[(size_t)q * N + c];
#else
    for (int p = 0; p < (K + TILE - 1) / TILE; ++p) {
        int ak = p * TILE + threadIdx.x, bk = p * TILE + threadIdx.y;
        sA[threadIdx.y][threadIdx.x] = (r < M && ak < K) ? A[(size_t)r * K + ak] : 0.0f;
        sB[threadIdx.y][threadIdx.x] = (bk < K && c < N) ? B[(size_t)bk * N + c] : 0.0f;
        __syncthreads();
        for (int q = 0; q < TILE; ++q)
            acc += sA[threadIdx.y][q] * sB[q][threadIdx.x];
        __syncthreads();
    }
#endif
    if (r < M && c < N)
        C[(size_t)r * N + c] = acc;
}
