// Warp tiling with double buffering: sgemm_warptile with the software pipelining of lesson 06
// (lesson 08). C (M x N) = A (M x K) * B (K x N), row-major, any M, N, K >= 1.
// Launch: block ((BM / WM) * (BN / WN) * 32, 1, 1), grid (ceil(N / BN), ceil(M / BM)).
//
// The tiles, the lanes' layout and the edges are those of sgemm_warptile (read it first).
// What changes is the order of the work in the tile loop. There, a block loads a tile, waits,
// computes, waits, and while it waits for global memory its FMA units idle (unless another
// block on the SM has work). Here each thread first issues the global loads of the NEXT tile
// into registers (ra, rb), then computes on the current tile from shared memory while those
// loads are in flight, and only then stores them into the other shared buffer. The loads'
// latency hides behind BK steps of FMAs.
//
// Shared memory: two buffers of each tile, 2 x BK x (BM + APAD + BN) x 4 bytes. One
// __syncthreads() per tile is enough, as in sgemm_tiled_db: step t reads buffer t % 2 and
// writes buffer (t + 1) % 2, which was last read in step t - 1, before the barrier that ends it.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 12
#endif
#ifndef WM
#define WM 32
#endif
#ifndef WN
#define WN 128
#endif
#ifndef WMITER
#define WMITER 2
#endif
#ifndef WNITER
#define WNITER 2
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 4
#endif
#ifndef APAD
#define APAD 4
#endif
#define NTHREADS ((BM / WM) * (BN / WN) * 32)
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
#define RM (WMITER * TM)            // rows of C per lane
#define RN (WNITER * TN)            // columns of C per lane
#define A_LOADS ((BM * BK / 4 + NTHREADS - 1) / NTHREADS)   // float4 of A per thread and tile
#define B_LOADS ((BK * BN / 4 + NTHREADS - 1) / NTHREADS)   // float4 of B per thread and tile

#if BM % WM || BN % WN || WM % WMITER || WN % WNITER || WSUBM % TM || WSUBN % TN
#error "sgemm_warptile_db: WM must divide BM, WN divide BN, WMITER divide WM, WNITER divide WN, TM divide WM / WMITER, TN divide WN / WNITER"
#endif
#if (WSUBM / TM) * (WSUBN / TN) != 32
#error "sgemm_warptile_db: a warp step must hold 32 lanes: (WM / WMITER / TM) * (WN / WNITER / TN) == 32"
#endif
#if BK % 4 || BN % 4 || TM % 4 || TN % 4 || APAD % 4
#error "sgemm_warptile_db needs BK, BN, TM, TN and APAD multiples of 4 (float4 accesses)"
#endif

// Four consecutive floats row[col..col+3] of a row with `ncols` columns; those past the end
// read as 0. One 16-byte load when `vec` (the row length is a multiple of 4) and all four
// are inside the row.
__device__ float4 load4(const float* row, int col, int ncols, bool vec)
{
    if (vec && col + 3 < ncols)
        return *(const float4*)&row[col];
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (col < ncols) v.x = row[col];
    if (col + 1 < ncols) v.y = row[col + 1];
    if (col + 2 < ncols) v.z = row[col + 2];
    if (col + 3 < ncols) v.w = row[col + 3];
    return v;
}

// Store v into row[col..col+3], skipping what lies past the row's `ncols` columns.
__device__ void store4(float* row, int col, int ncols, bool vec, float4 v)
{
    if (vec && col + 3 < ncols) {
        *(float4*)&row[col] = v;
        return;
    }
    if (col < ncols) row[col] = v.x;
    if (col + 1 < ncols) row[col + 1] = v.y;
    if (col + 2 < ncols) row[col + 2] = v.z;
    if (col + 3 < ncols) row[col + 3] = v.w;
}

__global__ void sgemmWarptileDB(int M, int N, int K, const float* __restrict__ A,
                                const float* __restrict__ B, float* __restrict__ C)
{
    __shared__ float As[2][BK][BM + APAD];   // As[buf][k][m] = A[rowBase + m][k0 + k]
    __shared__ float Bs[2][BK][BN];          // Bs[buf][k][n] = B[k0 + k][colBase + n]

    const int tid = threadIdx.x;
    const int rowBase = blockIdx.y * BM;
    const int colBase = blockIdx.x * BN;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int warpRow = (warp / (BN / WN)) * WM;
    const int warpCol = (warp % (BN / WN)) * WN;
    const int laneRow = (lane / (WSUBN / TN)) * TM;
    const int laneCol = (lane % (WSUBN / TN)) * TN;
    const bool vecA = K % 4 == 0;
    const bool vecB = N % 4 == 0;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    float acc[RM][RN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j)
            acc[i][j] = 0.0f;
    float a[RM];
    float b[RN];
    float4 ra[A_LOADS];     // the next tile, on its way from global memory to shared memory
    float4 rb[B_LOADS];

    // Fetch the tile that starts at column k0 of A and row k0 of B into ra, rb (0 past the edges).
#define FETCH(k0)                                                                 \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < A_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        ra[r] = zero;                                                             \
        if (i < BM * BK / 4 && rowBase + i / (BK / 4) < M)                        \
            ra[r] = load4(A + (rowBase + i / (BK / 4)) * K, (k0) + (i % (BK / 4)) * 4, K, vecA); \
    }                                                                             \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < B_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        rb[r] = zero;                                                             \
        if (i < BK * BN / 4 && (k0) + i / (BN / 4) < K)                           \
            rb[r] = load4(B + ((k0) + i / (BN / 4)) * N, colBase + (i % (BN / 4)) * 4, N, vecB); \
    }
    // Store ra, rb into shared buffer `buf`, the A tile transposed.
#define STASH(buf)                                                                \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < A_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        if (i < BM * BK / 4) {                                                    \
            int m = i / (BK / 4);                                                 \
            int kq = (i % (BK / 4)) * 4;                                          \
            As[buf][kq + 0][m] = ra[r].x;                                         \
            As[buf][kq + 1][m] = ra[r].y;                                         \
            As[buf][kq + 2][m] = ra[r].z;                                         \
            As[buf][kq + 3][m] = ra[r].w;                                         \
        }                                                                         \
    }                                                                             \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < B_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        if (i < BK * BN / 4)                                                      \
            *(float4*)&Bs[buf][i / (BN / 4)][(i % (BN / 4)) * 4] = rb[r];         \
    }

    FETCH(0)
    STASH(0)
    __syncthreads();

    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) {
            FETCH(k0 + BK)      // issued now, used after the FMAs below
        }
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < TM; i += 4) {
                    float4 v = *(const float4*)&As[buf][k][warpRow + wm * WSUBM + laneRow + i];
                    a[wm * TM + i] = v.x; a[wm * TM + i + 1] = v.y;
                    a[wm * TM + i + 2] = v.z; a[wm * TM + i + 3] = v.w;
                }
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    float4 v = *(const float4*)&Bs[buf][k][warpCol + wn * WSUBN + laneCol + j];
                    b[wn * TN + j] = v.x; b[wn * TN + j + 1] = v.y;
                    b[wn * TN + j + 2] = v.z; b[wn * TN + j + 3] = v.w;
                }
#pragma unroll
            for (int i = 0; i < RM; ++i)
#pragma unroll
                for (int j = 0; j < RN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        if (more) {
            STASH(buf ^ 1)
        }
        __syncthreads();
        buf ^= 1;
    }

#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            int row = rowBase + warpRow + wm * WSUBM + laneRow + i;
            if (row < M) {
#pragma unroll
                for (int j = 0; j < RN; j += 4) {
                    int wn = j / TN;
                    store4(C + row * N, colBase + warpCol + wn * WSUBN + laneCol + j % TN, N,
                           vecB, make_float4(acc[wm * TM + i][j], acc[wm * TM + i][j + 1],
                                             acc[wm * TM + i][j + 2], acc[wm * TM + i][j + 3]));
                }
            }
        }
}
