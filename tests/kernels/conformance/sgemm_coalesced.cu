// Global-memory coalescing: a 1-D block of BLOCKSIZE*BLOCKSIZE threads, each warp covering
// consecutive columns of one row of C (the division and modulo give row and column).
#ifndef BLOCKSIZE
#define BLOCKSIZE 32
#endif
__global__ void sgemm_coalesced(int M, int N, int K, float alpha, const float *A,
                                const float *B, float beta, float *C)
{
    const int cRow = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);
    const int cCol = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);
    if (cRow < M && cCol < N) {
        float tmp = 0.0f;
        for (int i = 0; i < K; ++i) {
            tmp += A[cRow * K + i] * B[i * N + cCol];
        }
        C[cRow * N + cCol] = alpha * tmp + beta * C[cRow * N + cCol];
    }
}
