// Correct: pointers walk along A and B one tile at a time (size_t offsets), TILE = 8, padded rows.
// expect: full marks
// score: 100
#ifndef TILE
#define TILE 8
#endif

__global__ void sgemm(int M, int N, int K, const float* __restrict__ A,
                      const float* __restrict__ B, float* __restrict__ C)
{
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    size_t row = (size_t)blockIdx.y * TILE + ty;
    size_t col = (size_t)blockIdx.x * TILE + tx;

    const float* a = A + row * K;        // this thread's row of A
    const float* b = B + col;            // this thread's column of B
    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? a[k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? b[(size_t)(k0 + ty) * N] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}
