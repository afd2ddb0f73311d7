// Warp tiles of cooperative groups: tiled_partition<32>, the tile's shuffles, its rank,
// and meta_group_rank/meta_group_size to number the warps of a block.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

__global__ void warpSums(const float *x, float *perWarp, int *warpCount) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);

    float v = x[blockIdx.x * blockDim.x + threadIdx.x];
    for (int offset = warp.size() / 2; offset > 0; offset /= 2) {
        v += warp.shfl_down(v, offset);
    }
    if (warp.thread_rank() == 0) {
        perWarp[blockIdx.x * warp.meta_group_size() + warp.meta_group_rank()] = v;
    }
    if (block.thread_rank() == 0) {
        warpCount[blockIdx.x] = warp.meta_group_size();
    }
}
