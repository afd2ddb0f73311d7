// Shared-memory cache-blocking in the style that advances the matrix pointers:
// A += ..., B += ..., C += ... move each block to its tiles. Needs M, N, K % BLOCKSIZE == 0.
#include <cuda_runtime.h>
#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))
#ifndef BLOCKSIZE
#define BLOCKSIZE 16
#endif

__global__ void sgemm_shared_ptr(int M, int N, int K, float alpha, const float *A,
                                 const float *B, float beta, float *C)
{
    const unsigned int cRow = blockIdx.x;
    const unsigned int cCol = blockIdx.y;
    __shared__ float As[BLOCKSIZE * BLOCKSIZE];
    __shared__ float Bs[BLOCKSIZE * BLOCKSIZE];
    const unsigned int threadCol = threadIdx.x % BLOCKSIZE;
    const unsigned int threadRow = threadIdx.x / BLOCKSIZE;

    A += cRow * BLOCKSIZE * K;
    B += cCol * BLOCKSIZE;
    C += cRow * BLOCKSIZE * N + cCol * BLOCKSIZE;

    float tmp = 0.0f;
    for (int bkIdx = 0; bkIdx < K; bkIdx += BLOCKSIZE) {
        As[threadRow * BLOCKSIZE + threadCol] = A[threadRow * K + threadCol];
        Bs[threadRow * BLOCKSIZE + threadCol] = B[threadRow * N + threadCol];
        __syncthreads();
        A += BLOCKSIZE;
        B += BLOCKSIZE * N;
        #pragma unroll
        for (int dotIdx = 0; dotIdx < BLOCKSIZE; ++dotIdx) {
            tmp += As[threadRow * BLOCKSIZE + dotIdx] * Bs[dotIdx * BLOCKSIZE + threadCol];
        }
        __syncthreads();
    }
    C[threadRow * N + threadCol] = alpha * tmp + beta * C[threadRow * N + threadCol];
}
