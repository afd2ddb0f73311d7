// Privatised histogram: each block counts into shared memory with shared atomics, then
// adds its counts to the global histogram.
#define NBINS 64
__global__ void histogram_shared(const int *data, int n, unsigned int *hist)
{
    __shared__ unsigned int local[NBINS];
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int bin = data[i] % NBINS;
        if (bin < 0) bin += NBINS;
        atomicAdd(&local[bin], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x) {
        unsigned int count = local[b];
        if (count > 0)
            atomicAdd(&hist[b], count);
    }
}
