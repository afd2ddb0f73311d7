#define TILE 32
#define COARSE 4
// Coarsened (COARSE outputs per thread, B's value reused from a register) but not tiled:
// every operand comes from global memory.
__global__ void sgemmCoarse(int M, int N, int K, const float* A, const float* B, float* C)
{
    int col = blockIdx.x * TILE + threadIdx.x;
    int row0 = blockIdx.y * TILE + threadIdx.y * COARSE;
    float acc[COARSE];
    for (int c = 0; c < COARSE; ++c)
        acc[c] = 0.0f;
    if (col < N) {
        for (int k = 0; k < K; ++k) {
            float b = B[(size_t)k * N + col];
            for (int c = 0; c < COARSE; ++c)
                if (row0 + c < M)
                    acc[c] += A[(size_t)(row0 + c) * K + k] * b;
        }
    }
    for (int c = 0; c < COARSE; ++c)
        if (row0 + c < M && col < N)
            C[(size_t)(row0 + c) * N + col] = acc[c];
}
