// Sum reduction with warp shuffles: grid-stride accumulation, a __shfl_down_sync tree per
// warp, one shared slot per warp, the first warp reduces those, one atomicAdd per block.
#define FULL_MASK 0xffffffff

__inline__ __device__ float warpReduceSum(float val)
{
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        val += __shfl_down_sync(FULL_MASK, val, offset);
    return val;
}

__global__ void reduce_warp_shuffle(const float *in, float *out, int n)
{
    static __shared__ float shared[32];
    int lane = threadIdx.x % warpSize;
    int wid = threadIdx.x / warpSize;
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        sum += in[i];
    sum = warpReduceSum(sum);
    if (lane == 0) shared[wid] = sum;
    __syncthreads();
    sum = (threadIdx.x < blockDim.x / warpSize) ? shared[lane] : 0.0f;
    if (wid == 0) {
        sum = warpReduceSum(sum);
        if (threadIdx.x == 0) atomicAdd(out, sum);
    }
}
