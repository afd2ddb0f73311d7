#define TILE 32
#define COARSE 4
__global__ void sgemmCoarse(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;      // ty in [0, TILE / COARSE)
    int col = blockIdx.x * TILE + tx;
    int row0 = blockIdx.y * TILE + ty * COARSE;  // this thread's first row of C
    float acc[COARSE];
    for (int c = 0; c < COARSE; ++c)
        acc[c] = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        for (int c = 0; c < COARSE; ++c) {
            int r = ty * COARSE + c;              // tile row this thread loads
            int ka = t * TILE + tx, kb = t * TILE + r;
            int arow = blockIdx.y * TILE + r;
            As[r][tx] = (arow < M && ka < K) ? A[(size_t)arow * K + ka] : 0.0f;
            Bs[r][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < TILE / 2; ++k) {   // half the work
            float b = Bs[k][tx];
            for (int c = 0; c < COARSE; ++c)
                acc[c] += As[ty * COARSE + c][k] * b;
        }
        __syncthreads();
    }
    for (int c = 0; c < COARSE; ++c)
        if (row0 + c < M && col < N)
            C[(size_t)(row0 + c) * N + col] = acc[c];
}
