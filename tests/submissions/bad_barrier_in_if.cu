// Mistake: the whole tile loop, barriers included, sits inside 'if (row < M && col < N)'.
// The threads outside C skip it and leave the kernel: a GPU of compute capability 7.0 or
// later counts them as arrived at the barriers, so the launch completes (the emulator's
// result is that GPU's), and the tiles miss the elements those threads never loaded.
// expect: inside an if that thread
// expect: counts threads that exited as arrived
// score: 21.33
// fails: TILE+1 and TILE-1; primes, M != N != K; tall and wide; long K; interior blocks, partial K tile; synchronisation
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
    if (row < M && col < N)
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + tx;
        int kb = t * TILE + ty;
        As[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = sum;
}
