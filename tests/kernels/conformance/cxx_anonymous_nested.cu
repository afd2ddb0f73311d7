// Two kernels in anonymous namespaces, one of them nested in a named namespace: with
// no_extern_c=True each keeps its C++ name (get_function("scaleBy") / "shiftBy").
namespace {
__global__ void scaleBy(float *x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}
}  // namespace

namespace vec {
namespace {
__global__ void shiftBy(float *x, float d, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += d;
}
}  // namespace
}  // namespace vec
