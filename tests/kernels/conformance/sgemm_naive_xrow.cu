// Naive SGEMM, the first kernel of many courses: threadIdx.x runs along ROWS of C, so the
// 32 threads of a warp read 32 different rows of A (uncoalesced) and one element of B.
// C = alpha * A * B + beta * C; A is M x K, B is K x N, all row-major.
__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A,
                            const float *B, float beta, float *C)
{
    const unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < M && y < N) {
        float tmp = 0.0;
        for (int i = 0; i < K; ++i) {
            tmp += A[x * K + i] * B[i * N + y];
        }
        C[x * N + y] = alpha * tmp + beta * C[x * N + y];
    }
}
