// Warp votes: each warp counts its positive elements with __ballot_sync and __popc, and
// records whether any / all of them are positive.
__global__ void warp_vote(const float *x, unsigned int *ballot, int *count, int *any, int *all)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool pos = x[i] > 0.0f;
    unsigned int b = __ballot_sync(0xffffffff, pos);
    int a = __any_sync(0xffffffff, pos);
    int l = __all_sync(0xffffffff, pos);
    if ((threadIdx.x & 31) == 0) {
        int w = i / 32;
        ballot[w] = b;
        count[w] = __popc(b);
        any[w] = a;
        all[w] = l;
    }
}
