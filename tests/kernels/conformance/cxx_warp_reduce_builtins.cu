// The sm_80 warp-reduce intrinsics: cuda-samples' reduction specialises warpReduceSum<int>
// with __reduce_add_sync under `#if __CUDA_ARCH__ >= 800`, so every kernel of that file
// needs it once __CUDA_ARCH__ says sm_90.

__global__ void warpReductions(const int *x, int *sums, unsigned *mins, unsigned *maxs) {
    const int v = x[blockIdx.x * blockDim.x + threadIdx.x];
    const unsigned full = 0xffffffff;
    int total = __reduce_add_sync(full, v);
    unsigned lo = __reduce_min_sync(full, (unsigned)(v + 1000));
    unsigned hi = __reduce_max_sync(full, (unsigned)(v + 1000));
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (threadIdx.x % 32 == 0) {
        sums[warp] = total;
        mins[warp] = lo;
        maxs[warp] = hi;
    }
}
