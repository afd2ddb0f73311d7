// 2-D five-point Jacobi step on a W x H grid through a shared tile with a one-cell halo;
// boundary cells copy through unchanged.
#define BX 16
#define BY 16

__global__ void stencil_2d(const float *u, float *v, int W, int H)
{
    __shared__ float s[BY + 2][BX + 2];
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    int sx = threadIdx.x + 1, sy = threadIdx.y + 1;
    bool inside = x < W && y < H;
    s[sy][sx] = inside ? u[y * W + x] : 0.0f;
    if (threadIdx.x == 0)      s[sy][0]      = (x > 0 && y < H) ? u[y * W + x - 1] : 0.0f;
    if (threadIdx.x == BX - 1) s[sy][BX + 1] = (x + 1 < W && y < H) ? u[y * W + x + 1] : 0.0f;
    if (threadIdx.y == 0)      s[0][sx]      = (y > 0 && x < W) ? u[(y - 1) * W + x] : 0.0f;
    if (threadIdx.y == BY - 1) s[BY + 1][sx] = (y + 1 < H && x < W) ? u[(y + 1) * W + x] : 0.0f;
    __syncthreads();
    if (!inside) return;
    if (x == 0 || y == 0 || x == W - 1 || y == H - 1) {
        v[y * W + x] = s[sy][sx];
    } else {
        v[y * W + x] = 0.25f * (s[sy][sx - 1] + s[sy][sx + 1] + s[sy - 1][sx] + s[sy + 1][sx]);
    }
}
