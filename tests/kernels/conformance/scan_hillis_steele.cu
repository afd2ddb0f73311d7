// Inclusive scan of one block (Hillis-Steele), double-buffered in shared memory.
#define N_MAX 256
__global__ void scan_hillis_steele(const float *in, float *out, int n)
{
    __shared__ float temp[2][N_MAX];
    int tid = threadIdx.x;
    int pout = 0, pin = 1;
    temp[pout][tid] = (tid < n) ? in[tid] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < n; offset <<= 1) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (tid >= offset)
            temp[pout][tid] = temp[pin][tid] + temp[pin][tid - offset];
        else
            temp[pout][tid] = temp[pin][tid];
        __syncthreads();
    }
    if (tid < n) out[tid] = temp[pout][tid];
}
