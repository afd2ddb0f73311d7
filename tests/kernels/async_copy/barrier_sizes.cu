// cuda::memcpy_async with a plain byte count (SIZE bytes from float pointers) and with
// cuda::aligned_size_t<ALIGN>; each thread copies its own ELEMS floats, then the block
// reads them back reversed.
#include <cuda/barrier>

#ifndef ELEMS
#define ELEMS 3
#endif

__global__ void copyReverse(const float *in, float *out) {
  __shared__ float s[ELEMS * 64];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  const int nthreads = blockDim.x * blockDim.y * blockDim.z;
  if (threadIdx.x == 0) init(&bar, nthreads);
  __syncthreads();
  const float *src = in + blockIdx.x * ELEMS * blockDim.x + threadIdx.x * ELEMS;
#ifdef ALIGN
  cuda::memcpy_async(&s[threadIdx.x * ELEMS], src, cuda::aligned_size_t<ALIGN>(sizeof(float) * ELEMS), bar);
#else
  cuda::memcpy_async(&s[threadIdx.x * ELEMS], src, sizeof(float) * ELEMS, bar);
#endif
  bar.arrive_and_wait();
  const int n = ELEMS * blockDim.x;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    out[blockIdx.x * n + i] = s[n - 1 - i];
}
