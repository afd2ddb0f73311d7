// Vectorised 2-D blocktiling: float4 loads through reinterpret_cast, the A tile stored
// transposed in shared memory so that the inner loop reads both tiles as float4.
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4

__global__ void sgemm_vectorized(int M, int N, int K, float alpha, float *A, float *B,
                                 float beta, float *C)
{
    const unsigned int cRow = blockIdx.y;
    const unsigned int cCol = blockIdx.x;
    const int threadCol = threadIdx.x % (BN / TN);
    const int threadRow = threadIdx.x / (BN / TN);
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;
    const unsigned int innerRowA = threadIdx.x / (BK / 4);
    const unsigned int innerColA = threadIdx.x % (BK / 4);
    const unsigned int innerRowB = threadIdx.x / (BN / 4);
    const unsigned int innerColB = threadIdx.x % (BN / 4);

    float threadResults[TM * TN] = {0.0};
    float regM[TM] = {0.0};
    float regN[TN] = {0.0};
    for (unsigned int bkIdx = 0; bkIdx < K; bkIdx += BK) {
        if (threadIdx.x < BM * BK / 4) {
            float4 tmp = reinterpret_cast<float4 *>(&A[innerRowA * K + innerColA * 4])[0];
            As[(innerColA * 4 + 0) * BM + innerRowA] = tmp.x;
            As[(innerColA * 4 + 1) * BM + innerRowA] = tmp.y;
            As[(innerColA * 4 + 2) * BM + innerRowA] = tmp.z;
            As[(innerColA * 4 + 3) * BM + innerRowA] = tmp.w;
        }
        if (threadIdx.x < BK * BN / 4) {
            reinterpret_cast<float4 *>(&Bs[innerRowB * BN + innerColB * 4])[0] =
                reinterpret_cast<float4 *>(&B[innerRowB * N + innerColB * 4])[0];
        }
        __syncthreads();
        A += BK;
        B += BK * N;
        for (unsigned int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            float4 m = *((float4 *)&As[dotIdx * BM + threadRow * TM]);
            regM[0] = m.x; regM[1] = m.y; regM[2] = m.z; regM[3] = m.w;
            float4 n = *((float4 *)&Bs[dotIdx * BN + threadCol * TN]);
            regN[0] = n.x; regN[1] = n.y; regN[2] = n.z; regN[3] = n.w;
            for (unsigned int i = 0; i < TM; ++i)
                for (unsigned int j = 0; j < TN; ++j)
                    threadResults[i * TN + j] += regM[i] * regN[j];
        }
        __syncthreads();
    }
    for (unsigned int i = 0; i < TM; i += 1) {
        float4 c = reinterpret_cast<float4 *>(&C[(threadRow * TM + i) * N + threadCol * TN])[0];
        c.x = alpha * threadResults[i * TN + 0] + beta * c.x;
        c.y = alpha * threadResults[i * TN + 1] + beta * c.y;
        c.z = alpha * threadResults[i * TN + 2] + beta * c.z;
        c.w = alpha * threadResults[i * TN + 3] + beta * c.w;
        reinterpret_cast<float4 *>(&C[(threadRow * TM + i) * N + threadCol * TN])[0] = c;
    }
}
