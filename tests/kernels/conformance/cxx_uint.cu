// glibc's `uint`, which nvcc's headers bring in, used without any include of our own:
// 32-bit unsigned arithmetic that wraps, as the SGEMM_CUDA kernels index with it.

__global__ void hashIndices(const uint *keys, uint *hashes, int n) {
    const uint i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        uint h = keys[i] * 2654435761u;
        h ^= h >> 13;
        hashes[i] = h + i;
    }
}
