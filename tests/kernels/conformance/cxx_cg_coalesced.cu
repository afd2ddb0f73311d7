// Warp-aggregated atomics with cg::coalesced_threads(), as cuda-samples'
// warpAggregatedAtomicsCG filters an array: the active threads elect a leader, which does
// one atomicAdd for all of them, and the result is shuffled back.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

__device__ int reserveSlot(int *counter) {
    cg::coalesced_group active = cg::coalesced_threads();
    int first = 0;
    if (active.thread_rank() == 0) {
        first = atomicAdd(counter, active.size());
    }
    first = active.shfl(first, 0);
    return first + active.thread_rank();
}

__global__ void keepNegatives(const int *src, int *dst, int *count, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (src[i] < 0) {
            dst[reserveSlot(count)] = src[i];
        }
    }
}
