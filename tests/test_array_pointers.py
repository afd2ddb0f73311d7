"""Pointers and references to arrays (`float (*As)[TILE]`, a parameter `float (*C)[N]`,
`float (&a)[N]`): indexing, arithmetic and sizeof step by whole rows, as in C++, and every
access is counted as the same kernel written with plain arrays (counters derived by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from tilinglib.emulator import In, InOut, Out, SourceModule
from tilinglib.errors import KernelArgumentError

N, TILE = 64, 16

# The course's tiled kernel, with its tiles and matrices seen through pointers to rows
# (the style of a GEMM tutorial's kernels: `float (*As)[TILE] = (float (*)[TILE])smem;`).
VIEWS = r"""
#define TILE 16
#define N 64
__global__ void tiled(const float (*A)[N], const float (*B)[N], float (*C)[N])
{
    __shared__ float smem[2 * TILE * TILE];
    float (*As)[TILE] = (float (*)[TILE])smem;
    float (*Bs)[TILE] = As + TILE;              /* the next TILE rows */
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t = 0; t < N / TILE; ++t) {
        As[ty][tx] = A[row][t * TILE + tx];
        Bs[ty][tx] = B[t * TILE + ty][col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row][col] = sum;
}
"""
PLAIN = r"""
#define TILE 16
#define N 64
__global__ void tiled(const float *A, const float *B, float *C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t = 0; t < N / TILE; ++t) {
        As[ty][tx] = A[row * N + t * TILE + tx];
        Bs[ty][tx] = B[(t * TILE + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * N + col] = sum;
}
"""


def _run(src):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((N, N)).astype(np.float32)
    B = rng.standard_normal((N, N)).astype(np.float32)
    C = np.zeros((N, N), np.float32)
    f = SourceModule(src).get_function("tiled")
    f(In(A), In(B), Out(C), block=(TILE, TILE, 1), grid=(N // TILE, N // TILE))
    return f.last_report, A, B, C


def test_a_tiled_kernel_through_row_pointers_computes_and_counts_as_with_arrays():
    report, A, B, C = _run(VIEWS)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)
    # By hand: 16 blocks of 256 threads = 128 warps; 4 steps of the tile loop. A warp is
    # two rows of 16 threads: a load of A or B reads two runs of 64 bytes, each 64-byte
    # aligned, so 4 sectors; the store of C likewise.
    warps, steps = (N // TILE) ** 2 * TILE * TILE // 32, N // TILE
    assert report.global_load_requests == warps * steps * 2 == 1024
    assert report.global_load_sectors == 4 * 1024
    assert (report.global_store_requests, report.global_store_sectors) == (warps, 4 * warps)
    # As[ty][tx], Bs[ty][tx]: 32 consecutive words per warp, one wavefront each.
    assert report.shared_store_instructions == report.shared_store_wavefronts == warps * steps * 2
    # As[ty][k]: two words (a broadcast), Bs[k][tx]: 16 consecutive words: one wavefront.
    assert report.shared_load_instructions == report.shared_load_wavefronts == \
        warps * steps * TILE * 2 == 16384
    assert report.shared_bank_conflicts == 0
    assert report.barriers == (N // TILE) ** 2 * steps * 2 == 128
    assert report.flops == 2 * N ** 3
    assert report.shared_bytes == 2 * TILE * TILE * 4
    plain, _, _, C2 = _run(PLAIN)
    np.testing.assert_array_equal(C, C2)
    same = ("global_load_requests", "global_load_sectors", "global_store_requests",
            "global_store_sectors", "shared_load_instructions", "shared_load_wavefronts",
            "shared_store_instructions", "shared_store_wavefronts", "shared_bank_conflicts",
            "barriers", "flops", "shared_bytes")
    assert {k: getattr(report, k) for k in same} == {k: getattr(plain, k) for k in same}


def test_row_pointer_arithmetic_sizeof_and_dereference_step_by_rows():
    src = r"""
    __global__ void k(float (*m)[8], long *out) {
        float (*p)[8] = m + 2;              /* row 2 */
        float (**pp)[8] = &p;
        out[0] = sizeof(*p);                /* 32: a row */
        out[1] = sizeof(p);                 /* 8: a pointer */
        out[2] = (long)(p - m);             /* 2 rows */
        out[3] = (long)((char *)(p + 1) - (char *)p);
        out[4] = (long)(*p)[3];             /* m[2][3] */
        out[5] = (long)(*pp)[1][0];         /* m[3][0] */
        (*pp)[-1][7] = 99.0f;               /* m[1][7] */
    }"""
    m = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = np.zeros(6, np.int64)
    SourceModule(src).get_function("k")(InOut(m), Out(out), block=(1, 1, 1), grid=(1, 1))
    assert out.tolist() == [32, 8, 2, 32, 2 * 8 + 3, 3 * 8]
    assert m[1, 7] == 99


def test_references_to_arrays_alias_the_array_and_keep_its_size():
    src = r"""
    template <int N> __device__ float total(float (&a)[N]) {
        float s = 0.0f;
        for (int i = 0; i < N; ++i) s += a[i];
        a[0] = -1.0f;                       /* the caller's array */
        return s + sizeof(a);               /* N floats */
    }
    __device__ float first(const float (&a)[4]) { return a[0] + 100.0f * sizeof(a); }
    __device__ void zero_rows(float (&m)[2][3]) { for (int i = 0; i < 3; ++i) m[1][i] = 0; }
    __global__ void k(float *out) {
        float v[4] = {1, 2, 3, 4};
        auto &w = v;                        /* clang: float (&)[4] */
        w[1] = 20.0f;
        float t = total(v);                 /* 1 + 20 + 3 + 4 + 16 */
        float m[2][3] = {{1, 2, 3}, {4, 5, 6}};
        zero_rows(m);
        out[0] = t;
        out[1] = v[0];
        out[2] = first(v);                  /* -1 + 1600 */
        out[3] = sizeof(w);
        out[4] = m[0][2] + m[1][0] + m[1][2];
    }"""
    out = np.zeros(5, np.float32)
    SourceModule(src).get_function("k")(Out(out), block=(1, 1, 1), grid=(1, 1))
    assert out.tolist() == [44, -1, 1599, 16, 3]


def test_a_shared_tile_passed_by_reference_to_a_device_function_is_counted():
    src = r"""
    __device__ void fill(float (&tile)[32][33], int t) {
        for (int i = 0; i < 32; ++i) tile[i][t] = i;      /* column store: padded */
    }
    __global__ void k(float *out) {
        __shared__ float tile[32][33];
        fill(tile, threadIdx.x);
        __syncthreads();
        out[threadIdx.x] = tile[threadIdx.x][threadIdx.x];
    }"""
    out = np.zeros(32, np.float32)
    f = SourceModule(src).get_function("k")
    f(Out(out), block=(32, 1, 1), grid=(1, 1))
    assert out.tolist() == list(range(32))
    r = f.last_report
    # 32 column stores by one warp: words i*33 + t for t = 0..31, 32 banks: no conflict;
    # the diagonal read tile[t][t] (word 34 t) hits bank 2t % 32: 2-way.
    assert (r.shared_store_instructions, r.shared_store_wavefronts) == (32, 32)
    assert (r.shared_load_instructions, r.shared_load_wavefronts) == (1, 2)
    assert r.shared_bank_conflicts == 1


def test_a_row_pointer_parameter_takes_an_array_of_its_element_type():
    src = "__global__ void k(float (*C)[4]) { C[threadIdx.x][0] = 1.0f; }"
    f = SourceModule(src).get_function("k")
    with pytest.raises(KernelArgumentError, match="dtype float64"):
        f(InOut(np.zeros((2, 4))), block=(2, 1, 1), grid=(1, 1))
    c = np.zeros((2, 4), np.float32)
    f(InOut(c), block=(2, 1, 1), grid=(1, 1))
    assert c[:, 0].tolist() == [1, 1]
