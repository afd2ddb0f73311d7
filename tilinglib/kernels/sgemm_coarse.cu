// Thread coarsening of the tiled kernel (1-D register blocking): C (M x N) = A (M x K) * B (K x N),
// row-major floats, correct for any M, N, K >= 1.
// Launch: block (BN * BM / TM, 1, 1), grid (ceil(N / BN), ceil(M / BM)).
//
// The tiled kernel reads two shared words for every FMA: As[ty][k] and Bs[k][tx]. Here each
// thread computes TM outputs down one column of the block's BM x BN tile of C. For each k it
// reads Bs[k][col] once into a register and uses it for TM FMAs, so a step of k costs
// TM + 1 shared loads for TM FMAs instead of 2 TM. The block's tiles (BM x BK of A, BK x BN
// of B) are copied by all threads together, one element per thread per pass.
// Compile with options such as ["-DBM=64", "-DBN=64", "-DBK=8", "-DTM=8"].
#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#define NTHREADS (BN * (BM / TM))

// __launch_bounds__ tells ptxas the block size, so it keeps registers per thread within
// 65,536 / NTHREADS (spilling to local memory if it must) and the launch cannot fail for
// lack of registers.
__global__ void __launch_bounds__(NTHREADS)
sgemmCoarse(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C)
{
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    int tid = threadIdx.x;
    int col = tid % BN;             // this thread's column of the C tile
    int row0 = (tid / BN) * TM;     // its first row; it owns rows row0 .. row0 + TM - 1
    int blockRow = blockIdx.y * BM;
    int blockCol = blockIdx.x * BN;

    float acc[TM];                  // TM running sums, kept in registers
    for (int m = 0; m < TM; ++m) {
        acc[m] = 0.0f;
    }

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Copy the BM x BK tile of A: consecutive threads take consecutive k (coalesced).
        // Elements past the edge of A are stored as 0, so they add nothing below.
        for (int i = tid; i < BM * BK; i += NTHREADS) {
            int r = i / BK;
            int c = i % BK;
            if (blockRow + r < M && k0 + c < K) {
                As[r][c] = A[(blockRow + r) * K + (k0 + c)];
            } else {
                As[r][c] = 0.0f;
            }
        }
        // Copy the BK x BN tile of B: consecutive threads take consecutive columns.
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
            float b = Bs[k][col];               // one shared load, reused TM times
            for (int m = 0; m < TM; ++m) {
                acc[m] += As[row0 + m][k] * b;  // As[..][k] is the same word for the whole row
            }
        }
        // Wait until everyone is done with the tiles before the next pass overwrites them.
        __syncthreads();
    }

    for (int m = 0; m < TM; ++m) {
        int r = blockRow + row0 + m;
        int c = blockCol + col;
        if (r < M && c < N) {
            C[r * N + c] = acc[m];
        }
    }
}
