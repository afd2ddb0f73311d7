// A split barrier: each thread issues its copy, arrives, computes on registers and
// global memory only, then waits for the phase and reads another thread's element.
// With SHARED_IN_BETWEEN the thread also writes shared memory between arrive and wait.
#include <cuda/barrier>
#include <utility>
__global__ void splitPhase(const float *in, float *out) {
  __shared__ float s[64];
  __shared__ float t[64];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  in += blockIdx.x * 64; out += blockIdx.x * 64;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  cuda::memcpy_async(&s[threadIdx.x], &in[threadIdx.x], sizeof(float), bar);
  cuda::barrier<cuda::thread_scope_block>::arrival_token token = bar.arrive();
  float mine = in[threadIdx.x] * 3.0f;
#ifdef SHARED_IN_BETWEEN
  t[threadIdx.x] = mine;
#endif
  bar.wait(std::move(token));
  out[threadIdx.x] = s[63 - threadIdx.x] + mine;
}
