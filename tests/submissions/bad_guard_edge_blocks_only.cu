// Mistake: only the blocks of the last block row and column guard their loads; an interior block reads past K in the last, partial tile along K.
// expect: out-of-bounds access
// expect: 'B'
// score: 70
// fails: primes, M != N != K; interior blocks, partial K tile
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
    bool edge = blockIdx.x == gridDim.x - 1 || blockIdx.y == gridDim.y - 1;
    float sum = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + tx;
        int kb = t * TILE + ty;
        if (edge) {
            As[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : 0.0f;
            Bs[ty][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        } else {
            As[ty][tx] = A[(size_t)row * K + ka];
            Bs[ty][tx] = B[(size_t)kb * N + col];
        }
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = sum;
}
