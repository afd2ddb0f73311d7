// A class template over dynamic shared memory with a conversion operator and a method,
// specialised for double, used from a template kernel (cuda-samples' SharedMemory<T>).

template <class T> struct DynamicShared {
    __device__ inline operator T *() {
        extern __shared__ int rawWords[];
        return (T *)rawWords;
    }
    __device__ inline T *pointer() {
        extern __shared__ int rawWords[];
        return (T *)rawWords;
    }
};

template <> struct DynamicShared<double> {
    __device__ inline operator double *() {
        extern __shared__ double rawDoubles[];
        return (double *)rawDoubles;
    }
    __device__ inline double *pointer() {
        extern __shared__ double rawDoubles[];
        return (double *)rawDoubles;
    }
};

template <class T> __global__ void neighbourSum(const T *in, T *out) {
    T *s = DynamicShared<T>();
    DynamicShared<T> again;
    const unsigned int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    T *same = again.pointer();
    out[blockIdx.x * blockDim.x + t] = same[t] + same[(t + 1) % blockDim.x];
}

template __global__ void neighbourSum<float>(const float *, float *);
template __global__ void neighbourSum<double>(const double *, double *);
