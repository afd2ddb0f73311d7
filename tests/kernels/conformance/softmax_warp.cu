// Online softmax, one warp per row: running max and sum combined with __shfl_xor_sync
// butterflies; uses __expf and __fdividef.
#include <float.h>
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__global__ void softmax_warp(const float *__restrict__ x, float *__restrict__ y,
                             int rows, int cols)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (warp >= rows) return;
    const float *xr = x + (size_t)warp * cols;
    float m = -FLT_MAX;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    m = warp_max(m);
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) s += __expf(xr[c] - m);
    s = warp_sum(s);
    for (int c = lane; c < cols; c += 32)
        y[(size_t)warp * cols + c] = __fdividef(__expf(xr[c] - m), s);
}
