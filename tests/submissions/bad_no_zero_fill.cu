// Mistake: loads are guarded with if but nothing is written past the edge, so the partial tile holds stale or unwritten values.
// expect: Uninitialized __shared__ read
// expect: correct: TILE+1 and TILE-1
// score: 32
// fails: TILE+1 and TILE-1; primes, M != N != K; long K; interior blocks, partial K tile; synchronisation
#ifndef TILE
#define TILE 16
#endif
__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + tx;
        int kb = t * TILE + ty;
        if (row < M && ka < K) As[ty][tx] = A[(size_t)row * K + ka];
        if (kb < K && col < N) Bs[ty][tx] = B[(size_t)kb * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = sum;
}
