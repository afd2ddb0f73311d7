// 1-D convolution with the filter in __constant__ memory (initialised in the source);
// zero padding outside the input.
#define MASK_WIDTH 5
__constant__ float M[MASK_WIDTH] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};

__global__ void conv1d_constant(const float *N, float *P, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= width) return;
    float pvalue = 0;
    int start = i - (MASK_WIDTH / 2);
    #pragma unroll
    for (int j = 0; j < MASK_WIDTH; j++) {
        if (start + j >= 0 && start + j < width) {
            pvalue += N[start + j] * M[j];
        }
    }
    P[i] = pvalue;
}
