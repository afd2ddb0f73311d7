// cooperative_groups::memcpy_async: the block copies N floats together, then
// cooperative_groups::wait; each thread writes reversed elements back. With BARRIER, the
// same copy through cuda::memcpy_async(block, ..., bar) and bar.arrive_and_wait().
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
namespace cg = cooperative_groups;

#ifndef N
#define N 256
#endif

__global__ void blockCopyReverse(const float *in, float *out) {
  __shared__ float s[N];
  cg::thread_block block = cg::this_thread_block();
#ifdef BARRIER
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  cuda::memcpy_async(block, s, in + blockIdx.x * N, sizeof(float) * N, bar);
  bar.arrive_and_wait();
#elif defined(ALIGNED)
  cg::memcpy_async(block, s, in + blockIdx.x * N, cuda::aligned_size_t<16>(sizeof(float) * N));
  cg::wait(block);
#else
  cg::memcpy_async(block, s, in + blockIdx.x * N, sizeof(float) * N);
  cg::wait(block);
#endif
  for (int i = block.thread_rank(); i < N; i += block.size())
    out[blockIdx.x * N + i] = s[N - 1 - i];
}
