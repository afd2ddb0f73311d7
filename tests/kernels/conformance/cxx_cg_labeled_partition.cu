// Warp-aggregated atomics by label (our own kernel, in the style of cuda-samples'
// warpAggregatedAtomicsCG): the active threads of a warp split by bucket with
// cg::labeled_partition; each group's first thread adds its size, and cg::reduce over a
// coalesced group gives every member its group's maximum.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void bucketCounts(const int *bucket, const int *value, int *counts, int *groupMax,
                             int *groupSize, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n || t % 5 == 4) return;                // leaves lanes out of the warp
    cg::coalesced_group active = cg::coalesced_threads();
    cg::coalesced_group same = cg::labeled_partition(active, bucket[t]);
    if (same.thread_rank() == 0) atomicAdd(&counts[bucket[t]], (int)same.size());
    groupMax[t] = cg::reduce(same, value[t], cg::greater<int>());
    groupSize[t] = same.size();
    cg::coalesced_group odd = cg::binary_partition(active, value[t] % 2 == 1);
    if (odd.thread_rank() == 0 && value[t] % 2 == 1) atomicAdd(&counts[3], (int)odd.size());
}
