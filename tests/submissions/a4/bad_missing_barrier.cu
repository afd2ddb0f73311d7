#define TILE 32
#define COARSE 4                       // outputs of C per thread: 2, 4, 8, 16 or 32
__global__ void sgemmCoarse(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;      // ty goes from 0 to TILE / COARSE - 1
    int col = blockIdx.x * TILE + tx;            // this thread's column of C
    int row0 = blockIdx.y * TILE + ty * COARSE;  // its first row: it owns rows row0 .. row0 + COARSE - 1
    float acc[COARSE];
    for (int c = 0; c < COARSE; ++c)
        acc[c] = 0.0f;
    int tiles = (K + TILE - 1) / TILE;   // the last tile may be partial
    for (int t = 0; t < tiles; ++t) {
        for (int c = 0; c < COARSE; ++c) {
            int r = ty * COARSE + c;           // the tile row this thread loads
            int arow = blockIdx.y * TILE + r;  // ... which is this row of A
            int ka = t * TILE + tx;            // column of A it loads
            int kb = t * TILE + r;             // row of B it loads
            As[r][tx] = (arow < M && ka < K) ? A[(size_t)arow * K + ka] : 0.0f;
            Bs[r][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            float b = Bs[k][tx];               // one shared load, reused COARSE times
            for (int c = 0; c < COARSE; ++c)
                acc[c] += As[ty * COARSE + c][k] * b;
        }
    }                                          // no barrier before the next tile's stores
    for (int c = 0; c < COARSE; ++c)
        if (row0 + c < M && col < N)
            C[(size_t)(row0 + c) * N + col] = acc[c];
}
