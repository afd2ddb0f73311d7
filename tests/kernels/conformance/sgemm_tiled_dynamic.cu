// The tiled kernel with its two tiles in one extern __shared__ buffer, sized at launch:
// shared = 2 * tile * tile * sizeof(float). The tile is the block's width.
__global__ void sgemm_tiled_dynamic(int N, const float* __restrict__ A,
                                    const float* __restrict__ B, float* __restrict__ C)
{
    extern __shared__ float smem[];
    const int tile = blockDim.x;
    float* As = smem;
    float* Bs = smem + tile * tile;
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * tile + ty;
    int col = blockIdx.x * tile + tx;
    float sum = 0.0f;
    for (int t = 0; t < N / tile; ++t) {
        As[ty * tile + tx] = A[row * N + t * tile + tx];
        Bs[ty * tile + tx] = B[(t * tile + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < tile; ++k)
            sum = fmaf(As[ty * tile + k], Bs[k * tile + tx], sum);
        __syncthreads();
    }
    C[row * N + col] = sum;
}
