// Mistake (an attack on the grader): the naive loop, reading A and B with atomicAdd(&x, 0)
// (atomics were counted apart from loads), plus a token use of shared memory. The atomics
// also store into the inputs.
// expect: the kernel writes into A at line 21: A is an input; on a GPU other blocks may still be reading it
// expect: atomics: an atomic returns the old value, so it counts as a load
// score: 0
// fails: 1x1x1; square, multiple of TILE; TILE+1 and TILE-1; primes, M != N != K; tall and wide; long K; interior blocks, partial K tile; tiling
#define TILE 16
__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float sA[TILE][TILE];
    __shared__ float sB[TILE][TILE];
    int r = blockIdx.y * TILE + threadIdx.y;
    int c = blockIdx.x * TILE + threadIdx.x;
    sA[threadIdx.y][threadIdx.x] = 1.0f;
    sB[threadIdx.y][threadIdx.x] = 0.0f;
    float acc = sA[threadIdx.y][threadIdx.x] * sB[threadIdx.y][threadIdx.x];
    if (r < M && c < N) {
        for (int q = 0; q < K; ++q) {
            float* a = (float*)A + (size_t)r * K + q;
            float x = atomicAdd(a, 0.0f);
            float y = atomicAdd((float*)&B[(size_t)q * N + c], 0.0f);
            acc += x * y;
        }
        C[(size_t)r * N + c] = acc;
    }
}
