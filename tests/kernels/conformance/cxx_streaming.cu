// The streaming cache hints llm.c uses: __ldcs loads and __stcs stores, and the
// __restrict__ pointers they come with.

__global__ void scaleStreaming(float *__restrict__ out, const float *__restrict__ in,
                               float scale, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __stcs(out + i, scale * __ldcs(in + i));
    }
}
