// Histogram of bytes with global atomics: one atomicAdd per input element.
__global__ void histogram_global(const unsigned char *data, unsigned int *hist, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)blockDim.x * gridDim.x;
    while (i < n) {
        atomicAdd(&hist[data[i]], 1);
        i += stride;
    }
}
