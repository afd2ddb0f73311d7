// Double-buffered tiled SGEMM: tile t+1 is loaded into registers while tile t is used,
// then stored into the other buffer; one barrier per tile.
#ifndef TILE
#define TILE 16
#endif
__global__ void sgemm_double_buffer(int N, const float* A, const float* B, float* C)
{
    __shared__ float As[2][TILE][TILE];
    __shared__ float Bs[2][TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int ntiles = N / TILE;
    As[0][ty][tx] = A[row * N + tx];
    Bs[0][ty][tx] = B[ty * N + col];
    __syncthreads();
    float sum = 0.0f;
    for (int t = 0; t < ntiles; ++t) {
        int cur = t & 1;
        float a_next = 0.0f, b_next = 0.0f;
        bool more = t + 1 < ntiles;
        if (more) {
            a_next = A[row * N + (t + 1) * TILE + tx];
            b_next = B[((t + 1) * TILE + ty) * N + col];
        }
        for (int k = 0; k < TILE; ++k)
            sum += As[cur][ty][k] * Bs[cur][k][tx];
        if (more) {
            As[cur ^ 1][ty][tx] = a_next;
            Bs[cur ^ 1][ty][tx] = b_next;
        }
        __syncthreads();
    }
    C[row * N + col] = sum;
}
