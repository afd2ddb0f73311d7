// A C++ default argument on a kernel parameter and on a __device__ function, and NULL
// (cuda-samples' shfl_scan writes `int *partial_sums = NULL`).

__device__ int shiftedLane(int lane, int delta, int width = 32) {
    return (lane + delta) % width;
}

__global__ void laneRotate(const int *in, int *out, int n, int *blockFirst = NULL) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % 32;
    if (i < n) {
        out[i] = in[blockIdx.x * blockDim.x + (threadIdx.x - lane) + shiftedLane(lane, 1)];
    }
    if (blockFirst != NULL && threadIdx.x == 0) {
        blockFirst[blockIdx.x] = in[i];
    }
}
