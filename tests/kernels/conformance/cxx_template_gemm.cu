// Function templates as SGEMM_CUDA writes them: non-type (const uint) and type parameters,
// __launch_bounds__ of a template parameter, constexpr and static_assert inside, a helper
// template whose arguments are deduced, and explicit instantiations to look up by name.

template <typename T>
__device__ T multiplyAdd(T a, T b, T acc) {
    return acc + a * b;
}

template <const uint TILE, typename T>
__global__ void __launch_bounds__(TILE * TILE)
    tiledGemm(int n, const T *A, const T *B, T *C) {
    static_assert(TILE % 4 == 0, "TILE must be a multiple of 4");
    constexpr uint TILE_ELEMS = TILE * TILE;
    __shared__ T As[TILE_ELEMS];
    __shared__ T Bs[TILE_ELEMS];

    const uint tx = threadIdx.x % TILE;
    const uint ty = threadIdx.x / TILE;
    const uint row = blockIdx.y * TILE + ty;
    const uint col = blockIdx.x * TILE + tx;

    T acc = 0;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        As[ty * TILE + tx] = A[row * n + k0 + tx];
        Bs[ty * TILE + tx] = B[(k0 + ty) * n + col];
        __syncthreads();
        for (uint k = 0; k < TILE; ++k) {
            acc = multiplyAdd(As[ty * TILE + k], Bs[k * TILE + tx], acc);
        }
        __syncthreads();
    }
    C[row * n + col] = acc;
}

template __global__ void tiledGemm<16, float>(int, const float *, const float *, float *);
template __global__ void tiledGemm<8, float>(int, const float *, const float *, float *);
