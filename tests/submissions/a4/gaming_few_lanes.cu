#define TILE 32
#define COARSE 4
// Gaming: the whole warp stages the tiles, then only lanes 0-7 of each warp compute: each
// of them 4 rows x 4 columns of C, the warp's whole 4 x 32 piece (unrolled, so it takes few
// loop steps); lanes 8-31 wait.
__global__ void sgemmCoarse(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    float acc[COARSE][4];
    for (int c = 0; c < COARSE; ++c)
        for (int j = 0; j < 4; ++j)
            acc[c][j] = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        for (int c = 0; c < COARSE; ++c) {
            int r = ty * COARSE + c;
            int arow = blockIdx.y * TILE + r, ka = t * TILE + tx;
            int kb = t * TILE + r, col = blockIdx.x * TILE + tx;
            As[r][tx] = (arow < M && ka < K) ? A[(size_t)arow * K + ka] : 0.0f;
            Bs[r][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        }
        __syncthreads();
        if (tx < 8)
            for (int k = 0; k < TILE; ++k) {
                float b0 = Bs[k][4 * tx], b1 = Bs[k][4 * tx + 1];
                float b2 = Bs[k][4 * tx + 2], b3 = Bs[k][4 * tx + 3];
                for (int c = 0; c < COARSE; ++c) {
                    float a = As[ty * COARSE + c][k];
                    acc[c][0] += a * b0; acc[c][1] += a * b1;
                    acc[c][2] += a * b2; acc[c][3] += a * b3;
                }
            }
        __syncthreads();
    }
    if (tx < 8)
        for (int c = 0; c < COARSE; ++c)
            for (int j = 0; j < 4; ++j) {
                int row = blockIdx.y * TILE + ty * COARSE + c, col = blockIdx.x * TILE + 4 * tx + j;
                if (row < M && col < N)
                    C[(size_t)row * N + col] = acc[c][j];
            }
}
