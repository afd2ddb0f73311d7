// The tuned kernel: sgemm_warptile_db plus the last steps toward cuBLAS (lesson 08, section 8).
// C (M x N) = A (M x K) * B (K x N), row-major, any M, N, K >= 1.
// Launch: block ((BM / WM) * (BN / WN) * 32, 1, 1), grid (ceil(N / BN), ceil(M / BM), SPLITK);
// with TAILWAVE=w, a 1-D grid of W + (T - W) * SPLITK blocks, T = ceil(N / BN) * ceil(M / BM)
// tiles and W = T rounded down to a multiple of w.
// With SPLITK > 1 the blocks ADD into C (atomicAdd): C must hold zeros before the launch
// (pass it as InOut of a zeroed array).
//
// The tiles, the lanes' layout, the edges and the double-buffered shared tiles are those of
// sgemm_warptile_db (read it first). Each addition below is a -D switch, so that each can be
// measured alone:
//
// FRAGDB=1  register double buffering of the fragments: while the FMAs of step k run on
//           a[k % 2], b[k % 2], the shared loads of step k + 1 fill the other pair, so an
//           LDS's latency hides behind RM x RN FMAs instead of stalling the next ones.
// SWIZZLE=1 the transposed A tile without padding: column m of row k is stored at
//           m ^ ((k / 4) * (128 / BK)), an XOR of a multiple of 4 below 32. Within a row it is
//           a permutation of whole float4 slots (the float4 reads stay aligned and meet the
//           same banks as before: no conflict), and the lanes that copy one row of A into
//           rows k, k + 4, ... of the tile now write to different banks (with APAD = 0 and
//           no swizzle they collide). Needs BK in {4, 8, 16, 32} and BM a multiple of 32.
// SPLITK=s  the K range split into s chunks of whole BK tiles, one per blockIdx.z: s times
//           the blocks for the same C, each doing 1/s of the FMAs, for sizes whose M x N grid
//           cannot fill the GPU. The partial sums are added into C with atomicAdd.
// TAILWAVE=w with SPLITK=s: split-K for the tail only. The tiles that fill whole waves of
//           w blocks (w = SMs x blocks per SM: 132 on the H200 at one block per SM) run one
//           block each over all of K and store C as usual; the T - W tiles of the last,
//           partial wave are split s ways, so that the tail's s (T - W) blocks of 1/s of the
//           work keep more SMs busy than T - W whole tiles would.
// GSWZ=g    grouped block order: consecutive blocks (in launch order) walk down g block rows
//           before moving right, so the blocks resident together share rows of A and columns
//           of B in the L2 cache. GSWZ=1 is the plain row-major order.
// MINB=b    __launch_bounds__(threads, b): ptxas keeps registers per thread within
//           65,536 / (b x threads), so that b blocks fit on an SM (it spills if it must).
// FAST=1    blocks whose tile lies inside A, B and C (and row lengths multiples of 4) fetch
//           every full K tile without the edge tests: one 16-byte load per float4, no
//           compare, branch or zero fill (a block-uniform test per tile picks the path; the
//           edge blocks and a chunk's last, partial tile take the tested path above).
// PINGPONG=1 the tile loop unrolled by two, one tile on each shared buffer: the buffer of
//           each half is a constant, and so are the shared addresses of its loads and
//           stores (no per-tile address arithmetic); twice the loop's code.
// ASYNC=1   the B tile copied global -> shared by cp.async (__pipeline_memcpy_async, 16 bytes
//           a copy), without passing through registers; A as above (through registers, to
//           be transposed).
// ASYNC=2   both tiles by cp.async, A transposed by 4-byte copies (one float each), in
//           STAGES shared buffers: STAGES - 1 tiles in flight while the FMAs run on one
//           (STAGES=3 fits the 48 KB of static shared memory at BK = 8).
//           On the H200 at N = 4096 both are slower than ASYNC=0 at the default shape
//           (ASYNC=1 about 3 %, ASYNC=2 about 11 %): the loads were already hidden behind the
//           FMAs, and the edge tests and 4-byte copies cost more issue slots than the
//           registers they free.
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
#ifndef SWIZZLE
#define SWIZZLE 0
#endif
#ifndef FRAGDB
#define FRAGDB 1
#endif
#ifndef SPLITK
#define SPLITK 1
#endif
#ifndef GSWZ
#define GSWZ 1
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef FAST
#define FAST 0
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef TAILWAVE
#define TAILWAVE 0
#endif
#ifndef ASYNC
#define ASYNC 0
#endif
#ifndef STAGES
#define STAGES 2
#endif
#define NTHREADS ((BM / WM) * (BN / WN) * 32)
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
#define RM (WMITER * TM)            // rows of C per lane
#define RN (WNITER * TN)            // columns of C per lane
#define A_LOADS ((BM * BK / 4 + NTHREADS - 1) / NTHREADS)   // float4 of A per thread and tile
#define B_LOADS ((BK * BN / 4 + NTHREADS - 1) / NTHREADS)   // float4 of B per thread and tile

#if BM % WM || BN % WN || WM % WMITER || WN % WNITER || WSUBM % TM || WSUBN % TN
#error "sgemm_tuned: WM must divide BM, WN divide BN, WMITER divide WM, WNITER divide WN, TM divide WM / WMITER, TN divide WN / WNITER"
#endif
#if (WSUBM / TM) * (WSUBN / TN) != 32
#error "sgemm_tuned: a warp step must hold 32 lanes: (WM / WMITER / TM) * (WN / WNITER / TN) == 32"
#endif
#if BK % 4 || BN % 4 || TM % 4 || TN % 4 || APAD % 4
#error "sgemm_tuned needs BK, BN, TM, TN and APAD multiples of 4 (float4 accesses)"
#endif
#if SWIZZLE && ((BK != 4 && BK != 8 && BK != 16 && BK != 32) || BM % 32)
#error "sgemm_tuned: SWIZZLE=1 needs BK = 4, 8, 16 or 32 and BM a multiple of 32"
#endif
#if SPLITK < 1 || GSWZ < 1 || MINB < 1
#error "sgemm_tuned: SPLITK, GSWZ and MINB must be at least 1"
#endif
#if TAILWAVE < 0 || (TAILWAVE && SPLITK < 2)
#error "sgemm_tuned: TAILWAVE is 0 (off) or the blocks of a wave, with SPLITK >= 2 (the tail's split)"
#endif
#if (FAST != 0 && FAST != 1) || (PINGPONG != 0 && PINGPONG != 1)
#error "sgemm_tuned: FAST and PINGPONG are switches, 0 or 1"
#endif
#if PINGPONG && ASYNC
#error "sgemm_tuned: PINGPONG=1 is for ASYNC=0 (the register-staged tiles)"
#endif
#if ASYNC < 0 || ASYNC > 2 || STAGES < 2 || (ASYNC < 2 && STAGES != 2)
#error "sgemm_tuned: ASYNC is 0, 1 or 2; STAGES is 2 unless ASYNC=2 (then 2 or more)"
#endif
#if ASYNC
extern "C++" {                 // C++ declarations, inside PyCUDA's extern "C" { }
#include <cuda_pipeline.h>
}
#endif

#if SWIZZLE
#define AROW BM                                   // no padding: the XOR spreads the stores
#define ACOL(k, m) ((m) ^ (((k) / 4) * (128 / BK)))
#else
#define AROW (BM + APAD)
#define ACOL(k, m) (m)
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

// Write v into row[col..col+3] (added to what is there when `add`: split-K), skipping what
// lies past the row's `ncols` columns.
__device__ void store4(float* row, int col, int ncols, bool vec, float4 v, bool add)
{
    if (add) {
        if (col < ncols) atomicAdd(&row[col], v.x);
        if (col + 1 < ncols) atomicAdd(&row[col + 1], v.y);
        if (col + 2 < ncols) atomicAdd(&row[col + 2], v.z);
        if (col + 3 < ncols) atomicAdd(&row[col + 3], v.w);
        return;
    }
    if (vec && col + 3 < ncols) {
        *(float4*)&row[col] = v;
        return;
    }
    if (col < ncols) row[col] = v.x;
    if (col + 1 < ncols) row[col + 1] = v.y;
    if (col + 2 < ncols) row[col + 2] = v.z;
    if (col + 3 < ncols) row[col + 3] = v.w;
}

__global__ void __launch_bounds__(NTHREADS, MINB)
sgemmTuned(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
           float* __restrict__ C)
{
#if ASYNC
    __shared__ __align__(16) float As[STAGES][BK][AROW];   // cp.async's 16-byte destinations
    __shared__ __align__(16) float Bs[STAGES][BK][BN];
#else
    __shared__ float As[2][BK][AROW];        // As[buf][k][ACOL(k, m)] = A[rowBase + m][k0 + k]
    __shared__ float Bs[2][BK][BN];          // Bs[buf][k][n] = B[k0 + k][colBase + n]
#endif

    // Which tile of C (grouped order: GSWZ block rows at a time), and which K chunk of it.
    // Without TAILWAVE the grid is (tiles across, tiles down, SPLITK): every tile split
    // SPLITK ways. With TAILWAVE=w the grid is 1-D: the tiles that fill whole waves of w
    // blocks take one block each (all of K), and only the tail's tiles are split.
    const int tilesN = (N + BN - 1) / BN;
#if TAILWAVE || GSWZ > 1
    const int tilesM = (M + BM - 1) / BM;
#endif
#if TAILWAVE
    const int wholeTiles = (tilesM * tilesN / TAILWAVE) * TAILWAVE;
    const int bid = blockIdx.x;
    const int pid = bid < wholeTiles ? bid : wholeTiles + (bid - wholeTiles) / SPLITK;
    const int chunks = bid < wholeTiles ? 1 : SPLITK;
    const int chunk = bid < wholeTiles ? 0 : (bid - wholeTiles) % SPLITK;
#else
    const int pid = blockIdx.y * gridDim.x + blockIdx.x;      // the launch order
    const int chunks = SPLITK;
    const int chunk = blockIdx.z;
#endif
#if GSWZ > 1
    const int perGroup = GSWZ * tilesN;
    const int firstRow = (pid / perGroup) * GSWZ;
    const int groupRows = min(tilesM - firstRow, GSWZ);
    const int tileRow = firstRow + (pid % perGroup) % groupRows;
    const int tileCol = (pid % perGroup) / groupRows;
#else
    const int tileRow = pid / tilesN;
    const int tileCol = pid % tilesN;
#endif
    const int tilesPerChunk = ((K + BK - 1) / BK + chunks - 1) / chunks;
    const int kBegin = chunk * tilesPerChunk * BK;
    const int kEnd = min(K, kBegin + tilesPerChunk * BK);
    if (kBegin >= K)
        return;                                // an empty chunk (K too short for SPLITK)
    const bool add = chunks > 1;               // a chunk's partial sums are added into C

    const int tid = threadIdx.x;
    const int rowBase = tileRow * BM;
    const int colBase = tileCol * BN;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int warpRow = (warp / (BN / WN)) * WM;
    const int warpCol = (warp % (BN / WN)) * WN;
    const int laneRow = (lane / (WSUBN / TN)) * TM;
    const int laneCol = (lane % (WSUBN / TN)) * TN;
#if ASYNC < 2
    const bool vecA = K % 4 == 0;      // (ASYNC=2 copies A one float at a time)
#endif
    const bool vecB = N % 4 == 0;
#if ASYNC == 0
    // The whole tile inside A, B and C, rows of whole float4s: FETCH may skip the edge tests.
    const bool inside = FAST && vecA && vecB && rowBase + BM <= M && colBase + BN <= N;
#endif
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    float acc[RM][RN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j)
            acc[i][j] = 0.0f;
    float a[1 + FRAGDB][RM];   // the fragments of step k (and, with FRAGDB, of step k + 1)
    float b[1 + FRAGDB][RN];
#if ASYNC < 2
    float4 ra[A_LOADS];        // the next tile, on its way from global memory to shared memory
#endif
#if ASYNC == 0
    float4 rb[B_LOADS];
#endif

    // Fetch the tile that starts at column k0 of A and row k0 of B into ra, rb (0 past the
    // edges; a chunk ends on a tile boundary or at K, so K is the only edge). With FAST, a
    // tile of an inside block that ends before kEnd is fetched without the tests.
#define FETCH(k0)                                                                 \
    if (inside && (k0) + BK <= kEnd) {                                            \
        FETCH_A_INSIDE(k0) FETCH_B_INSIDE(k0)                                     \
    } else {                                                                      \
        FETCH_A(k0) FETCH_B(k0)                                                   \
    }
#define FETCH_A_INSIDE(k0)                                                        \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < A_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        if (i < BM * BK / 4)                                                      \
            ra[r] = *(const float4*)&A[(rowBase + i / (BK / 4)) * K + (k0) + (i % (BK / 4)) * 4]; \
    }
#define FETCH_B_INSIDE(k0)                                                        \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < B_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        if (i < BK * BN / 4)                                                      \
            rb[r] = *(const float4*)&B[((k0) + i / (BN / 4)) * N + colBase + (i % (BN / 4)) * 4]; \
    }
#define FETCH_A(k0)                                                               \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < A_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        ra[r] = zero;                                                             \
        if (i < BM * BK / 4 && rowBase + i / (BK / 4) < M)                        \
            ra[r] = load4(A + (rowBase + i / (BK / 4)) * K, (k0) + (i % (BK / 4)) * 4, K, vecA); \
    }
#define FETCH_B(k0)                                                               \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < B_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        rb[r] = zero;                                                             \
        if (i < BK * BN / 4 && (k0) + i / (BN / 4) < K)                           \
            rb[r] = load4(B + ((k0) + i / (BN / 4)) * N, colBase + (i % (BN / 4)) * 4, N, vecB); \
    }
    // Store ra, rb into shared buffer `buf`, the A tile transposed (and swizzled).
#define STASH(buf) STASH_A(buf) STASH_B(buf)
#define STASH_A(buf)                                                              \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < A_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        if (i < BM * BK / 4) {                                                    \
            int m = i / (BK / 4);                                                 \
            int kq = (i % (BK / 4)) * 4;                                          \
            As[buf][kq + 0][ACOL(kq, m)] = ra[r].x;                               \
            As[buf][kq + 1][ACOL(kq + 1, m)] = ra[r].y;                           \
            As[buf][kq + 2][ACOL(kq + 2, m)] = ra[r].z;                           \
            As[buf][kq + 3][ACOL(kq + 3, m)] = ra[r].w;                           \
        }                                                                         \
    }
#define STASH_B(buf)                                                              \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < B_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        if (i < BK * BN / 4)                                                      \
            *(float4*)&Bs[buf][i / (BN / 4)][(i % (BN / 4)) * 4] = rb[r];         \
    }
#if ASYNC
    // Copy the B tile that starts at row k0 into shared buffer `buf` by cp.async, 16 bytes
    // a copy; a float4 that a row's end or K cuts (or any, when N % 4 != 0) is loaded and
    // stored by the thread itself (0 past the edges), which is complete at the barrier.
#define COPY_B(buf, k0)                                                           \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < B_LOADS; ++r) {                                           \
        int i = tid + r * NTHREADS;                                               \
        if (i < BK * BN / 4) {                                                    \
            int kr = i / (BN / 4), n = (i % (BN / 4)) * 4;                        \
            float* dst = &Bs[buf][kr][n];                                         \
            if (vecB && (k0) + kr < K && colBase + n + 3 < N)                     \
                __pipeline_memcpy_async(dst, B + ((k0) + kr) * N + colBase + n, 16); \
            else                                                                  \
                *(float4*)dst = (k0) + kr < K ? load4(B + ((k0) + kr) * N, colBase + n, N, vecB) \
                                              : zero;                             \
        }                                                                         \
    }
    // Copy the A tile that starts at column k0 into shared buffer `buf`, transposed, by
    // cp.async of 4 bytes (one float each: the transpose needs no registers); consecutive
    // threads take consecutive k of a row of A. 0 past the edges, stored by the thread.
#define A_COPIES ((BM * BK + NTHREADS - 1) / NTHREADS)
#define COPY_A(buf, k0)                                                           \
    _Pragma("unroll")                                                             \
    for (int r = 0; r < A_COPIES; ++r) {                                          \
        int i = tid + r * NTHREADS;                                               \
        if (i < BM * BK) {                                                        \
            int m = i / BK, kk = i % BK;                                          \
            float* dst = &As[buf][kk][ACOL(kk, m)];                               \
            if (rowBase + m < M && (k0) + kk < K)                                 \
                __pipeline_memcpy_async(dst, A + (rowBase + m) * K + (k0) + kk, 4); \
            else                                                                  \
                *dst = 0.0f;                                                      \
        }                                                                         \
    }
#endif
    // Load the fragments of step k of shared buffer `buf` into a[s], b[s].
#define FRAGMENTS(s, buf, k)                                                      \
    _Pragma("unroll")                                                             \
    for (int wm = 0; wm < WMITER; ++wm)                                           \
        _Pragma("unroll")                                                         \
        for (int i = 0; i < TM; i += 4) {                                         \
            float4 v = *(const float4*)&As[buf][k][ACOL(k, warpRow + wm * WSUBM + laneRow + i)]; \
            a[s][wm * TM + i] = v.x; a[s][wm * TM + i + 1] = v.y;                 \
            a[s][wm * TM + i + 2] = v.z; a[s][wm * TM + i + 3] = v.w;             \
        }                                                                         \
    _Pragma("unroll")                                                             \
    for (int wn = 0; wn < WNITER; ++wn)                                           \
        _Pragma("unroll")                                                         \
        for (int j = 0; j < TN; j += 4) {                                         \
            float4 v = *(const float4*)&Bs[buf][k][warpCol + wn * WSUBN + laneCol + j]; \
            b[s][wn * TN + j] = v.x; b[s][wn * TN + j + 1] = v.y;                 \
            b[s][wn * TN + j + 2] = v.z; b[s][wn * TN + j + 3] = v.w;             \
        }

    // The BK steps of the FMAs on shared buffer `buf`, each an outer product of a[s], b[s].
#if FRAGDB
#define TILE_FMAS(buf)                                                            \
    FRAGMENTS(0, buf, 0)                                                          \
    _Pragma("unroll")                                                             \
    for (int k = 0; k < BK; ++k) {                                                \
        const int s = k % 2;                                                      \
        if (k + 1 < BK) {                                                         \
            FRAGMENTS((k + 1) % 2, buf, k + 1)   /* step k + 1's loads, in flight now */ \
        }                                                                         \
        OUTER_PRODUCT(s)                                                          \
    }
#else
#define TILE_FMAS(buf)                                                            \
    _Pragma("unroll")                                                             \
    for (int k = 0; k < BK; ++k) {                                                \
        const int s = 0;                                                          \
        FRAGMENTS(0, buf, k)                                                      \
        OUTER_PRODUCT(s)                                                          \
    }
#endif
#define OUTER_PRODUCT(s)                                                          \
    _Pragma("unroll")                                                             \
    for (int i = 0; i < RM; ++i)                                                  \
        _Pragma("unroll")                                                         \
        for (int j = 0; j < RN; ++j)                                              \
            acc[i][j] += a[s][i] * b[s][j];

#if ASYNC == 0
    FETCH(kBegin)
    STASH(0)
    __syncthreads();

    // One tile: fetch the next into registers, the FMAs on buffer `cur`, then the fetched
    // tile into buffer `nxt` for the next step.
#define TILE_STEP(k0, cur, nxt)                                                   \
    {                                                                             \
        const bool more = (k0) + BK < kEnd;                                       \
        if (more) {                                                               \
            FETCH((k0) + BK)      /* issued now, used after the FMAs below */     \
        }                                                                         \
        TILE_FMAS(cur)                                                            \
        if (more) {                                                               \
            STASH(nxt)                                                            \
        }                                                                         \
        __syncthreads();                                                          \
    }
#if PINGPONG
    // Two tiles an iteration: buffers 0 and 1 are constants, so are their shared addresses.
    for (int k0 = kBegin; k0 < kEnd; k0 += 2 * BK) {
        TILE_STEP(k0, 0, 1)
        if (k0 + BK >= kEnd)
            break;
        TILE_STEP(k0 + BK, 1, 0)
    }
#else
    int buf = 0;
    for (int k0 = kBegin; k0 < kEnd; k0 += BK) {
        TILE_STEP(k0, buf, buf ^ 1)
        buf ^= 1;
    }
#endif
#elif ASYNC == 1
    // A through registers as above; B copied by cp.async straight into the other buffer.
    FETCH_A(kBegin)
    COPY_B(0, kBegin)
    __pipeline_commit();
    STASH_A(0)
    __pipeline_wait_prior(0);
    __syncthreads();

    int buf = 0;
    for (int k0 = kBegin; k0 < kEnd; k0 += BK) {
        const bool more = k0 + BK < kEnd;
        if (more) {
            FETCH_A(k0 + BK)
            COPY_B(buf ^ 1, k0 + BK)
            __pipeline_commit();
        }
        TILE_FMAS(buf)
        if (more) {
            STASH_A(buf ^ 1)
            __pipeline_wait_prior(0);
        }
        __syncthreads();
        buf ^= 1;
    }
#else
    // Both tiles by cp.async, STAGES buffers: tiles t + 1 ... t + STAGES - 1 in flight while
    // the FMAs run on tile t. One batch (commit) per tile, empty past the last one, so that
    // waiting for all but the STAGES - 2 newest batches always means tile t has landed.
    const int tiles = (kEnd - kBegin + BK - 1) / BK;
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
        if (t < tiles) {
            COPY_A(t, kBegin + t * BK)
            COPY_B(t, kBegin + t * BK)
        }
        __pipeline_commit();
    }
    for (int t = 0; t < tiles; ++t) {
        __pipeline_wait_prior(STAGES - 2);
        __syncthreads();      // tile t visible to all; buffer (t - 1) % STAGES read by all
        const int next = t + STAGES - 1;
        if (next < tiles) {
            COPY_A(next % STAGES, kBegin + next * BK)
            COPY_B(next % STAGES, kBegin + next * BK)
        }
        __pipeline_commit();
        TILE_FMAS(t % STAGES)
    }
#endif

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
                                             acc[wm * TM + i][j + 2], acc[wm * TM + i][j + 3]),
                           add);
                }
            }
        }
}
