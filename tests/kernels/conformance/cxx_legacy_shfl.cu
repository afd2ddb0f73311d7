// The shuffle of CUDA 8 and before, without a mask (the 2014 blog post on reductions).
// nvcc for sm_70 and later no longer declares it: a compile error, pointing here.

__inline__ __device__ int warpSum(int val) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        val += __shfl_down(val, offset);
    return val;
}

__global__ void sumWarps(const int *in, int *out) {
    int s = warpSum(in[threadIdx.x]);
    if (threadIdx.x % 32 == 0)
        out[threadIdx.x / 32] = s;
}
