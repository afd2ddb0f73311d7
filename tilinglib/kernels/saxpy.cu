// SAXPY: y = a * x + y for n floats, one thread per element.
// Launch: block (256, 1, 1), grid tl.grid_for(n, 256).
// 2 FLOP against 12 bytes (read x, read y, write y): 0.17 FLOP per byte and no element
// used twice, so there is nothing for shared memory to reuse (lesson 06).
__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
