// The transpose of lesson 05: one thread per element of a 32x32 tile, T[ty][tx] = ...;
// ... = T[tx][ty]. -DPAD=1 pads each row to 33 floats.
#ifndef PAD
#define PAD 0
#endif
__global__ void transpose_square(int n, const float *in, float *out)
{
    __shared__ float T[32][32 + PAD];
    int tx = threadIdx.x, ty = threadIdx.y;
    T[ty][tx] = in[(blockIdx.y * 32 + ty) * n + blockIdx.x * 32 + tx];
    __syncthreads();
    out[(blockIdx.x * 32 + ty) * n + blockIdx.y * 32 + tx] = T[tx][ty];
}
