// Mistake: the kernel compiles and declares TILE, but its body is empty.
// expect: never written
// score: 0
// fails: 1x1x1; square, multiple of TILE; TILE+1 and TILE-1; primes, M != N != K; tall and wide; long K; interior blocks, partial K tile; tiling; TILE declared is the TILE used
#define TILE 16
__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
}
