// 2-D register blocking: C (M x N) = A (M x K) * B (K x N), row-major floats, any M, N, K >= 1.
// Launch: block ((BM / TM) * (BN / TN), 1, 1), grid (ceil(N / BN), ceil(M / BM)).
//
// Each thread computes a TM x TN block of outputs, held in TM * TN registers. For each k it
// loads a column of TM values of the A tile and a row of TN values of the B tile from shared
// memory into registers (TM + TN shared loads) and then does TM * TN FMAs from registers
// alone: an outer product. Shared traffic per FMA falls from 2 loads (tiled kernel) to
// (TM + TN) / (TM * TN). The block stages BM x BK of A and BK x BN of B in shared memory;
// each staged element serves BN (A) or BM (B) FMAs, so global traffic per FMA is
// (BM + BN) / (BM * BN) floats.
// Compile with options such as ["-DBM=128", "-DBN=128", "-DBK=8", "-DTM=8", "-DTN=8"].
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#define NTHREADS ((BM / TM) * (BN / TN))

// __launch_bounds__ tells ptxas the block size, so it keeps registers per thread within
// 65,536 / NTHREADS (spilling to local memory if it must) and the launch cannot fail for
// lack of registers.
__global__ void __launch_bounds__(NTHREADS)
sgemmRegtile2d(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C)
{
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    int tid = threadIdx.x;
    int row0 = (tid / (BN / TN)) * TM;   // this thread's TM x TN block of the C tile
    int col0 = (tid % (BN / TN)) * TN;
    int blockRow = blockIdx.y * BM;
    int blockCol = blockIdx.x * BN;

    float acc[TM * TN];                  // the thread's outputs, in registers
    float a[TM];                         // a column of the A tile
    float b[TN];                         // a row of the B tile
    for (int i = 0; i < TM * TN; ++i) {
        acc[i] = 0.0f;
    }

    for (int k0 = 0; k0 < K; k0 += BK) {
        // All threads copy the BM x BK tile of A, then the BK x BN tile of B, one element
        // each per pass; elements past the edges of A or B are stored as 0.
        for (int i = tid; i < BM * BK; i += NTHREADS) {
            int r = i / BK;
            int c = i % BK;
            if (blockRow + r < M && k0 + c < K) {
                As[r][c] = A[(blockRow + r) * K + (k0 + c)];
            } else {
                As[r][c] = 0.0f;
            }
        }
        for (int i = tid; i < BK * BN; i += NTHREADS) {
            int r = i / BN;
            int c = i % BN;
            if (k0 + r < K && blockCol + c < N) {
                Bs[r][c] = B[(k0 + r) * N + (blockCol + c)];
            } else {
                Bs[r][c] = 0.0f;
            }
        }
        // Wait until both tiles are in shared memory.
        __syncthreads();

        for (int k = 0; k < BK; ++k) {
            // TM + TN shared loads into registers ...
            for (int m = 0; m < TM; ++m) {
                a[m] = As[row0 + m][k];
            }
            for (int n = 0; n < TN; ++n) {
                b[n] = Bs[k][col0 + n];
            }
            // ... then TM * TN FMAs that touch only registers.
            for (int m = 0; m < TM; ++m) {
                for (int n = 0; n < TN; ++n) {
                    acc[m * TN + n] += a[m] * b[n];
                }
            }
        }
        // Wait until everyone is done with the tiles before the next pass overwrites them.
        __syncthreads();
    }

    for (int m = 0; m < TM; ++m) {
        for (int n = 0; n < TN; ++n) {
            int r = blockRow + row0 + m;
            int c = blockCol + col0 + n;
            if (r < M && c < N) {
                C[r * N + c] = acc[m * TN + n];
            }
        }
    }
}
