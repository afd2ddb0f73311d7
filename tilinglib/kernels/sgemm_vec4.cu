// 2-D register blocking with float4 loads and a transposed A tile (lesson 08).
// C (M x N) = A (M x K) * B (K x N), row-major, any M, N, K >= 1.
// Launch: block ((BM / TM) * (BN / TN), 1, 1), grid (ceil(N / BN), ceil(M / BM)).
//
// Each block computes a BM x BN tile of C; each thread a TM x TN piece of it, from registers,
// as in lesson 07's 2-D kernel. Two changes:
//  1. Global memory is read 16 bytes at a time (float4): a quarter of the load instructions
//     for the same bytes, each warp's request a whole number of 32-byte sectors.
//  2. The A tile is stored transposed, As[k][m] = A[m][k]. In the inner loop a thread needs
//     A[m..m+TM-1][k], a column of the A tile: transposed, it is a contiguous run of As[k],
//     which one float4 shared load (LDS.128) reads. Threads of a warp that share a row of C
//     read the same address (a broadcast), so the read is free of bank conflicts.
// Edges: loads past M, N or K read 0 and stores past them are skipped. A float4 access needs
// a 16-byte-aligned address, which a row gives only when its length is a multiple of 4
// (K for A; N for B and C): otherwise that matrix is read and written one float at a time.
// (The arrays themselves are 256-byte aligned, as cudaMalloc and the emulator return them.)
#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 4
#endif
#define NTHREADS ((BM / TM) * (BN / TN))

#if BK % 4 || BN % 4 || TM % 4 || TN % 4 || BM % TM || BN % TN
#error "sgemm_vec4 needs BK, BN, TM, TN multiples of 4, TM dividing BM and TN dividing BN"
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

__global__ void sgemmVec4(int M, int N, int K, const float* __restrict__ A,
                          const float* __restrict__ B, float* __restrict__ C)
{
    __shared__ float As[BK][BM];   // transposed: As[k][m] = A[rowBase + m][k0 + k]
    __shared__ float Bs[BK][BN];   // as in global memory: Bs[k][n] = B[k0 + k][colBase + n]

    const int tid = threadIdx.x;
    const int rowBase = blockIdx.y * BM;
    const int colBase = blockIdx.x * BN;
    const int tRow = tid / (BN / TN);      // this thread's TM rows: tRow * TM ..
    const int tCol = tid % (BN / TN);      // and TN columns: tCol * TN .. of the block's tile
    const bool vecA = K % 4 == 0;
    const bool vecB = N % 4 == 0;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;
    float a[TM];
    float b[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        // A tile: BM rows of BK floats, BK / 4 float4 per row; written transposed.
        for (int i = tid; i < BM * BK / 4; i += NTHREADS) {
            int m = i / (BK / 4);
            int kq = (i % (BK / 4)) * 4;
            float4 v = zero;
            if (rowBase + m < M)
                v = load4(A + (rowBase + m) * K, k0 + kq, K, vecA);
            As[kq + 0][m] = v.x;
            As[kq + 1][m] = v.y;
            As[kq + 2][m] = v.z;
            As[kq + 3][m] = v.w;
        }
        // B tile: BK rows of BN floats, one float4 store per float4 load.
        for (int i = tid; i < BK * BN / 4; i += NTHREADS) {
            int k = i / (BN / 4);
            int nq = (i % (BN / 4)) * 4;
            float4 v = zero;
            if (k0 + k < K)
                v = load4(B + (k0 + k) * N, colBase + nq, N, vecB);
            *(float4*)&Bs[k][nq] = v;
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            // A column and a B row of this thread's piece, float4 by float4, into registers.
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                float4 v = *(const float4*)&As[k][tRow * TM + i];
                a[i] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                float4 v = *(const float4*)&Bs[k][tCol * TN + j];
                b[j] = v.x; b[j + 1] = v.y; b[j + 2] = v.z; b[j + 3] = v.w;
            }
            // TM x TN FMAs from TM + TN registers.
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int row = rowBase + tRow * TM + i;
        if (row < M) {
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                store4(C + row * N, colBase + tCol * TN + j, N, vecB,
                       make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
        }
    }
}
