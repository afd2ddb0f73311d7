// Mistake: TILE is declared 32 but the shared tiles and the index math use 16.
// expect: TILE declared is the TILE used
// expect: need 8,192
// score: 0
// fails: 1x1x1; square, multiple of TILE; TILE+1 and TILE-1; primes, M != N != K; tall and wide; long K; interior blocks, partial K tile; tiling; synchronisation; TILE declared is the TILE used
#ifndef TILE
#define TILE 32
#endif
__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty;
    int col = blockIdx.x * 16 + tx;
    float sum = 0.0f;
    for (int t = 0; t < (K + 15) / 16; ++t) {
        int ka = t * 16 + tx;
        int kb = t * 16 + ty;
        As[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 16; ++k)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = sum;
}
