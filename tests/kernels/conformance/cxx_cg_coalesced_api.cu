// Every member of cg::coalesced_group on a divergent warp: the threads whose key is odd
// form the group at the call (the lanes of __activemask()), ranked in lane order.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

__device__ void describe(cg::coalesced_group g, int value, int *out) {
    out[0] = g.thread_rank();
    out[1] = g.size();
    out[2] = g.shfl(value, 2);             // the member of rank 2 (every group has 3+)
    out[3] = g.shfl_down(value, 1);        // the next member's value; the last keeps its own
    out[4] = g.shfl_up(value, 3);          // three members back; the first three keep their own
    out[5] = g.ballot(value % 3 == 0);     // bit r: the member of rank r has value % 3 == 0
    out[6] = g.any(value > 90);
    out[7] = g.all(value > -1000);
    out[8] = g.meta_group_rank() * 100 + g.meta_group_size();
    g.sync();
}

__global__ void oddKeysGroup(const int *keys, const int *values, int *out, unsigned int *masks) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    masks[i] = 0;
    if (keys[i] & 1) {
        masks[i] = __activemask();
        describe(cg::coalesced_threads(), values[i], out + 9 * i);
    }
}
