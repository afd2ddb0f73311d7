// 2-D register blocktiling: each of (BM/TM)*(BN/TN) threads computes a TM x TN block of C
// from register caches regM/regN; tiles loaded with strided loops.
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4

__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)
sgemm_2d_blocktiling(int M, int N, int K, float alpha, const float *A, const float *B,
                     float beta, float *C)
{
    const unsigned int cRow = blockIdx.y;
    const unsigned int cCol = blockIdx.x;
    const unsigned int totalResultsBlocktile = BM * BN;
    const unsigned int numThreadsBlocktile = totalResultsBlocktile / (TM * TN);
    const int threadCol = threadIdx.x % (BN / TN);
    const int threadRow = threadIdx.x / (BN / TN);
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;
    const unsigned int innerRowA = threadIdx.x / BK;
    const unsigned int innerColA = threadIdx.x % BK;
    const unsigned int strideA = numThreadsBlocktile / BK;
    const unsigned int innerRowB = threadIdx.x / BN;
    const unsigned int innerColB = threadIdx.x % BN;
    const unsigned int strideB = numThreadsBlocktile / BN;

    float threadResults[TM * TN] = {0.0};
    float regM[TM] = {0.0};
    float regN[TN] = {0.0};
    for (unsigned int bkIdx = 0; bkIdx < K; bkIdx += BK) {
        for (unsigned int loadOffset = 0; loadOffset < BM; loadOffset += strideA) {
            As[(innerRowA + loadOffset) * BK + innerColA] =
                A[(innerRowA + loadOffset) * K + innerColA];
        }
        for (unsigned int loadOffset = 0; loadOffset < BK; loadOffset += strideB) {
            Bs[(innerRowB + loadOffset) * BN + innerColB] =
                B[(innerRowB + loadOffset) * N + innerColB];
        }
        __syncthreads();
        A += BK;
        B += BK * N;
        for (unsigned int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            for (unsigned int i = 0; i < TM; ++i)
                regM[i] = As[(threadRow * TM + i) * BK + dotIdx];
            for (unsigned int i = 0; i < TN; ++i)
                regN[i] = Bs[dotIdx * BN + threadCol * TN + i];
            for (unsigned int resIdxM = 0; resIdxM < TM; ++resIdxM)
                for (unsigned int resIdxN = 0; resIdxN < TN; ++resIdxN)
                    threadResults[resIdxM * TN + resIdxN] += regM[resIdxM] * regN[resIdxN];
        }
        __syncthreads();
    }
    for (unsigned int resIdxM = 0; resIdxM < TM; ++resIdxM) {
        for (unsigned int resIdxN = 0; resIdxN < TN; ++resIdxN) {
            C[(threadRow * TM + resIdxM) * N + threadCol * TN + resIdxN] =
                alpha * threadResults[resIdxM * TN + resIdxN] +
                beta * C[(threadRow * TM + resIdxM) * N + threadCol * TN + resIdxN];
        }
    }
}
