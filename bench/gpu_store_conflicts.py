"""Where do the unpadded tiled kernel's ~250k shared-store bank conflicts come from?

Lesson 05 reads them from the reference data (about 6% of the stores at TILE = 16, 11% at
TILE = 32, N = 1024), where the bank model and the emulator find none, and explains them as
contention with the L1 cache's traffic in the same SRAM banks: the transpose, whose loads
never hit L1, reads 0, and the double-buffered kernel, which stores after its loop, about 0.
This script tests that explanation on a GPU, with three versions of lesson 03's kernel that
differ only in how the tiles' global loads reach the stores:

- ``as is``: ``As[ty][tx] = A[...]`` (the course's kernel; loads through L1);
- ``L2 only``: the same loads through ``__ldcg`` (cached in L2, not in L1: no L1 hits, so no
  L1 traffic in the banks while the stores run);
- ``stores apart``: the loads into registers, a ``__syncthreads()``, then the stores (no
  load of the block is in flight while its stores run).

If the explanation holds, ``L2 only`` has (almost) no store conflicts and ``stores apart``
far fewer than ``as is``; the conflicts per store of the padded TILE = 16 kernel (the real
2-way conflict) stay at about 1 in every version. Run on a GPU machine with PyCUDA and
Nsight Compute (``ncu``) on PATH:

    TILINGLIB_BACKEND=pycuda python3 bench/gpu_store_conflicts.py [--N 1024]

It prints one row per kernel and TILE: stores, store wavefronts, conflicts, conflicts per
store, L1 hit sectors (global sectors minus those read from L2) and whether C is right.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tilinglib.toolchain.measure import metrics as ncu_names  # noqa: E402  (the names, once)

METRICS = [ncu_names.REPORT_METRICS["shared_store_instructions"],
           ncu_names.REPORT_METRICS["shared_store_wavefronts"],
           ncu_names.REPORT_METRICS["shared_store_bank_conflicts"],
           ncu_names.REPORT_METRICS["global_load_sectors"],
           ncu_names.L2_SECTORS_READ]

LOADS = "As[ty][tx] = A[row * N + (t * TILE + tx)];\n        Bs[ty][tx] = B[(t * TILE + ty) * N + col];"
VARIANTS = {
    "as is": LOADS,
    "L2 only": ("As[ty][tx] = __ldcg(&A[row * N + (t * TILE + tx)]);\n"
                "        Bs[ty][tx] = __ldcg(&B[(t * TILE + ty) * N + col]);"),
    "stores apart": ("float a_t = A[row * N + (t * TILE + tx)];\n"
                     "        float b_t = B[(t * TILE + ty) * N + col];\n"
                     "        __syncthreads();\n"
                     "        As[ty][tx] = a_t;\n"
                     "        Bs[ty][tx] = b_t;"),
}
CASES = [(name, tile, pad) for name in VARIANTS for tile, pad in ((16, 0), (32, 0), (16, 1))]


def source(variant: str) -> str:
    from tilinglib import kernels

    src = kernels.load("sgemm_tiled")
    assert src.count(LOADS) == 1, "sgemm_tiled.cu changed: update bench/gpu_store_conflicts.py"
    return src.replace(LOADS, VARIANTS[variant])


def child(N: int) -> int:
    """Under ncu: launch every case once, in CASES order; print whether each C is right."""
    import numpy as np

    import tilinglib as tl

    A, B = tl.sgemm.random_matrices(N, seed=0)
    for name, tile, pad in CASES:
        f = tl.SourceModule(source(name), options=[f"-DTILE={tile}", f"-DPAD={pad}"]) \
            .get_function("sgemmTiled")
        C = np.zeros_like(A)
        f(np.int32(N), tl.In(A), tl.In(B), tl.Out(C), block=(tile, tile, 1),
          grid=(N // tile, N // tile))
        print(f"CASE {name}|{tile}|{pad}|{tl.sgemm.relative_error(C, A, B) < 1e-4}", flush=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--N", type=int, default=1024)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args.N)
    if shutil.which("ncu") is None:
        raise SystemExit("ncu (Nsight Compute) is not on PATH: run this on the GPU machine")
    cmd = ["ncu", "--clock-control", "none", "--csv", "--print-units", "base",
           "--metrics", ",".join(METRICS), sys.executable, __file__, "--child", "--N",
           str(args.N)]
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, TILINGLIB_BACKEND="pycuda"))
    if proc.returncode:
        raise SystemExit(f"ncu failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    right = [line.split("|")[-1] for line in proc.stdout.splitlines() if line.startswith("CASE ")]
    rows = [r for r in csv.DictReader(io.StringIO(
        "\n".join(line for line in proc.stdout.splitlines() if line.startswith('"'))))]
    values: dict = {}
    for r in rows:
        values.setdefault(r["ID"], {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    launches = [values[k] for k in sorted(values, key=int)]
    if len(launches) != len(CASES):
        raise SystemExit(f"ncu profiled {len(launches)} launches, expected {len(CASES)}")
    print(f"N = {args.N}; ncu --clock-control none")
    print(f"{'kernel':<28} {'stores':>10} {'wavefronts':>10} {'conflicts':>10} {'per store':>9}"
          f" {'L1 hit sectors':>14}  C right")
    for (name, tile, pad), m, ok in zip(CASES, launches, right):
        st, wf, cf = (m[k] for k in METRICS[:3])
        hits = m[METRICS[3]] - m[METRICS[4]]
        label = f"{name}, TILE {tile}" + (" pad" if pad else "")
        print(f"{label:<28} {st:>10,.0f} {wf:>10,.0f} {cf:>10,.0f} {cf / st:>9.3f} "
              f"{hits:>14,.0f}  {ok}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
