// References to locals passed to __device__ functions, as cuda-samples' reductions pass a
// tile (`Group &threads`) and real code swaps or accumulates through `T &`: a scalar, a
// struct and a cooperative group, read and written by the callee, and two references
// bound to one local (they alias, as in C++).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

struct MinMax {
    float lo, hi;
};

__device__ void inc(int &x) { x++; }

template <typename T> __device__ void swapValues(T &a, T &b) {
    T t = a;
    a = b;
    b = t;
}

__device__ void widen(MinMax &m, float v) {
    m.lo = fminf(m.lo, v);
    m.hi = fmaxf(m.hi, v);
}

template <typename T, typename Group> __device__ T groupSum(T in, Group &threads) {
    return cg::reduce(threads, in, cg::plus<T>());
}

__device__ int writeBoth(int &a, int &b) {
    a = 1;
    b = 2;
    return a;                  // 2 when a and b name one variable
}

__global__ void referenceParams(const float *x, const float *y, int n, float *outX,
                                float *outY, float *ranges, float *warpSums, int *counts,
                                int *aliased) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = x[i], b = y[i];
    if (a > b) {
        swapValues(a, b);      // a <= b after this
    }
    outX[i] = a;
    outY[i] = b;

    MinMax m = {a, a};
    widen(m, b);
    widen(m, a * 0.5f);
    ranges[2 * i] = m.lo;
    ranges[2 * i + 1] = m.hi;

    int count = 0;
    for (int k = 0; k < n; k++) {
        if (x[(i + k) % n] > 0.0f) {
            inc(count);
        }
    }
    int &alias = count;
    alias += 1000;
    counts[i] = count;

    float s = groupSum(a + b, warp);
    if (warp.thread_rank() == 0) {
        warpSums[i / 32] = s;
    }
    int one = 0, two = 0;
    aliased[3 * i] = writeBoth(one, one);
    aliased[3 * i + 1] = writeBoth(one, two);
    aliased[3 * i + 2] = one * 10 + two;
}
