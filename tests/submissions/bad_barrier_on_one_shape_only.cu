// Mistake (an attack on the grader): the barrier after the inner loop is there only on the
// shape M = 7, N = 9 (the one shape an earlier grader checked for races); on every other
// shape the next tile's loads overwrite a tile still being read.
// expect: right in lockstep, wrong when the warps of a block run in another order
// expect: write-after-read
// expect: M=32, N=32, K=32
// score: 32
// fails: square, multiple of TILE; TILE+1 and TILE-1; primes, M != N != K; interior blocks, partial K tile; synchronisation
#define TILE 16
__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float sA[TILE][TILE];
    __shared__ float sB[TILE][TILE];
    int r = blockIdx.y * TILE + threadIdx.y;
    int c = blockIdx.x * TILE + threadIdx.x;
    bool counted_shape = (M == 7) && (N == 9);
    float acc = 0.0f;
    for (int p = 0; p < (K + TILE - 1) / TILE; ++p) {
        int ak = p * TILE + threadIdx.x, bk = p * TILE + threadIdx.y;
        sA[threadIdx.y][threadIdx.x] = (r < M && ak < K) ? A[(size_t)r * K + ak] : 0.0f;
        sB[threadIdx.y][threadIdx.x] = (bk < K && c < N) ? B[(size_t)bk * N + c] : 0.0f;
        __syncthreads();
        for (int q = 0; q < TILE; ++q)
            acc += sA[threadIdx.y][q] * sB[q][threadIdx.x];
        if (counted_shape)
            __syncthreads();
    }
    if (r < M && c < N)
        C[(size_t)r * N + c] = acc;
}
