// Naive SGEMM: C = A * B for N x N row-major float matrices, one thread per element of C.
// Launch: block (bx, by, 1), grid tl.grid_for((N, N), block); x runs along columns.
// Every thread reads a whole row of A and a whole column of B from global memory:
// 2N FLOP against 8N bytes requested, 0.25 FLOP per byte (lesson 01).
__global__ void sgemmNaive(int N, const float* A, const float* B, float* C)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < N && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < N; ++k) {
            sum += A[row * N + k] * B[k * N + col];
        }
        C[row * N + col] = sum;
    }
}
