"""GPU smoke check of tilinglib's PyCUDA backend: correctness, timing, and the student-mistake
messages. Run on a machine with an NVIDIA GPU and PyCUDA:

    TILINGLIB_BACKEND=pycuda python bench/gpu_smoke.py [N]

Prints one line per check; the SGEMM timings (GFLOP/s at N, default 4096) come last.
"""

import sys
import traceback

import numpy as np

import tilinglib as tl
from tilinglib import kernels
from tilinglib.roofline import sgemm_flops


def check(title, fn):
    try:
        out = fn()
        print(f"[ok]   {title}: {out}")
    except Exception as exc:  # noqa: BLE001 - a smoke script reports everything
        print(f"[raised] {title}: {type(exc).__name__}: {exc}")


def main():
    n_big = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    print("backend:", tl.backend_name())
    rng = np.random.default_rng(0)
    n = 1024
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    naive = tl.SourceModule(kernels.load("sgemm_naive")).get_function("sgemmNaive")
    print("naive regs", naive.num_regs, "smem", naive.shared_size_bytes)

    def err(C):
        return float(np.linalg.norm(C - ref) / np.linalg.norm(ref))

    C = np.full_like(A, np.nan)
    naive(np.int32(n), tl.In(A), tl.In(B), tl.Out(C), block=(32, 32, 1), grid=(n // 32, n // 32))
    print("naive rel err", err(C))
    for tile in (4, 8, 16, 32):
        for pad in (0, 1):
            f = tl.SourceModule(kernels.load("sgemm_tiled"),
                                options=[f"-DTILE={tile}", f"-DPAD={pad}"]).get_function("sgemmTiled")
            C = np.full_like(A, np.nan)
            f(np.int32(n), tl.In(A), tl.In(B), tl.Out(C), block=(tile, tile, 1),
              grid=(n // tile, n // tile))
            print(f"tiled TILE={tile} PAD={pad}: rel err {err(C):.2e}, smem "
                  f"{f.shared_size_bytes} B, regs {f.num_regs}")

    # Student mistakes: each should be a clear tilinglib error, and the context must survive.
    C = np.zeros_like(A)
    check("python int N", lambda: naive(n, tl.In(A), tl.In(B), tl.Out(C), block=(32, 32, 1),
                                        grid=(32, 32)))
    check("float64 A", lambda: naive(np.int32(n), tl.In(A.astype(np.float64)), tl.In(B), tl.Out(C),
                                     block=(32, 32, 1), grid=(32, 32)))
    check("non-contiguous", lambda: naive(np.int32(n), tl.In(A.T), tl.In(B), tl.Out(C),
                                          block=(32, 32, 1), grid=(32, 32)))
    check("block 64x32", lambda: naive(np.int32(n), tl.In(A), tl.In(B), tl.Out(C),
                                       block=(64, 32, 1), grid=(32, 32)))
    check("grid 0", lambda: naive(np.int32(n), tl.In(A), tl.In(B), tl.Out(C),
                                  block=(32, 32, 1), grid=(0, 1)))
    check("200 KB dynamic shared", lambda: naive(np.int32(n), tl.In(A), tl.In(B), tl.Out(C),
                                                 block=(32, 32, 1), grid=(32, 32), shared=200_000))
    check("64 KB static shared", lambda: tl.SourceModule(
        "__global__ void big(float* x) { __shared__ float s[16384]; s[threadIdx.x] = 1; "
        "__syncthreads(); x[threadIdx.x] = s[threadIdx.x + 1]; }"))
    check("compile error at line 3", lambda: tl.SourceModule(
        "// line 1\n__global__ void k(float* x) {\n    x[0] = y;\n}\n"))
    check("context still fine", lambda: (naive(np.int32(n), tl.In(A), tl.In(B), tl.Out(C),
                                               block=(32, 32, 1), grid=(32, 32)), err(C))[1])

    # Timings at n_big.
    print(f"--- timings, N = {n_big}")
    A = rng.standard_normal((n_big, n_big), dtype=np.float32)
    B = rng.standard_normal((n_big, n_big), dtype=np.float32)
    C = np.empty_like(A)
    flops = sgemm_flops(n_big, n_big, n_big)
    rows = []
    for bs in (16, 32):
        t = tl.time_kernel(naive, np.int32(n_big), tl.In(A), tl.In(B), tl.Out(C),
                           block=(bs, bs, 1), grid=(n_big // bs, n_big // bs), flops=flops)
        rows.append((f"naive {bs}x{bs}", t.gflops, t.median_ms))
    for tile in (4, 8, 16, 32):
        for pad in (0, 1):
            f = tl.SourceModule(kernels.load("sgemm_tiled"),
                                options=[f"-DTILE={tile}", f"-DPAD={pad}"]).get_function("sgemmTiled")
            t = tl.time_kernel(f, np.int32(n_big), tl.In(A), tl.In(B), tl.Out(C),
                               block=(tile, tile, 1), grid=(n_big // tile, n_big // tile),
                               flops=flops)
            rows.append((f"tiled TILE={tile} PAD={pad}", t.gflops, t.median_ms))
    print(t)
    for name, g, ms in rows:
        print(f"{name:<24} {g:10,.0f} GFLOP/s  {ms:8.3f} ms")

    # Last: an illegal address kills the context; tilinglib must say so once, clearly.
    bad = tl.SourceModule("__global__ void oob(float* x) { x[threadIdx.x + (1 << 28)] = 1.0f; }"
                          ).get_function("oob")
    x = np.zeros(32, np.float32)
    check("illegal address", lambda: bad(tl.InOut(x), block=(32, 1, 1), grid=(1, 1)))
    check("call after loss", lambda: naive(np.int32(n), tl.In(A), tl.In(B), tl.Out(C),
                                           block=(32, 32, 1), grid=(32, 32)))


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
