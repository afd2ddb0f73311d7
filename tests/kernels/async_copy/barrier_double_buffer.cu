// Double buffering with two block-scope cuda::barriers whose pointers swap each tile.
// Thread t copies elements 4t..4t+3 of each tile (one 16-byte memcpy_async) and sums the
// tile's elements 4T-1-4t-c (another thread's copy): out[4t+c] = sum over tiles.
#include <cuda/barrier>
#include <cooperative_groups.h>

namespace {
template <typename Bar>
__device__ void loadTile(float *dst, const float *src, Bar &bar) {
  cuda::memcpy_async(&dst[threadIdx.x * 4], &src[threadIdx.x * 4],
                     cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), bar);
}
}  // namespace

__global__ void sumReversedTiles(const float *x, float *out, int ntiles) {
  auto block = cooperative_groups::this_thread_block();
  __shared__ float buf[2][4 * 64];
  __shared__ cuda::barrier<cuda::thread_scope::thread_scope_block> front;
  __shared__ cuda::barrier<cuda::thread_scope::thread_scope_block> back;
  auto frontPtr = &front;
  auto backPtr = &back;
  if (block.thread_rank() == 0) {
    init(&front, block.size());
    init(&back, block.size());
  }
  __syncthreads();
  const int n = 4 * blockDim.x;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  loadTile(buf[0], x, *frontPtr);
  for (int t = 0; t < ntiles; ++t) {
    if (t + 1 < ntiles) loadTile(buf[(t + 1) % 2], x + (t + 1) * n, *backPtr);
    (*frontPtr).arrive_and_wait();
    for (int c = 0; c < 4; ++c) acc[c] += buf[t % 2][n - 1 - (4 * threadIdx.x + c)];
    auto tmp = frontPtr;
    frontPtr = backPtr;
    backPtr = tmp;
    __syncthreads();
  }
  for (int c = 0; c < 4; ++c) out[4 * threadIdx.x + c] = acc[c];
}
