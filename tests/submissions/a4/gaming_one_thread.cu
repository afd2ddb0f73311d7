#define TILE 32
#define COARSE 4
// Gaming: the block stages its tiles together, then one thread computes the whole
// TILE x TILE tile of C from them (in a local array) while the other threads wait.
__global__ void sgemmCoarse(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    float acc[TILE * TILE];
    for (int i = 0; i < TILE * TILE; ++i)
        acc[i] = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        for (int c = 0; c < COARSE; ++c) {
            int r = ty * COARSE + c;
            int arow = blockIdx.y * TILE + r, ka = t * TILE + tx;
            int kb = t * TILE + r, col = blockIdx.x * TILE + tx;
            As[r][tx] = (arow < M && ka < K) ? A[(size_t)arow * K + ka] : 0.0f;
            Bs[r][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        }
        __syncthreads();
        if (tx == 0 && ty == 0)
            for (int i = 0; i < TILE; ++i)
                for (int j = 0; j < TILE; ++j)
                    for (int k = 0; k < TILE; ++k)
                        acc[i * TILE + j] += As[i][k] * Bs[k][j];
        __syncthreads();
    }
    if (tx == 0 && ty == 0)
        for (int i = 0; i < TILE; ++i)
            for (int j = 0; j < TILE; ++j) {
                int row = blockIdx.y * TILE + i, col = blockIdx.x * TILE + j;
                if (row < M && col < N)
                    C[(size_t)row * N + col] = acc[i * TILE + j];
            }
}
