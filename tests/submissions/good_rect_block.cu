// Correct: a 32 x 8 block computes a 32 x 32 tile of C, four rows per thread.
// expect: full marks
// score: 100
// grader: block=(32, 8, 1)
#define TILE 32
#define ROWS 4

__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;          // ty in 0..7
    int col = blockIdx.x * TILE + tx;
    int row0 = blockIdx.y * TILE;
    float sum[ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};

    for (int k0 = 0; k0 < K; k0 += TILE) {
        for (int i = 0; i < ROWS; ++i) {
            int r = ty + i * (TILE / ROWS);
            int row = row0 + r;
            As[r][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
            Bs[r][tx] = (k0 + r < K && col < N) ? B[(size_t)(k0 + r) * N + col] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            float b = Bs[k][tx];
            for (int i = 0; i < ROWS; ++i)
                sum[i] += As[ty + i * (TILE / ROWS)][k] * b;
        }
        __syncthreads();
    }
    for (int i = 0; i < ROWS; ++i) {
        int row = row0 + ty + i * (TILE / ROWS);
        if (row < M && col < N)
            C[(size_t)row * N + col] = sum[i];
    }
}
