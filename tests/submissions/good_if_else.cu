// Correct: if/else loads with explicit zero fill, TILE = 32, 64-bit row offsets kept in variables.
// expect: full marks
// score: 100
#define TILE 32

__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float tileA[TILE][TILE];
    __shared__ float tileB[TILE][TILE];

    const int r = threadIdx.y, c = threadIdx.x;
    const int row = blockIdx.y * TILE + r;
    const int col = blockIdx.x * TILE + c;
    const long long rowA = (long long)row * K;     // start of row `row` of A
    float acc = 0.0f;

    int tiles = (K + TILE - 1) / TILE;
    for (int t = 0; t < tiles; t++) {
        int k0 = t * TILE;
        if (row < M && k0 + c < K) {
            tileA[r][c] = A[rowA + k0 + c];
        } else {
            tileA[r][c] = 0.0f;
        }
        if (k0 + r < K && col < N) {
            tileB[r][c] = B[(long long)(k0 + r) * N + col];
        } else {
            tileB[r][c] = 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; k++) {
            acc += tileA[r][k] * tileB[k][c];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        C[(long long)row * N + col] = acc;
    }
}
