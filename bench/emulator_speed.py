"""How fast is tilinglib's CPU emulator? Figures for docs/emulator.md (not a timed test).

    python bench/emulator_speed.py            # all measurements
    python bench/emulator_speed.py --skip-big # without the N=1024 runs
    python bench/emulator_speed.py --compare-ref main --repeat 5   # before/after table

1. The seed's naive and tiled SGEMM at N=64 with 16x16 and 32x32 blocks, one run each, on
   the emulator (counters and race check on) and under Numba's CUDA simulator
   (``NUMBA_ENABLE_CUDASIM=1``; the kernels are ported to Python below, as that simulator
   needs). Target: the emulator >= 600x faster
   (naive, 32x32). Numba is in the ``bench`` extra: ``pip install -e ".[bench]"``.
2. Tiled TILE=32, N=256, counters and race check on. Target: <= 1 s.
3. N=1024 naive and tiled TILE=32 complete (blocks run in batches, so memory stays bounded);
   wall time and peak resident memory are printed.

``--compare-ref GITREV`` instead measures this tree against GITREV (checked out in a
temporary ``git worktree``) in one run: each figure is taken in fresh processes that
alternate between the two trees, ``--repeat`` times, and the best of each is kept, so a
noisy machine slows both alike. Figures: the naive kernel at N=64 (first launch after
compiling, 32x32 blocks) and its speed-up over Numba's simulator, the tiled kernel at N=256
TILE=32, lesson 03's slider (``tilinglib.sgemm.measure_tiled`` at N=128, compile and launch,
for every TILE it offers; target < 0.5 s each), a recompile of ``sgemm_tiled`` with a new
``-D`` (median of 12, each after a slider's launch), and with ``--lessons`` the six lessons
under nbval (``pytest --nbval``, one run per tree and repeat). ``--compare-tree DIR`` does the
same against the files of another checkout (a machine with no git history, e.g. the GPU host).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# A --worker process measures the tree named by TILINGLIB_BENCH_TREE (--compare-ref).
sys.path.insert(0, os.environ.get("TILINGLIB_BENCH_TREE", str(ROOT)))


NUMBA_PORT = r'''
import os, sys, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
from numba import cuda, float32

TILE = int(sys.argv[2])

@cuda.jit
def sgemm_naive(N, A, B, C):
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < N and col < N:
        s = float32(0.0)
        for k in range(N):
            s += A[row * N + k] * B[k * N + col]
        C[row * N + col] = s

@cuda.jit
def sgemm_tiled(N, A, B, C):
    As = cuda.shared.array((TILE, TILE), dtype=float32)
    Bs = cuda.shared.array((TILE, TILE), dtype=float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    s = float32(0.0)
    for t in range(N // TILE):
        As[ty, tx] = A[row * N + (t * TILE + tx)]
        Bs[ty, tx] = B[(t * TILE + ty) * N + col]
        cuda.syncthreads()
        for k in range(TILE):
            s += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    C[row * N + col] = s

N = int(sys.argv[1])
rng = np.random.default_rng(0)
A = rng.standard_normal(N * N).astype(np.float32)
B = rng.standard_normal(N * N).astype(np.float32)
ref = (A.reshape(N, N).astype(np.float64) @ B.reshape(N, N)).reshape(-1)
for name, kern in (("naive", sgemm_naive), ("tiled", sgemm_tiled)):
    C = np.zeros(N * N, np.float32)
    t = time.perf_counter()
    kern[(N // TILE, N // TILE), (TILE, TILE)](np.int32(N), A, B, C)
    dt = time.perf_counter() - t
    assert np.allclose(C, ref, rtol=1e-3, atol=1e-3), name
    print(f"{name} {dt:.3f}")
'''


def numba_times(N: int, tile: int) -> dict | None:
    """Seconds for one naive and one tiled launch under Numba's CUDA simulator."""
    try:
        import numba  # noqa: F401
    except ImportError:
        print("numba is not installed (pip install -e '.[bench]'): skipping the comparison")
        return None
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, "-c", NUMBA_PORT, str(N), str(tile)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print("Numba's simulator failed:\n" + proc.stderr[-2000:])
        return None
    return {ln.split()[0]: float(ln.split()[1]) for ln in proc.stdout.splitlines() if ln}


def emulator_time(kernel: str, N: int, tile: int, repeat: int = 1) -> tuple[float, object]:
    """Best of `repeat` wall times of one emulated launch (counters and race check on);
    `emulator_time.first` keeps the first launch's time (module compiled beforehand)."""
    from tilinglib import kernels
    from tilinglib.emulator import In, Out, SourceModule

    name = {"naive": ("sgemm_naive", "sgemmNaive"), "tiled": ("sgemm_tiled", "sgemmTiled")}
    src, fn = name[kernel]
    f = SourceModule(kernels.load(src), options=[f"-DTILE={tile}"]).get_function(fn)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((N, N)).astype(np.float32)
    B = rng.standard_normal((N, N)).astype(np.float32)
    best = float("inf")
    for _ in range(repeat):
        C = np.zeros((N, N), np.float32)
        t = time.perf_counter()
        f(np.int32(N), In(A), In(B), Out(C), block=(tile, tile, 1),
          grid=(N // tile, N // tile), hazards="warn", check_uninitialized=True)
        dt = time.perf_counter() - t
        if best == float("inf"):
            emulator_time.first = dt
        best = min(best, dt)
    err = np.abs(C - A.astype(np.float64) @ B).max()
    assert err < 1e-2 * np.sqrt(N), f"{kernel} N={N}: max error {err}"
    return best, f.last_report


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def compare_with_numba(tile: int, skip_numba: bool) -> None:
    """Section 1 for one block shape (tile x tile threads for both kernels)."""
    print(f"\n1. N=64, {tile}x{tile} blocks (TILE={tile}), one launch each (emulator: first "
          f"launch after compiling, and best of 3)")
    emu, first = {}, {}
    for k in ("naive", "tiled"):
        emu[k] = emulator_time(k, 64, tile, repeat=3)[0]
        first[k] = emulator_time.first
    sim = None if skip_numba else numba_times(64, tile)
    for k in ("naive", "tiled"):
        line = f"   {k}: emulator {first[k] * 1000:6.1f} ms first, {emu[k] * 1000:6.1f} ms best"
        if sim:
            line += (f"   Numba simulator {sim[k]:6.2f} s   speed-up {sim[k] / first[k]:5.0f}x "
                     f"(first) {sim[k] / emu[k]:5.0f}x (best)")
        print(line)


# ----------------------------------------------------------------------------- --compare-ref

SLIDER_N = 128


def worker(what: str) -> dict:
    """One measurement in this process (of the tree on sys.path[0]); seconds by name."""
    import warnings
    warnings.simplefilter("ignore")
    if what == "naive":
        best, _ = emulator_time("naive", 64, 32, repeat=5)
        return {"naive N=64 32x32 (first)": emulator_time.first,
                "naive N=64 32x32 (best of 5)": best}
    if what == "tiled":
        t, _ = emulator_time("tiled", 256, 32)
        return {"tiled N=256 TILE=32": t}
    if what == "slider":
        os.environ["TILINGLIB_BACKEND"] = "emulator"
        from tilinglib import sgemm
        out = {}
        sgemm.measure_tiled(SLIDER_N, 16)          # imports and first compile outside
        from tilinglib import kernels
        from tilinglib.backend import get_backend
        src, times = kernels.load("sgemm_tiled"), []
        for i in range(12):                        # a new -D each time: never a cached one
            t = time.perf_counter()
            get_backend().SourceModule(src, options=[f"-DTILE={40 + i}"])
            times.append(time.perf_counter() - t)
            sgemm.measure_tiled(SLIDER_N, 32)      # as a slider does between two compiles
        out["compile sgemm_tiled (median of 12)"] = sorted(times)[len(times) // 2]
        for tile in sgemm.valid_tiles(SLIDER_N):
            t = time.perf_counter()
            sgemm.measure_tiled(SLIDER_N, tile)
            out[f"slider N={SLIDER_N} TILE={tile}"] = time.perf_counter() - t
        return out
    raise SystemExit(f"unknown measurement {what!r}")


def _run_worker(tree: Path, what: str) -> dict:
    path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, TILINGLIB_BENCH_TREE=str(tree), PYTHONPATH=path)
    proc = subprocess.run([sys.executable, __file__, "--worker", what], capture_output=True,
                          text=True, env=env, cwd=tree)
    if proc.returncode != 0:
        raise SystemExit(f"measurement {what} failed in {tree}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def _run_lessons(tree: Path) -> dict:
    """Seconds for the six lessons under nbval, on the emulator, with `tree`'s tilinglib
    (PYTHONPATH reaches the notebook kernels) and `tree`'s notebooks."""
    path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, TILINGLIB_BACKEND="emulator")
    nbs = sorted(str(p) for p in (tree / "notebooks").glob("0*.ipynb"))
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--nbval", *nbs], capture_output=True, text=True, env=env, cwd=tree)
    dt = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"nbval failed in {tree}:\n{proc.stdout[-3000:]}")
    return {"six lessons under nbval": dt}


def compare(ref: str, repeat: int, lessons: bool, skip_numba: bool) -> None:
    """Print before (GITREV) / after (this tree) / ratio for the figures of --compare-ref."""
    tmp = Path(tempfile.mkdtemp(prefix="tilinglib-ref-"))
    base = tmp / "ref"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), ref],
                   check=True)
    try:
        rev = subprocess.run(["git", "-C", str(base), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        compare_trees(base, f"{ref} ({rev})", repeat, lessons, skip_numba)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)])
        shutil.rmtree(tmp, ignore_errors=True)


def compare_trees(base: Path, label: str, repeat: int, lessons: bool,
                  skip_numba: bool) -> None:
    """Print before (the tree `base`) / after (this tree) / ratio, each figure the best of
    `repeat` fresh processes alternating between the two trees."""
    print(f"before: {label} in {base}; after: {ROOT}; best of {repeat}, alternating")
    best = {"before": {}, "after": {}}
    jobs = ["naive", "tiled", "slider"] + (["lessons"] if lessons else [])
    for i in range(repeat):
        for which, tree in ((("before", base), ("after", ROOT)) if i % 2 == 0
                            else (("after", ROOT), ("before", base))):
            for job in jobs:
                got = _run_lessons(tree) if job == "lessons" else _run_worker(tree, job)
                for k, v in got.items():
                    best[which][k] = min(v, best[which].get(k, float("inf")))
    sim = None if skip_numba else numba_times(64, 32)
    width = max(len(k) for k in best["after"])
    print(f"\n{'figure':<{width}}  {'before s':>9}  {'after s':>9}  {'before/after':>12}")
    for k, after in best["after"].items():
        before = best["before"][k]
        print(f"{k:<{width}}  {before:9.3f}  {after:9.3f}  {before / after:11.2f}x")
    if sim:
        print(f"\nNumba's CUDA simulator, naive N=64 32x32: {sim['naive']:.2f} s "
              f"(target: the emulator >= 600x faster)")
        for k in ("naive N=64 32x32 (first)", "naive N=64 32x32 (best of 5)"):
            print(f"  emulator {k[17:]}: {sim['naive'] / best['before'][k]:.0f}x before, "
                  f"{sim['naive'] / best['after'][k]:.0f}x after")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--skip-big", action="store_true", help="skip the N=1024 runs")
    p.add_argument("--skip-numba", action="store_true")
    p.add_argument("--compare-ref", metavar="GITREV",
                   help="measure this tree against GITREV (before/after table)")
    p.add_argument("--compare-tree", metavar="DIR",
                   help="as --compare-ref, against the files of another checkout in DIR "
                        "(e.g. made with: git archive REV | tar -x -C DIR), for a machine "
                        "with no git history")
    p.add_argument("--repeat", type=int, default=3,
                   help="runs per tree with --compare-ref/--compare-tree")
    p.add_argument("--lessons", action="store_true",
                   help="with --compare-ref: also time the six lessons under nbval")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0
    if args.compare_ref:
        compare(args.compare_ref, args.repeat, args.lessons, args.skip_numba)
        return 0
    if args.compare_tree:
        compare_trees(Path(args.compare_tree).resolve(), args.compare_tree, args.repeat,
                      args.lessons, args.skip_numba)
        return 0
    print(f"CPU: {os.cpu_count()} cores; numpy {np.__version__}")

    for tile in (16, 32):
        compare_with_numba(tile, args.skip_numba)

    print("\n2. Tiled TILE=32, N=256, counters and race check on (best of 3)")
    t, report = emulator_time("tiled", 256, 32, repeat=3)
    print(f"   {t:.3f} s  (target <= 1 s); {report.global_load_requests:,} global load "
          f"requests, {report.shared_load_instructions:,} shared load instructions")

    if not args.skip_big:
        print("\n3. N=1024 (blocks in batches: bounded memory)")
        for k, tile in (("naive", 32), ("tiled", 32)):
            t, report = emulator_time(k, 1024, tile)
            print(f"   {k}: {t:6.1f} s, {report.global_load_requests:,} global load requests; "
                  f"peak RSS so far {peak_rss_mb():.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
