// atomicMin/Max/Exch/CAS/Sub on global ints, and a CAS-based float maximum.
__device__ float atomicMaxFloat(float *addr, float value)
{
    int *p = (int *)addr;
    int old = *p, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= value) break;
        old = atomicCAS(p, assumed, __float_as_int(value));
    } while (assumed != old);
    return __int_as_float(old);
}

__global__ void atomics_misc(const int *v, const float *f, int *out, float *fmax_out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMin(&out[0], v[i]);
        atomicMax(&out[1], v[i]);
        atomicSub(&out[2], v[i]);
        atomicExch(&out[3], 7);
        atomicCAS(&out[4], 0, i + 1);
        atomicMaxFloat(fmax_out, f[i]);
    }
}
