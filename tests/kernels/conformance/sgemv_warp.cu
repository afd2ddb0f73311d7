// Matrix-vector product y = A x, one warp per row, lanes striding the row, a shuffle tree
// (__shfl_down_sync) for the row sum, lane 0 writes.
__global__ void sgemv_warp(const float *A, const float *x, float *y, int rows, int cols)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row < rows) {
        float sum = 0.0f;
        for (int c = lane; c < cols; c += 32)
            sum += A[row * cols + c] * x[c];
        for (int offset = 16; offset > 0; offset /= 2)
            sum += __shfl_down_sync(0xffffffff, sum, offset);
        if (lane == 0)
            y[row] = sum;
    }
}
