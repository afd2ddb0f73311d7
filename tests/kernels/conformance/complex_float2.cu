// Complex multiply on float2 values (x = real, y = imaginary), with make_float2.
__device__ float2 cmul(float2 a, float2 b)
{
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__global__ void complex_float2(const float2 *a, const float2 *b, float2 *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float2 p = cmul(a[i], b[i]);
        c[i] = p;
    }
}
