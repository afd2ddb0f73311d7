// nvcc's predefined macros and an explicit specialisation of a function template chosen
// under __CUDA_ARCH__, as cuda-samples' reduction does for int on sm_80 and later.
#ifdef __CUDACC__

template <class T> __device__ T scaleBy(T v) { return v * 2; }

#if __CUDA_ARCH__ >= 800
template <> __device__ int scaleBy<int>(int v) { return v * 3; }
#endif

__global__ void archProbe(const int *in, int *out, int *flags) {
    const int i = threadIdx.x;
    out[i] = scaleBy<int>(in[i]);
    if (i == 0) {
#if defined(__NVCC__)
        flags[0] = 1;
#endif
        flags[1] = __CUDA_ARCH__;
    }
}

#endif
