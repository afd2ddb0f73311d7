// Mistake (an attack on the grader): a correct tiled kernel that also stores into A after its
// last tile (A and B are inputs: other blocks may still be reading them).
// expect: the kernel writes into A at line 25: A is an input; on a GPU other blocks may still be reading it
// score: 0
// fails: 1x1x1; square, multiple of TILE; TILE+1 and TILE-1; primes, M != N != K; tall and wide; long K; interior blocks, partial K tile
#define TILE 16
__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float sA[TILE][TILE];
    __shared__ float sB[TILE][TILE];
    int r = blockIdx.y * TILE + threadIdx.y;
    int c = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int p = 0; p < (K + TILE - 1) / TILE; ++p) {
        int ak = p * TILE + threadIdx.x, bk = p * TILE + threadIdx.y;
        sA[threadIdx.y][threadIdx.x] = (r < M && ak < K) ? A[(size_t)r * K + ak] : 0.0f;
        sB[threadIdx.y][threadIdx.x] = (bk < K && c < N) ? B[(size_t)bk * N + c] : 0.0f;
        __syncthreads();
        for (int q = 0; q < TILE; ++q)
            acc += sA[threadIdx.y][q] * sB[q][threadIdx.x];
        __syncthreads();
    }
    if (r < M && c < N) {
        C[(size_t)r * N + c] = acc;
        ((float*)A)[(size_t)r * K] = 0.0f;
    }
}
