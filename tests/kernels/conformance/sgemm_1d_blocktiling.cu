// 1-D register blocktiling: each thread computes TM results of one column of C, kept in a
// local array; BM x BK tile of A and BK x BN tile of B in shared memory.
#define BM 32
#define BN 32
#define BK 8
#define TM 4

__global__ void sgemm_1d_blocktiling(int M, int N, int K, float alpha, const float *A,
                                     const float *B, float beta, float *C)
{
    const unsigned int cRow = blockIdx.y;
    const unsigned int cCol = blockIdx.x;
    const int threadCol = threadIdx.x % BN;
    const int threadRow = threadIdx.x / BN;
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;
    const unsigned int innerColA = threadIdx.x % BK;
    const unsigned int innerRowA = threadIdx.x / BK;
    const unsigned int innerColB = threadIdx.x % BN;
    const unsigned int innerRowB = threadIdx.x / BN;

    float threadResults[TM] = {0.0};
    for (unsigned int bkIdx = 0; bkIdx < K; bkIdx += BK) {
        As[innerRowA * BK + innerColA] = A[innerRowA * K + innerColA];
        Bs[innerRowB * BN + innerColB] = B[innerRowB * N + innerColB];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (unsigned int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            float tmpB = Bs[dotIdx * BN + threadCol];
            for (unsigned int resIdx = 0; resIdx < TM; ++resIdx) {
                threadResults[resIdx] += As[(threadRow * TM + resIdx) * BK + dotIdx] * tmpB;
            }
        }
        __syncthreads();
    }
    for (unsigned int resIdx = 0; resIdx < TM; ++resIdx) {
        C[(threadRow * TM + resIdx) * N + threadCol] =
            alpha * threadResults[resIdx] + beta * C[(threadRow * TM + resIdx) * N + threadCol];
    }
}
