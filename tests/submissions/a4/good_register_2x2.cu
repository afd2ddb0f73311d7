#define TILE 32
#define COARSE 4
// Lesson 07's 2-D register tiling at the assignment's launch: each of the block's 256
// threads computes a 2 x 2 square of the 32 x 32 tile of C, reading 2 values of As and 2 of
// Bs per k for 4 FMAs (4 bytes of shared loads per FMA, under 4 + 4/COARSE = 5).
__global__ void sgemmCoarse(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int id = ty * TILE + tx;                  // 0 .. 255
    int sr = 2 * (id / 16), sc = 2 * (id % 16);   // the square's first row and column in the tile
    float c00 = 0.0f, c01 = 0.0f, c10 = 0.0f, c11 = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        for (int c = 0; c < COARSE; ++c) {
            int r = ty * COARSE + c;
            int arow = blockIdx.y * TILE + r, ka = t * TILE + tx;
            int kb = t * TILE + r, col = blockIdx.x * TILE + tx;
            As[r][tx] = (arow < M && ka < K) ? A[(size_t)arow * K + ka] : 0.0f;
            Bs[r][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            float a0 = As[sr][k], a1 = As[sr + 1][k];
            float b0 = Bs[k][sc], b1 = Bs[k][sc + 1];
            c00 += a0 * b0; c01 += a0 * b1;
            c10 += a1 * b0; c11 += a1 * b1;
        }
        __syncthreads();
    }
    int row = blockIdx.y * TILE + sr, col = blockIdx.x * TILE + sc;
    if (row < M && col < N)         C[(size_t)row * N + col] = c00;
    if (row < M && col + 1 < N)     C[(size_t)row * N + col + 1] = c01;
    if (row + 1 < M && col < N)     C[(size_t)(row + 1) * N + col] = c10;
    if (row + 1 < M && col + 1 < N) C[(size_t)(row + 1) * N + col + 1] = c11;
}
