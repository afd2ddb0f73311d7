"""Tile-shape sweep of lesson 08's kernels on a GPU, beside cuBLAS, in one process.

    python3 bench/ladder_sweep.py --kernels tilinglib/kernels --out sweep.json [--n 4096]

Standalone (PyCUDA, NumPy, CuPy; no tilinglib import), so that it runs on the GPU machine
from a plain copy of the kernel sources. For each kernel file and each tile shape in the
lists below: compile with nvcc through pycuda.compiler.compile (in parallel, -arch of the
device, the same flags PyCUDA's SourceModule uses), read registers per thread and local
(spill) bytes from the loaded function, check C once against a float64 product from CuPy at
an odd shape (1000 x 1003 x 999: every edge path) and at N (float4 path), then time it at
N x N x N with CUDA events: 3 warm-ups, median of --repeat launches, inputs already on the
GPU. cuBLAS (CuPy's A @ B, float32) is timed the same way before and after the kernels.
Prints a table sorted by GFLOP/s and writes every row to --out.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import itertools
import json
import os
import sys
import time

import numpy as np

KERNEL_FUNCS = {"sgemm_vec4": "sgemmVec4", "sgemm_warptile": "sgemmWarptile",
                "sgemm_warptile_db": "sgemmWarptileDB", "sgemm_tiled": "sgemmTiled"}


def threads(kernel, p):
    if kernel == "sgemm_vec4":
        return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def valid(kernel, p):
    """None when the shape compiles and fits, else the reason (the same rules as tilinglib.ladder)."""
    BM, BN, BK, TM, TN = p["BM"], p["BN"], p["BK"], p["TM"], p["TN"]
    if BK % 4 or BN % 4 or TM % 4 or TN % 4:
        return "float4"
    if kernel == "sgemm_vec4":
        if BM % TM or BN % TN:
            return "divisibility"
        shared = 4 * BK * (BM + BN)
        acc = TM * TN
    else:
        WM, WN, WMI, WNI = p["WM"], p["WN"], p["WMITER"], p["WNITER"]
        if BM % WM or BN % WN or WM % WMI or WN % WNI or (WM // WMI) % TM or (WN // WNI) % TN:
            return "divisibility"
        if (WM // WMI // TM) * (WN // WNI // TN) != 32:
            return "warp step != 32 lanes"
        shared = 4 * BK * (BM + p.get("APAD", 4) + BN) * (2 if kernel.endswith("_db") else 1)
        acc = WMI * TM * WNI * TN
    nt = threads(kernel, p)
    if nt > 1024 or nt < 32:
        return "threads"
    if shared > 48 * 1024:
        return "shared"
    if acc > 128:
        return "registers"
    return None


def shapes():
    """(kernel, params) for every shape swept."""
    out = []
    for BM, BN, BK, TM, TN in itertools.product((64, 128), (64, 128), (8, 16), (4, 8), (4, 8)):
        p = dict(BM=BM, BN=BN, BK=BK, TM=TM, TN=TN)
        if valid("sgemm_vec4", p) is None and 64 <= threads("sgemm_vec4", p) <= 256:
            out.append(("sgemm_vec4", p))
    wt = []
    for (BM, BN), BK, WM, WN, WMI, WNI, (TM, TN) in itertools.product(
            ((128, 128), (128, 256), (256, 128), (128, 64), (64, 128)), (8, 16),
            (32, 64, 128), (32, 64, 128), (1, 2, 4), (1, 2, 4), ((4, 4), (8, 4), (4, 8))):
        p = dict(BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, WMITER=WMI, WNITER=WNI, TM=TM, TN=TN, APAD=4)
        if valid("sgemm_warptile", p) is not None:
            continue
        nt = threads("sgemm_warptile", p)
        acc = WMI * TM * WNI * TN
        if nt not in (128, 256) or acc not in (64, 128):
            continue
        wt.append(p)
    for p in wt:
        out.append(("sgemm_warptile", p))
        if valid("sgemm_warptile_db", p) is None:
            out.append(("sgemm_warptile_db", p))
    # APAD variants of the default shape
    for apad in (0, 8):
        for k in ("sgemm_warptile", "sgemm_warptile_db"):
            out.append((k, dict(BM=128, BN=128, BK=8, WM=64, WN=32, WMITER=2, WNITER=2, TM=4,
                                TN=4, APAD=apad)))
    return out


def _compile(args):
    kernel_dir, kernel, params, arch = args
    from pycuda.compiler import compile as nvcc_compile

    src = open(os.path.join(kernel_dir, kernel + ".cu"), encoding="utf-8").read()
    opts = [f"-D{k}={v}" for k, v in params.items()]
    try:
        return nvcc_compile(src, options=opts, arch=arch, no_extern_c=False), None
    except Exception as exc:  # noqa: BLE001 - report the shape, keep sweeping
        return None, str(exc)[-400:]


def ptr(a):
    """A CuPy array's device address, as PyCUDA passes a pointer argument."""
    return np.uintp(a.data.ptr)


def event_ms(fn, warmup, repeat):
    import pycuda.driver as drv

    for _ in range(warmup):
        fn()
    start, end = drv.Event(), drv.Event()
    times = []
    for _ in range(repeat):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.time_till(end))
    return times


def cublas(N, warmup, repeat):
    import cupy as cp

    rng = np.random.default_rng(N)
    A = cp.asarray(rng.standard_normal((N, N), dtype=np.float32))
    B = cp.asarray(rng.standard_normal((N, N), dtype=np.float32))
    for _ in range(warmup):
        A @ B
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeat):
        start.record()
        A @ B
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    ms = float(np.median(times))
    return {"kernel": "cublas", "N": N, "median_ms": ms, "gflops": 2 * N ** 3 / ms / 1e6,
            "library": f"CuPy {cp.__version__} A @ B"}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--limit", type=int, default=0, help="at most this many shapes (0: all)")
    ap.add_argument("--shapes", help="a JSON file of [kernel, params] pairs to sweep instead of "
                                     "the built-in lists")
    ap.add_argument("--budget", type=float, default=1e9,
                    help="stop timing new shapes after this many seconds (the table still prints)")
    args = ap.parse_args(argv)

    import pycuda.autoprimaryctx  # noqa: F401  (the primary context, which CuPy uses too)
    import pycuda.driver as drv
    import cupy as cp

    dev = drv.Context.get_device()
    cc = dev.compute_capability()
    arch = f"sm_{cc[0]}{cc[1]}"
    if args.shapes:
        with open(args.shapes, encoding="utf-8") as fh:
            todo = [(k, p) for k, p in json.load(fh)]
    else:
        todo = [("sgemm_tiled", {"TILE": 32})] + shapes()
    if args.limit:
        todo = todo[:args.limit]
    print(f"device {dev.name()}, {len(todo)} shapes", flush=True)
    t0 = time.time()
    with cf.ProcessPoolExecutor(max_workers=os.cpu_count()) as pool:
        cubins = list(pool.map(_compile, [(args.kernels, k, p, arch) for k, p in todo]))
    print(f"compiled in {time.time() - t0:.0f} s", flush=True)

    N = args.n
    rng = np.random.default_rng(1)
    A = cp.asarray(rng.standard_normal((N, N), dtype=np.float32))
    B = cp.asarray(rng.standard_normal((N, N), dtype=np.float32))
    C = cp.empty((N, N), dtype=cp.float32)
    ref = (A.astype(cp.float64) @ B.astype(cp.float64))
    scale = float(cp.abs(ref).max())
    Mo, No, Ko = 1000, 1003, 999
    Ao = cp.asarray(rng.standard_normal((Mo, Ko), dtype=np.float32))
    Bo = cp.asarray(rng.standard_normal((Ko, No), dtype=np.float32))
    Co = cp.empty((Mo, No), dtype=cp.float32)
    refo = Ao.astype(cp.float64) @ Bo.astype(cp.float64)
    scaleo = float(cp.abs(refo).max())

    rows = [dict(cublas(N, 3, args.repeat), when="before")]
    print(f"cublas {rows[0]['gflops']:,.0f} GFLOP/s", flush=True)
    log = open(args.out + "l", "w", encoding="utf-8")   # one JSON line per shape, as it goes
    for (kernel, p), (cubin, err) in zip(todo, cubins):
        if time.time() - t0 > args.budget:
            print(f"!! time budget spent: {len(rows) - 1} of {len(todo)} shapes timed", flush=True)
            break
        row = {"kernel": kernel, "params": p}
        if cubin is None:
            row["error"] = err
            rows.append(row)
            print(f"!! {kernel} {p}: compile error {err[-200:]}", flush=True)
            continue
        mod = drv.module_from_buffer(cubin)
        f = mod.get_function(KERNEL_FUNCS[kernel])
        row.update(registers=f.num_regs, local_bytes=f.local_size_bytes,
                   static_shared_bytes=f.shared_size_bytes)
        if kernel == "sgemm_tiled":
            T = p["TILE"]
            block, grid = (T, T, 1), (N // T, N // T)
            go = lambda: f(np.int32(N), ptr(A), ptr(B), ptr(C), block=block, grid=grid)  # noqa: E731
            row["odd_shape_error"] = None
        else:
            nt = threads(kernel, p)
            block = (nt, 1, 1)
            grid = ((N + p["BN"] - 1) // p["BN"], (N + p["BM"] - 1) // p["BM"])
            grido = ((No + p["BN"] - 1) // p["BN"], (Mo + p["BM"] - 1) // p["BM"])
            Co.fill(cp.nan)
            f(np.int32(Mo), np.int32(No), np.int32(Ko), ptr(Ao), ptr(Bo), ptr(Co), block=block,
              grid=grido)
            cp.cuda.Device().synchronize()
            row["odd_shape_error"] = float(cp.abs(Co - refo).max()) / scaleo
            go = lambda: f(np.int32(N), np.int32(N), np.int32(N), ptr(A), ptr(B), ptr(C),  # noqa: E731
                           block=block, grid=grid)
        C.fill(cp.nan)
        go()
        cp.cuda.Device().synchronize()
        row["error"] = float(cp.abs(C - ref).max()) / scale
        times = event_ms(go, 3, args.repeat)
        ms = float(np.median(times))
        row.update(N=N, block=list(block), grid=list(grid), median_ms=ms,
                   q1_ms=float(np.percentile(times, 25)), q3_ms=float(np.percentile(times, 75)),
                   gflops=2 * N ** 3 / ms / 1e6)
        rows.append(row)
        log.write(json.dumps(row) + "\n")
        log.flush()
        print(f"{kernel:<18} {json.dumps(p):<120} regs={row['registers']:<3} "
              f"local={row['local_bytes']} err={row['error']:.1e}/{row['odd_shape_error']} "
              f"{row['gflops']:9,.0f} GFLOP/s", flush=True)
    rows.append(dict(cublas(N, 3, args.repeat), when="after"))
    cub = max(r["gflops"] for r in rows if r["kernel"] == "cublas")
    print(f"cublas after {rows[-1]['gflops']:,.0f} GFLOP/s", flush=True)
    good = [r for r in rows if r["kernel"] != "cublas" and "gflops" in r
            and r["error"] < 1e-4 and (r["odd_shape_error"] is None or r["odd_shape_error"] < 1e-4)]
    good.sort(key=lambda r: -r["gflops"])
    print("\nbest 25 (correct), % of the faster cuBLAS figure:")
    for r in good[:25]:
        print(f"{r['kernel']:<18} {r['gflops']:9,.0f} {100 * r['gflops'] / cub:5.1f}%  "
              f"regs={r['registers']} {json.dumps(r['params'])}")
    for k in KERNEL_FUNCS:
        best = [r for r in good if r["kernel"] == k]
        if best:
            print(f"best {k}: {best[0]['gflops']:,.0f} ({100 * best[0]['gflops'] / cub:.1f}%) "
                  f"{json.dumps(best[0]['params'])}")
    bad = [r for r in rows if r["kernel"] != "cublas" and "gflops" in r and r not in good]
    print(f"{len(bad)} incorrect: " + "; ".join(f"{r['kernel']} {r['params']}" for r in bad[:10]))
    info = {"device": dev.name(), "compute_capability": ".".join(map(str, cc)),
            "driver": drv.get_driver_version(), "cuda": ".".join(map(str, drv.get_version())),
            "cupy": cp.__version__, "date": time.strftime("%Y-%m-%d"), "N": N,
            "repeat": args.repeat, "warmup": 3, "statistic": "median of CUDA-event timings"}
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump({"info": info, "rows": rows}, fh, indent=1)
    print(f"done in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
