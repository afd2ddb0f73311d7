// A namespace of templated __device__ helpers called as ns::f<...>(...), as SGEMM_CUDA's
// warptiling kernel does, an anonymous namespace, and a ::-qualified global function.

__device__ float twice(float v) { return 2.0f * v; }

namespace rows {
template <int WIDTH>
__device__ float sumRow(const float *row) {
    float s = 0.0f;
    for (int i = 0; i < WIDTH; ++i) {
        s += row[i];
    }
    return s;
}

template <int WIDTH, int HEIGHT>
__device__ void sumRows(const float *tile, float *out) {
    for (int r = 0; r < HEIGHT; ++r) {
        out[r] = ::twice(sumRow<WIDTH>(tile + r * WIDTH));
    }
}
} // namespace rows

namespace {
__device__ int blockOffset(int perThread) { return (blockIdx.x * blockDim.x + threadIdx.x) * perThread; }
} // namespace

__global__ void rowSumsOfTiles(const float *tiles, float *out) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    rows::sumRows<4, 3>(tiles + blockOffset(12), out + t * 3);
}
