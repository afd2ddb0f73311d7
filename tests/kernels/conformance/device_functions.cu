// __device__ functions returning values and pointers, with early returns, a function-like
// macro, ?:, a do-while, continue, break and a switch.
#define SQUARE(v) ((v) * (v))
#define CLAMP(v, lo, hi) ((v) < (lo) ? (lo) : ((v) > (hi) ? (hi) : (v)))

__device__ int collatz_steps(int n, int limit)
{
    int steps = 0;
    if (n <= 1) return 0;
    do {
        if (n % 2 == 0) { n /= 2; }
        else { n = 3 * n + 1; }
        steps++;
        if (steps >= limit) break;
    } while (n != 1);
    return steps;
}

__device__ const float *row_ptr(const float *base, int row, int cols)
{
    return base + row * cols;
}

__device__ float classify(int k)
{
    float r;
    switch (k & 3) {
    case 0: r = 1.0f; break;
    case 1:
    case 2: r = 2.0f; break;
    default: r = -1.0f;
    }
    return r;
}

__global__ void device_functions(const int *n, int *steps, const float *m, float *rowsum,
                                 float *cls, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    steps[i] = collatz_steps(n[i], 200);
    const float *r = row_ptr(m, i, cols);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) {
        float v = r[c];
        if (v < 0.0f) continue;
        s += SQUARE(v);
    }
    rowsum[i] = CLAMP(s, 0.0f, 10.0f);
    cls[i] = classify(i) + (i > 5 ? 0.5f : 0.25f);
}
