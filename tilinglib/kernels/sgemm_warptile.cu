// Warp tiling: the vec4 kernel with one more level of tiles, the warp's (lesson 08).
// C (M x N) = A (M x K) * B (K x N), row-major, any M, N, K >= 1.
// Launch: block ((BM / WM) * (BN / WN) * 32, 1, 1), grid (ceil(N / BN), ceil(M / BM)).
//
// Three levels of tiles. A block computes a BM x BN tile of C through shared memory, as
// before. Each of its warps owns a WM x WN sub-tile of that, and sweeps it in WMITER x WNITER
// steps of WSUBM x WSUBN (WSUBM = WM / WMITER, WSUBN = WN / WNITER). Within one step the warp's
// 32 lanes form a (WSUBM / TM) x (WSUBN / TN) grid and each lane computes TM x TN outputs;
// over all the steps a lane holds (WMITER * TM) x (WNITER * TN) accumulators in registers.
//
// Why: the values a lane reads from shared memory for one k, WMITER * TM of A and WNITER * TN
// of B, feed (WMITER * TM) * (WNITER * TN) FMAs, and the lanes of a warp read few, adjacent
// addresses: for A, (WSUBM / TM) float4 runs shared by the lanes of a row (broadcast); for B,
// (WSUBN / TN) runs. With TM = TN = 4 every shared read is one conflict-free LDS.128.
// The warp, not the block, is the unit that issues instructions, so arranging the lanes of a
// warp into a compact rectangle is what keeps both its shared reads and its registers busy.
//
// Global loads are float4 and the A tile is stored transposed (As[k][m]), as in sgemm_vec4;
// APAD floats of padding at the end of each As row spread the transposed stores over the banks.
// Edges: loads past M, N or K read 0, stores past them are skipped, and a matrix whose rows are
// not a multiple of 4 long (K for A; N for B and C) is read and written one float at a time.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef WMITER
#define WMITER 1
#endif
#ifndef WNITER
#define WNITER 4
#endif
#ifndef TM
#define TM 4
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
#error "sgemm_warptile: WM must divide BM, WN divide BN, WMITER divide WM, WNITER divide WN, TM divide WM / WMITER, TN divide WN / WNITER"
#endif
#if (WSUBM / TM) * (WSUBN / TN) != 32
#error "sgemm_warptile: a warp step must hold 32 lanes: (WM / WMITER / TM) * (WN / WNITER / TN) == 32"
#endif
#if BK % 4 || BN % 4 || TM % 4 || TN % 4 || APAD % 4
#error "sgemm_warptile needs BK, BN, TM, TN and APAD multiples of 4 (float4 accesses)"
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

__global__ void sgemmWarptile(int M, int N, int K, const float* __restrict__ A,
                              const float* __restrict__ B, float* __restrict__ C)
{
    __shared__ float As[BK][BM + APAD];   // transposed: As[k][m] = A[rowBase + m][k0 + k]
    __shared__ float Bs[BK][BN];          // Bs[k][n] = B[k0 + k][colBase + n]

    const int tid = threadIdx.x;
    const int rowBase = blockIdx.y * BM;
    const int colBase = blockIdx.x * BN;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int warpRow = (warp / (BN / WN)) * WM;      // the warp's sub-tile, in the block's tile
    const int warpCol = (warp % (BN / WN)) * WN;
    const int laneRow = (lane / (WSUBN / TN)) * TM;   // the lane's TM x TN, in one warp step
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

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int r = 0; r < A_LOADS; ++r) {
            int i = tid + r * NTHREADS;       // which float4 of the A tile: row m, columns kq..
            int m = i / (BK / 4);
            int kq = (i % (BK / 4)) * 4;
            if (i < BM * BK / 4) {
                float4 v = zero;
                if (rowBase + m < M)
                    v = load4(A + (rowBase + m) * K, k0 + kq, K, vecA);
                As[kq + 0][m] = v.x;
                As[kq + 1][m] = v.y;
                As[kq + 2][m] = v.z;
                As[kq + 3][m] = v.w;
            }
        }
#pragma unroll
        for (int r = 0; r < B_LOADS; ++r) {
            int i = tid + r * NTHREADS;       // row k, columns nq.. of the B tile
            int k = i / (BN / 4);
            int nq = (i % (BN / 4)) * 4;
            if (i < BK * BN / 4) {
                float4 v = zero;
                if (k0 + k < K)
                    v = load4(B + (k0 + k) * N, colBase + nq, N, vecB);
                *(float4*)&Bs[k][nq] = v;
            }
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            // This lane's A values for every warp step down, then its B values for every step
            // across: RM + RN registers, read as float4, that feed RM x RN FMAs.
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < TM; i += 4) {
                    float4 v = *(const float4*)&As[k][warpRow + wm * WSUBM + laneRow + i];
                    a[wm * TM + i] = v.x; a[wm * TM + i + 1] = v.y;
                    a[wm * TM + i + 2] = v.z; a[wm * TM + i + 3] = v.w;
                }
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    float4 v = *(const float4*)&Bs[k][warpCol + wn * WSUBN + laneCol + j];
                    b[wn * TN + j] = v.x; b[wn * TN + j + 1] = v.y;
                    b[wn * TN + j + 2] = v.z; b[wn * TN + j + 3] = v.w;
                }
#pragma unroll
            for (int i = 0; i < RM; ++i)
#pragma unroll
                for (int j = 0; j < RN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

    // acc[wm * TM + i][wn * TN + j] is C at row warpRow + wm * WSUBM + laneRow + i and
    // column warpCol + wn * WSUBN + laneCol + j of the block's tile.
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
