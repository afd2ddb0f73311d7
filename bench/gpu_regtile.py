"""Lesson 07's kernels on a GPU: registers per thread, spills and GFLOP/s beside cuBLAS.

Standalone (PyCUDA + NumPy; CuPy for cuBLAS if importable, else cuBLAS through ctypes; no
tilinglib), on a machine with a GPU, the CUDA toolkit and, for the counters, ``ncu``::

    python3 bench/gpu_regtile.py --out DIR [--n 4096] [--ncu-n 1024]

1. Compiles every tile shape in `SHAPES` (nvcc through PyCUDA's SourceModule, the ``-D``
   options of `tilinglib.ladder`) and reads ptxas's registers per thread
   (``Function.num_regs``), local (spill) bytes and static shared bytes.
2. Checks each against NumPy (float64) at an odd shape, 1000 x 999 times 999 x 1030, and
   against cuBLAS at N x N.
3. Times each at N = 4096 (CUDA events, 3 warm-ups, median of 10, inputs already on the
   GPU), and cuBLAS (CuPy's ``A @ B``) in the same process: GFLOP/s = 2 N^3 / median time.
4. Under ``ncu --clock-control none``, one launch of each at N = 1024 with the load
   counters (global load requests and sectors, shared load instructions and wavefronts,
   FFMA thread instructions), so bytes per FMA can be set beside the formulas.

Writes DIR/regtile.json (device, versions, every shape's figures) and DIR/regtile.md.
The kernel sources are read from this script's folder if they are there (a GPU run from a
copy), else from tilinglib/kernels/.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
KERNELS = HERE.parent / "tilinglib" / "kernels"
sys.path.insert(0, str(HERE))

FUNCTIONS = {"sgemm_tiled": "sgemmTiled", "sgemm_coarse": "sgemmCoarse",
             "sgemm_regtile2d": "sgemmRegtile2d"}

# (step name, kernel file, parameters): lesson 03's tiled kernel, then lesson 07's.
SHAPES = [("tiled", "sgemm_tiled", {"TILE": 32})]
SHAPES += [("coarse", "sgemm_coarse", dict(zip(("BM", "BN", "BK", "TM"), s))) for s in [
    (64, 64, 8, 8), (64, 64, 8, 4), (32, 64, 8, 8), (64, 64, 16, 8), (128, 64, 8, 16),
    (128, 128, 8, 16)]]
SHAPES += [("regtile2d", "sgemm_regtile2d", dict(zip(("BM", "BN", "BK", "TM", "TN"), s))) for s in [
    (128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (128, 128, 32, 8, 8), (64, 64, 8, 8, 8),
    (64, 64, 8, 4, 4), (128, 128, 8, 4, 4), (128, 64, 8, 8, 8), (64, 128, 8, 8, 8),
    (128, 128, 8, 8, 4), (128, 128, 8, 16, 8), (256, 128, 8, 16, 8), (128, 256, 8, 8, 16)]]

NCU_METRICS = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "launch__registers_per_thread",
]
# Read too when this ncu knows them (checked with --query-metrics first).
NCU_OPTIONAL = ["smsp__sass_data_bytes_mem_shared_op_ld.sum",
                "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",
                "smsp__sass_inst_executed_op_shared_ld.sum"]


def source(kernel: str) -> str:
    for folder in (HERE, KERNELS):
        p = folder / f"{kernel}.cu"
        if p.exists():
            return p.read_text()
    raise FileNotFoundError(kernel)


def launch_shape(kernel, p, M, N):
    if kernel == "sgemm_tiled":
        t = p["TILE"]
        return (t, t, 1), (N // t, M // t)
    if kernel == "sgemm_coarse":
        threads = p["BN"] * (p["BM"] // p["TM"])
    else:
        threads = (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
    return (threads, 1, 1), (-(-N // p["BN"]), -(-M // p["BM"]))


def compile_all(SourceModule):
    out = []
    for step, kernel, p in SHAPES:
        opts = [f"-D{k}={v}" for k, v in p.items()]
        t0 = time.time()
        mod = SourceModule(source(kernel), options=opts)
        f = mod.get_function(FUNCTIONS[kernel])
        out.append({"step": step, "kernel": kernel, "params": p, "options": opts,
                    "function": f, "module": mod,
                    "registers": int(f.num_regs), "local_bytes": int(f.local_size_bytes),
                    "static_shared_bytes": int(f.shared_size_bytes),
                    "max_threads_per_block": int(f.max_threads_per_block),
                    "compile_s": round(time.time() - t0, 2)})
    return out


def call(e, drv, M, N, K, A, B, C):
    block, grid = launch_shape(e["kernel"], e["params"], M, N)
    if e["kernel"] == "sgemm_tiled":
        e["function"](np.int32(N), A, B, C, block=block, grid=grid)
    else:
        e["function"](np.int32(M), np.int32(N), np.int32(K), A, B, C, block=block, grid=grid)


def event_times(drv, fn, warmup, repeat):
    for _ in range(warmup):
        fn()
    drv.Context.synchronize()
    times = []
    start, end = drv.Event(), drv.Event()
    for _ in range(repeat):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.time_till(end))
    return times


class Cublas:
    """C = A·B (row-major) by cuBLAS: CuPy's `@` if CuPy imports, else libcublas via ctypes."""

    def __init__(self):
        self.cupy = None
        try:
            import cupy
            self.cupy = cupy
            self.library = f"CuPy {cupy.__version__} A @ B"
            return
        except Exception as exc:  # noqa: BLE001 - CuPy is optional
            self.why_not_cupy = str(exc)
        for name in ("libcublas.so", "libcublas.so.13", "libcublas.so.12",
                     "/usr/local/cuda/lib64/libcublas.so"):
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        else:
            raise RuntimeError("neither CuPy nor libcublas is loadable")
        self.handle = ctypes.c_void_p()
        assert self.lib.cublasCreate_v2(ctypes.byref(self.handle)) == 0
        self.library = "cuBLAS cublasSgemm_v2 through ctypes (CuPy not importable)"

    def sgemm(self, n, dA, dB, dC):
        # Row-major C = A B is column-major C^T = B^T A^T: pass B first.
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        st = self.lib.cublasSgemm_v2(self.handle, 0, 0, n, n, n, ctypes.byref(one),
                                     ctypes.c_void_p(int(dB)), n, ctypes.c_void_p(int(dA)), n,
                                     ctypes.byref(zero), ctypes.c_void_p(int(dC)), n)
        assert st == 0, st


def measure(args):
    import pycuda.autoprimaryctx  # noqa: F401  (the primary context, shared with cuBLAS)
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule

    dev = drv.Context.get_device()
    entries = compile_all(SourceModule)
    rng = np.random.default_rng(0)

    # correctness at an odd shape against NumPy
    M, N, K = args.odd
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    for e in entries:
        if e["kernel"] == "sgemm_tiled":
            continue
        C = np.zeros((M, N), np.float32)
        try:
            call(e, drv, M, N, K, drv.In(A), drv.In(B), drv.Out(C))
        except drv.LaunchError as exc:   # e.g. too many registers for the block: keep going
            e["launch_error"] = str(exc)
            print(f"{e['step']:<10} {e['params']}: {exc}", flush=True)
            continue
        e["odd_shape"] = [M, N, K]
        e["odd_shape_relative_error"] = float(np.abs(C - ref).max() / np.abs(ref).max())

    n = args.n
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    dA, dB, dC = drv.to_device(A), drv.to_device(B), drv.mem_alloc(A.nbytes)
    cub = Cublas()
    if cub.cupy is not None:
        cp = cub.cupy
        cA, cB = cp.asarray(A), cp.asarray(B)
        cub_fn = lambda: cA @ cB  # noqa: E731
        Cref = cp.asnumpy(cA @ cB)
    else:
        dR = drv.mem_alloc(A.nbytes)
        cub_fn = lambda: cub.sgemm(n, dA, dB, dR)  # noqa: E731
        cub_fn()
        Cref = drv.from_device(dR, (n, n), np.float32)
    times = event_times(drv, cub_fn, args.warmup, args.repeat)
    if cub.cupy is not None:
        cp.cuda.Device().synchronize()
    cublas = {"library": cub.library, "N": n, "median_ms": float(np.median(times)),
              "gflops": 2.0 * n ** 3 / float(np.median(times)) / 1e6}
    scale = float(np.abs(Cref).max())
    for e in entries:
        if "launch_error" in e:
            continue
        fn = lambda e=e: call(e, drv, n, n, n, dA, dB, dC)  # noqa: E731
        fn()
        C = drv.from_device(dC, (n, n), np.float32)
        e["relative_error_vs_cublas"] = float(np.abs(C - Cref).max() / scale)
        t = event_times(drv, fn, args.warmup, args.repeat)
        e["N"] = n
        e["median_ms"] = float(np.median(t))
        e["q1_ms"], e["q3_ms"] = (float(x) for x in np.percentile(t, [25, 75]))
        e["gflops"] = 2.0 * n ** 3 / e["median_ms"] / 1e6
        e["percent_of_cublas"] = 100.0 * e["gflops"] / cublas["gflops"]
        print(f"{e['step']:<10} {str(e['params']):<58} regs {e['registers']:>3} "
              f"local {e['local_bytes']:>4} B  {e['gflops']:9,.0f} GFLOP/s "
              f"({e['percent_of_cublas']:.1f}% of cuBLAS)", flush=True)
    print(f"cuBLAS     {cublas['gflops']:9,.0f} GFLOP/s ({cublas['library']})", flush=True)
    import pycuda
    info = {"device": dev.name(),
            "compute_capability": ".".join(map(str, dev.compute_capability())),
            "driver": drv.get_driver_version(),
            "cuda_driver_api": ".".join(map(str, drv.get_version())),
            "pycuda": pycuda.VERSION_TEXT, "numpy": np.__version__}
    for e in entries:
        e.pop("function"), e.pop("module")
    return info, entries, cublas


def ncu_child(args):
    """Under ncu: one launch of every shape at --ncu-n (no timing)."""
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule

    entries = compile_all(SourceModule)
    n = args.ncu_n
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    dA, dB, dC = drv.to_device(A), drv.to_device(B), drv.mem_alloc(A.nbytes)
    for e in entries:
        try:
            call(e, drv, n, n, n, dA, dB, dC)
        except drv.LaunchError:
            pass
    drv.Context.synchronize()


def run_ncu(args, out: Path):
    from ncu_counters import parse_ncu_csv

    try:
        q = subprocess.run(["ncu", "--query-metrics"], capture_output=True, text=True,
                           timeout=60)
        known = q.stdout
        (out / "ncu_query_metrics.txt").write_text(known)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"ncu --query-metrics failed: {exc}"}
    metrics = list(NCU_METRICS) + [m for m in NCU_OPTIONAL if m.rsplit(".", 1)[0] in known]
    log = out / "ncu.csv"
    cmd = ["ncu", "--clock-control", "none", "--target-processes", "all", "--csv",
           "--print-units", "base", "--log-file", str(log), "--metrics", ",".join(metrics),
           sys.executable, str(Path(__file__).resolve()), "--ncu-child", "--ncu-n",
           str(args.ncu_n)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.ncu_timeout)
    launches = parse_ncu_csv(log.read_text(errors="replace")) if log.exists() else []
    return {"metrics": metrics, "N": args.ncu_n, "seconds": round(time.time() - t0, 1),
            "returncode": p.returncode, "stderr_tail": p.stderr[-2000:],
            "launches": [{"kernel": k, "metrics": m} for k, m in launches]}


def table(entries, cublas) -> str:
    rows = ["| step | parameters | threads | registers | local B | shared B | GFLOP/s "
            "| % of cuBLAS |",
            "|---|---|---|---|---|---|---|---|"]
    for e in entries:
        block, _ = launch_shape(e["kernel"], e["params"], 64, 64)
        if "launch_error" in e:
            shape = ", ".join(f"{k}={v}" for k, v in e["params"].items())
            rows.append(f"| {e['step']} | {shape} | {block[0]} | {e['registers']} | "
                        f"{e['local_bytes']} | "
                        f"{e['static_shared_bytes']:,} | did not launch | |")
            continue
        rows.append(f"| {e['step']} | {', '.join(f'{k}={v}' for k, v in e['params'].items())} | "
                    f"{block[0] * block[1]} | {e['registers']} | {e['local_bytes']} | "
                    f"{e['static_shared_bytes']:,} | {e['gflops']:,.0f} | "
                    f"{e['percent_of_cublas']:.1f} |")
    rows.append(f"| cuBLAS | {cublas['library']} | | | | | {cublas['gflops']:,.0f} | 100.0 |")
    return "\n".join(rows) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--ncu-n", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--odd", type=lambda t: tuple(int(x) for x in t.split(",")),
                    default=(1000, 1030, 999), help="M,N,K of the odd-shape check")
    ap.add_argument("--no-ncu", action="store_true")
    ap.add_argument("--ncu-timeout", type=float, default=80)
    ap.add_argument("--ncu-child", action="store_true")
    args = ap.parse_args()
    if args.ncu_child:
        return ncu_child(args)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    info, entries, cublas = measure(args)
    result = {"what": "lesson 07 kernels: registers, spills, GFLOP/s at N beside cuBLAS",
              "date": datetime.date.today().isoformat(), "command": " ".join(sys.argv),
              "timing": f"CUDA events, {args.warmup} warm-ups, median of {args.repeat}, "
                        f"inputs on the GPU", **info, "cublas": cublas, "shapes": entries,
              "measure_seconds": round(time.time() - t0, 1)}
    (args.out / "regtile.json").write_text(json.dumps(result, indent=1))
    (args.out / "regtile.md").write_text(table(entries, cublas))
    if not args.no_ncu:
        try:
            result["ncu"] = run_ncu(args, args.out)
        except Exception as exc:  # noqa: BLE001 - keep the timings whatever ncu does
            result["ncu"] = {"error": repr(exc)}
        (args.out / "regtile.json").write_text(json.dumps(result, indent=1))
    print(f"done in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
