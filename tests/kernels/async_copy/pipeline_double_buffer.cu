// The <cuda_pipeline.h> primitives: BYTES-byte copies (4, 8 or 16) of each thread's own
// part of a tile, one batch per tile, two stages: copy tile t+1 while summing tile t.
// out[i] = sum over tiles of tile[n - 1 - i] (another thread's copy, after __syncthreads).
// FORGET_WAIT drops the wait; PRIOR=2 waits for one batch too few.
#include <cuda_pipeline.h>

#ifndef BYTES
#define BYTES 16
#endif
#define PER (BYTES / 4)
#ifndef PRIOR
#define PRIOR 1
#endif

__global__ void pipelineSum(const float *x, float *out, int ntiles) {
  __shared__ float buf[2][PER * 128];
  const int n = PER * blockDim.x;
  __pipeline_memcpy_async(&buf[0][threadIdx.x * PER], &x[threadIdx.x * PER], BYTES);
  __pipeline_commit();
  float acc[PER];
  for (int c = 0; c < PER; ++c) acc[c] = 0.0f;
  for (int t = 0; t < ntiles; ++t) {
    if (t + 1 < ntiles)
      __pipeline_memcpy_async(&buf[(t + 1) % 2][threadIdx.x * PER],
                              &x[(t + 1) * n + threadIdx.x * PER], BYTES);
    __pipeline_commit();
#ifndef FORGET_WAIT
    __pipeline_wait_prior(PRIOR);
#endif
    __syncthreads();
    for (int c = 0; c < PER; ++c) acc[c] += buf[t % 2][n - 1 - (threadIdx.x * PER + c)];
    __syncthreads();
  }
  for (int c = 0; c < PER; ++c) out[threadIdx.x * PER + c] = acc[c];
}
