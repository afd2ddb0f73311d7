// cg::reduce over a warp tile with cg::plus, as llm.c's layernorm kernels use it: one warp
// per row computes the row's sum.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

__global__ void rowSums(const float *x, float *sums, int rows, int cols) {
    namespace cg = cooperative_groups;
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (row >= rows) {
        return;
    }
    float partial = 0.0f;
    for (int c = warp.thread_rank(); c < cols; c += warp.size()) {
        partial += x[row * cols + c];
    }
    float total = cg::reduce(warp, partial, cg::plus<float>{});
    if (warp.thread_rank() == 0) {
        sums[row] = total;
    }
}
