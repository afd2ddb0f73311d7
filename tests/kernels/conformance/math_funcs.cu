// The single-precision math library a course uses, element by element.
__global__ void math_funcs(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    float a = fabsf(v) + 1.0f;
    y[10 * i + 0] = sqrtf(a);
    y[10 * i + 1] = rsqrtf(a);
    y[10 * i + 2] = expf(-a);
    y[10 * i + 3] = logf(a);
    y[10 * i + 4] = fminf(v, 0.5f);
    y[10 * i + 5] = fmaxf(v, -0.5f);
    y[10 * i + 6] = fmaf(v, 2.0f, 1.0f);
    y[10 * i + 7] = __fdividef(v, a);
    y[10 * i + 8] = (float)min(i, 3) + (float)max(-i, -2);
    y[10 * i + 9] = tanhf(v) + floorf(v) + powf(a, 1.5f);
}
