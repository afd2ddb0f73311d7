"""The ladder at every size: lesson 08's kernels and the tuned one, beside cuBLAS, on one GPU.

    python3 bench/ladder_sizes.py                      # the full sweep (--budget: 420 s of it)
    python3 bench/ladder_sizes.py --quick              # the defaults and a few tuned shapes
    python3 bench/ladder_sizes.py --dry-run [--quick]  # no GPU: list, and run each on the emulator
    python3 bench/ladder_sizes.py --configs second \
        --merge-into tilinglib/data/ladder_sizes_h200.json  # a targeted sweep, added to the data

For every configuration of `tilinglib.tile_choice.sweep_configurations` (the valid shapes of
vec4, warptile and warptile_db, and of the tuned kernel with its switches and split-K) and
every size of `tile_choice.SIZES` (N = 1024, 2048, 4096, 8192 and 1500 x 2500 x 3000):

1. compile with nvcc for the GPU's architecture, as PyCUDA's SourceModule does (in parallel,
   `tilinglib.devtools.bench.compile_cubin`), keeping ptxas's report: registers per thread, spill
   stores and loads; the loaded function's ``num_regs`` and ``local_size_bytes`` beside it;
2. check C once at 1000 x 1003 x 999 (every edge path) and once at each size, against a
   float64 product (CuPy), as the largest |error| over the largest |entry|; a configuration is
   *correct* when both are under `tile_choice.MAX_RELATIVE_ERROR`;
3. time it: `--warmup` launches, then the median of `--repeat` batches of back-to-back
   launches (each batch at least 1 ms long, so that no launch overhead sits between the CUDA
   events), inputs already on the GPU; a split-K launch is timed with the zeroing of C it
   needs (``cuMemsetD32Async`` before each launch);
4. time cuBLAS (CuPy's ``A @ B``, float32, the same batches) before each size, every
   `CUBLAS_EVERY` configurations and after, in the same process: the figure a row is compared
   with is the median of that size's cuBLAS timings.

Writes `--out` (default ``tilinglib/data/`` + `tile_choice.DATA_FILE`, the format in
`tilinglib.tile_choice`'s docstring, read by `tile_choice.load_sizes`) and `--log` (the printed
table), and prints per size the best of each step, with % of cuBLAS, shape and registers, and
the course's choice (`tile_choice.pick_per_size` on the new data). `--budget` seconds bound
the timing (shared out over the sizes; what is left untimed is listed): a run always ends
with its files written.

``--configs second`` times `tile_choice.second_sweep_configurations` instead, each at its own
sizes (chosen from the first sweep's log); ``--configs third`` times
`tile_choice.third_sweep_configurations` (128 x 128 tiles of 256 threads, run 2 of the data);
``--configs fourth`` `tile_choice.fourth_sweep_configurations` (the FAST, PINGPONG and
TAILWAVE switches at every size, run 3); ``--configs best`` each step's fastest configuration
per size in the data (`best_configurations`), timed again in one run: write it with ``--out``
to a file of its own, not into the course's data. ``--merge-into FILE`` adds the run to the runs
already in FILE (`tile_choice.merge_sizes`: its rows and cuBLAS timings marked with a new run
number, every row compared with cuBLAS of its own run) and writes the whole to `--out`
(default: FILE itself); the summary and the course's choice are then made on all the runs.

``--dry-run`` needs no GPU: it lists the configurations and runs each once on the CPU
emulator at a small odd shape (one block's edge cut in every direction, K over two tiles per
chunk), with integer-valued inputs, against NumPy exactly; ``--ptxas`` adds nvcc's report
for sm_90 (registers, spills) where nvcc is installed.

Needs on the GPU: PyCUDA, CuPy, nvcc, and this repository on PYTHONPATH (``.gpu/setup.sh``).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tilinglib import kernels, ladder, tile_choice  # noqa: E402
from tilinglib.devtools import bench  # noqa: E402

ODD = (1000, 1003, 999)
CUBLAS_EVERY = 20
BATCH_MS = 1.0
MAX_BATCH = 64


CONFIGS = ("full", "quick", "second", "third", "fourth", "best")


def best_configurations(data=None):
    """[(step, params, sizes)]: for every size of `tile_choice.SIZES`, the fastest usable
    configuration of each of vec4, warptile, warptile_db and tuned in the course's data (any
    run; `SizesData.best`), a configuration that wins at several sizes listed once with them
    all: ``--configs best`` times the course's table again in one run (not merged)."""
    data = tile_choice.load_sizes() if data is None else data
    configs: list[tuple[str, dict, list]] = []
    for size in tile_choice.SIZES:
        for step in ("vec4", "warptile", "warptile_db", "tuned"):
            r = data.best(*size, step) if data is not None else None
            if r is None:
                continue
            p = ladder.get(step).resolve(r["params"])
            same = [c for c in configs if c[0] == step and c[1] == p]
            if same:
                same[0][2].append(size)
            else:
                configs.append((step, p, [size]))
    return [(n, p, tuple(s)) for n, p, s in configs]


def configurations(which: str = "full"):
    """[(step, params, sizes)] of a sweep: ``full`` and ``quick``
    (`tile_choice.sweep_configurations`, every one at every size of `tile_choice.SIZES`) or
    ``second`` / ``third`` (`tile_choice.second_sweep_configurations` /
    `third_sweep_configurations`, each at its own sizes)."""
    if which == "second":
        return tile_choice.second_sweep_configurations()
    if which == "third":
        return tile_choice.third_sweep_configurations()
    if which == "fourth":
        return tile_choice.fourth_sweep_configurations()
    if which == "best":
        return best_configurations()
    if which not in CONFIGS:
        raise ValueError(f"configs={which!r}: one of {', '.join(CONFIGS)}")
    return [(n, p, tuple(tile_choice.SIZES))
            for n, p in tile_choice.sweep_configurations(quick=which == "quick")]


def sizes_of(configs) -> list[tuple]:
    """The sizes a list of `configurations` times, in the order of `tile_choice.SIZES` (any
    other after them, in order of first appearance)."""
    seen = []
    for _, _, sizes in configs:
        seen += [tuple(s) for s in sizes if tuple(s) not in seen]
    order = [tuple(s) for s in tile_choice.SIZES]
    return sorted(seen, key=lambda s: (order.index(s) if s in order else len(order),
                                       seen.index(s)))


def config_label(step: str, params) -> str:
    """The row's label in the printed tables (`tile_choice.shape_label`)."""
    return tile_choice.shape_label(step, params)


def document(info: dict, rows: list, cublas: list, sizes, command: str) -> dict:
    """The data file's contents (format: `tilinglib.tile_choice`'s docstring) from the run's
    `info` (device, software, settings, date), its `rows` and `cublas` timings."""
    return {"format": "tilinglib-ladder-sizes", "format_version": 1,
            "description": "Lesson 08's kernels and the tuned kernel at every size, beside "
                           "cuBLAS in one process (bench/ladder_sizes.py).",
            "device": info["device"], "software": info["software"], "date": info["date"],
            "command": command, "settings": info["settings"],
            "sizes": [list(s) for s in sizes], "cublas": cublas, "rows": rows}


def summary(data, log=print) -> dict:
    """Print, per size of the data (a `tile_choice.SizesData`), the fastest correct row of
    each step (of any run) with its % of cuBLAS (its own run's), shape and registers, and the
    course's choice; returns
    {(M, N, K): Choice}. Also the table the issue's closing note asks for."""
    choices = {}
    several = len(data.runs) > 1
    for M, N, K in data.sizes:
        cubs = [(run["run"], data.cublas(M, N, K, run=run["run"])) for run in data.runs]
        cubs = [(i, c) for i, c in cubs if c]
        text = ", ".join(f"{c:,.0f} GFLOP/s" + (f" (run {i})" if several else "")
                         for i, c in cubs)
        log(f"\n{M} x {N} x {K}: cuBLAS {text}" if cubs else f"\n{M} x {N} x {K}")
        log(f"  {'step':<12} {'GFLOP/s':>8} {'cuBLAS':>7} {'regs':>5} {'spill':>6}"
            f"{' run' if several else ''}  shape")
        for step in ("vec4", "warptile", "warptile_db", "tuned"):
            r = data.best(M, N, K, step)
            if r is None:
                continue
            pct = data.percent_of_cublas(r)
            pct = f"{pct:6.1f}%" if pct else "      -"
            spill = (r.get("spill_stores") or 0) + (r.get("spill_loads") or 0)
            run = f" {tile_choice.run_of(r):>3}" if several else ""
            log(f"  {step:<12} {r['gflops']:>8,.0f} {pct} {r.get('registers') or '-':>5} "
                f"{spill:>6}{run}  {config_label(step, r['params'])}")
        if data.best(M, N, K) is not None:
            c = tile_choice.pick_per_size(N, M=M, K=K, data=data)
            pct = f", {c.percent_of_cublas:.1f}% of cuBLAS" if c.percent_of_cublas else ""
            log(f"  the course's choice: {config_label(c.step, c.params)}, "
                f"{c.gflops:,.0f} GFLOP/s{pct}")
            choices[(M, N, K)] = c
    wrong = [r for r in data.rows if "gflops" in r and not r.get("correct")]
    spilled = [r for r in data.rows if (r.get("spill_stores") or 0) + (r.get("spill_loads") or 0)]
    log(f"\n{len(wrong)} timed rows incorrect; {len(spilled)} rows with register spills")
    for r in wrong[:10]:
        log(f"  incorrect: {config_label(r['step'], r['params'])} at {r['M']}x{r['N']}x{r['K']}: "
            f"errors {r.get('max_relative_error')}, {r.get('odd_shape_relative_error')}")
    return choices


# -- the dry run (CPU emulator) -----------------------------------------------------------

def dry_run(configs, ptxas: bool, log=print) -> int:
    """List `configs`, run each once on the emulator at a small odd shape against NumPy
    exactly (integer-valued inputs), and with `ptxas` show nvcc's sm_90 report. Returns the
    number of failures (0: all exact)."""
    from tilinglib.emulator import In, InOut, Out, SourceModule

    sizes = sizes_of(configs)
    log(f"{len(configs)} configurations, {sum(len(c[2]) for c in configs)} (configuration, "
        f"size) pairs over {len(sizes)} sizes ({', '.join('x'.join(map(str, s)) for s in sizes)})")
    reports = {}
    if ptxas:
        with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            futures = {i: pool.submit(bench.ptxas_report, kernels.load(ladder.get(n).kernel),
                                      ladder.get(n).defines(p), "sm_90")
                       for i, (n, p, _) in enumerate(configs)}
            reports = {i: f.result() for i, f in futures.items()}
    failures = 0
    rng = np.random.default_rng(0)
    for i, (name, p, _) in enumerate(configs):
        step = ladder.get(name)
        M, N = min(p["BM"], 32) + 3, min(p["BN"], 32) + 5
        K = 2 * p["BK"] * p.get("SPLITK", 1) + 1
        A = rng.integers(-4, 5, (M, K)).astype(np.float32)
        B = rng.integers(-4, 5, (K, N)).astype(np.float32)
        C = np.zeros((M, N), np.float32)
        t = time.time()
        f = SourceModule(kernels.load(step.kernel), options=step.defines(p)).get_function(
            step.function)
        f(np.int32(M), np.int32(N), np.int32(K), In(A), In(B),
          (InOut if step.adds_into_c(p) else Out)(C), block=step.block(p),
          grid=step.grid(M, N, p))
        ok = bool(np.array_equal(C, A @ B))
        failures += not ok
        extra = ""
        if ptxas:
            r = reports[i]
            extra = (f"  ptxas sm_90: {r['registers']} registers, spills "
                     f"{r['spill_stores']}/{r['spill_loads']} B" if "registers" in r
                     else f"  ptxas: {r['error'][-200:]}")
        log(f"{i + 1:>4} {config_label(name, p):<72} emulator {M}x{N}x{K}: "
            f"{'exact' if ok else 'WRONG'} ({time.time() - t:.1f} s){extra}")
    log(f"dry run: {len(configs) - failures} of {len(configs)} exact on the emulator")
    return failures


# -- the GPU run ----------------------------------------------------------------------------

class _Gpu:
    """PyCUDA (the kernels) and CuPy (inputs, references, cuBLAS) in one primary context."""

    def __init__(self):
        import pycuda.autoprimaryctx  # noqa: F401  (the primary context, which CuPy uses too)
        import pycuda.driver as drv
        import cupy as cp

        self.drv, self.cp = drv, cp
        self.dev = drv.Context.get_device()
        cc = self.dev.compute_capability()
        self.arch = f"sm_{cc[0]}{cc[1]}"
        self.cc = f"{cc[0]}.{cc[1]}"
        self.sms = self.dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)

    def time_batches(self, launch, warmup: int, repeat: int) -> list[float]:
        """Milliseconds per launch: `warmup` launches, then `repeat` batches of back-to-back
        launches between two events (each batch at least BATCH_MS long)."""
        drv = self.drv
        for _ in range(warmup):
            launch()
        start, end = drv.Event(), drv.Event()
        start.record()
        launch()
        end.record()
        end.synchronize()
        one = max(start.time_till(end), 1e-3)
        inner = int(min(MAX_BATCH, max(1, np.ceil(BATCH_MS / one))))
        times = []
        for _ in range(repeat):
            start.record()
            for _ in range(inner):
                launch()
            end.record()
            end.synchronize()
            times.append(start.time_till(end) / inner)
        return times

    def inputs(self, M, N, K, seed):
        cp = self.cp
        rng = np.random.default_rng(seed)
        A = cp.asarray(rng.standard_normal((M, K), dtype=np.float32))
        B = cp.asarray(rng.standard_normal((K, N), dtype=np.float32))
        ref = A.astype(cp.float64) @ B.astype(cp.float64)
        return A, B, ref, float(cp.abs(ref).max())

    def error(self, C, ref, scale) -> float:
        cp = self.cp
        if not bool(cp.isfinite(C).all()):
            return float("inf")
        return float(cp.abs(C.astype(cp.float64) - ref).max()) / scale


def _launcher(gpu, f, step, p, M, N, K, A, B, C):
    drv = gpu.drv
    block, grid = step.block(p), step.grid(M, N, p)
    grid = tuple(grid) + (1,) * (3 - len(grid))
    args = (np.int32(M), np.int32(N), np.int32(K), np.uintp(A.data.ptr), np.uintp(B.data.ptr),
            np.uintp(C.data.ptr))
    if step.adds_into_c(p):
        def go():
            drv.memset_d32_async(int(C.data.ptr), 0, M * N)
            f.prepared_call(grid, block, *args)
    else:
        def go():
            f.prepared_call(grid, block, *args)
    return go


def _nvcc_version() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    return out.strip().splitlines()[-1] if out.strip() else None


def gpu_run(configs, args, log) -> dict:
    """The measurements (module docstring); returns the data file's contents."""
    gpu = _Gpu()
    cp, drv = gpu.cp, gpu.drv
    t0 = time.time()
    sizes = sizes_of(configs)
    log(f"device {gpu.dev.name()} ({gpu.sms} SMs, {gpu.arch}), {len(configs)} configurations, "
        f"{sum(len(c[2]) for c in configs)} (configuration, size) pairs over {len(sizes)} "
        f"sizes, budget {args.budget:.0f} s")
    sources = {ladder.get(n).kernel: kernels.load(ladder.get(n).kernel) for n, _, _ in configs}
    with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        compiled = list(pool.map(
            lambda c: bench.compile_cubin(sources[ladder.get(c[0]).kernel],
                                          ladder.get(c[0]).defines(c[1]), gpu.arch), configs))
    log(f"compiled in {time.time() - t0:.0f} s")
    functions, rows_of = {}, {}
    Ao, Bo, refo, scaleo = gpu.inputs(*ODD, seed=7)
    for i, ((name, p, _), (cubin, report)) in enumerate(zip(configs, compiled)):
        step = ladder.get(name)
        base = {"step": name, "kernel": step.kernel, "params": dict(p)}
        if cubin is None:
            base["compile_error"] = report.get("error", "")[-400:]
            log(f"!! {config_label(name, p)}: compile error {base['compile_error'][-200:]}")
            rows_of[i] = base
            continue
        f = drv.module_from_buffer(cubin).get_function(step.function)
        f.prepare("iiiPPP")
        functions[i] = f
        base.update(registers=int(f.num_regs), local_bytes=int(f.local_size_bytes),
                    static_shared_bytes=int(f.shared_size_bytes),
                    spill_stores=report["spill_stores"], spill_loads=report["spill_loads"],
                    stack_bytes=report["stack_bytes"], block=list(step.block(p)))
        Co = cp.zeros((ODD[0], ODD[1]), dtype=cp.float32)
        _launcher(gpu, f, step, p, ODD[0], ODD[1], ODD[2], Ao, Bo, Co)()
        cp.cuda.Device().synchronize()
        base["odd_shape_relative_error"] = gpu.error(Co, refo, scaleo)
        rows_of[i] = base
    del Ao, Bo, refo

    rows, cublas_runs, untimed = [], [], []

    def time_cublas(M, N, K, A, B, when):
        out = cp.empty((M, N), dtype=cp.float32)
        times = gpu.time_batches(lambda: cp.matmul(A, B, out=out), args.warmup, args.repeat)
        ms = float(np.median(times))
        cublas_runs.append({"M": M, "N": N, "K": K, "gflops": round(2 * M * N * K / ms / 1e6, 1),
                            "median_ms": round(ms, 5), "when": when,
                            "library": f"CuPy {cp.__version__} A @ B (cuBLAS)"})
        log(f"cuBLAS {M}x{N}x{K} ({when}): {cublas_runs[-1]['gflops']:,.0f} GFLOP/s")

    for s_index, (M, N, K) in enumerate(sizes):
        left = args.budget - (time.time() - t0)
        deadline = time.time() + left / (len(sizes) - s_index)
        A, B, ref, scale = gpu.inputs(M, N, K, seed=M + N + K)
        C = cp.zeros((M, N), dtype=cp.float32)
        time_cublas(M, N, K, A, B, "before")
        timed_here = []
        for i, (name, p, at) in enumerate(configs):
            if i not in functions or (M, N, K) not in {tuple(s) for s in at}:
                continue
            if time.time() > deadline:
                untimed.append((M, N, K, name, p))
                continue
            step = ladder.get(name)
            go = _launcher(gpu, functions[i], step, p, M, N, K, A, B, C)
            C.fill(cp.nan)
            go()
            cp.cuda.Device().synchronize()
            err = gpu.error(C, ref, scale)
            times = gpu.time_batches(go, args.warmup, args.repeat)
            ms = float(np.median(times))
            row = dict(rows_of[i], M=M, N=N, K=K, grid=list(step.grid(M, N, p)),
                       max_relative_error=err, median_ms=round(ms, 5),
                       q1_ms=round(float(np.percentile(times, 25)), 5),
                       q3_ms=round(float(np.percentile(times, 75)), 5),
                       gflops=round(2 * M * N * K / ms / 1e6, 1))
            row["correct"] = bool(err < tile_choice.MAX_RELATIVE_ERROR and
                                  row["odd_shape_relative_error"] < tile_choice.MAX_RELATIVE_ERROR)
            rows.append(row)
            timed_here.append(row)
            log(f"{M}x{N}x{K} {config_label(name, p):<72} regs={row['registers']:<3} "
                f"spill={row['spill_stores']}/{row['spill_loads']} err={err:.1e}/"
                f"{row['odd_shape_relative_error']:.1e} {row['gflops']:>9,.0f} GFLOP/s")
            if len(timed_here) % CUBLAS_EVERY == 0:
                time_cublas(M, N, K, A, B, "between")
        time_cublas(M, N, K, A, B, "after")
        med = float(np.median([c["gflops"] for c in cublas_runs if (c["M"], c["N"], c["K"]) ==
                               (M, N, K)]))
        for row in timed_here:
            row["cublas_gflops"] = round(med, 1)
        del A, B, ref, C
        cp.get_default_memory_pool().free_all_blocks()
    rows += [r for i, r in rows_of.items() if "compile_error" in r]
    if untimed:
        log(f"!! time budget spent: {len(untimed)} (size, configuration) pairs left untimed, "
            f"e.g. {untimed[0][:3]} {config_label(*untimed[0][3:])}")
    import pycuda

    info = {"device": {"name": gpu.dev.name(), "compute_capability": gpu.cc, "sms": gpu.sms},
            "software": {"cuda_driver_api": ".".join(map(str, drv.get_version())),
                         "driver": drv.get_driver_version(), "pycuda": pycuda.VERSION_TEXT,
                         "cupy": cp.__version__, "nvcc": _nvcc_version(),
                         "python": platform.python_version(), "numpy": np.__version__},
            "date": datetime.date.today().isoformat(),
            "settings": {"warmup": args.warmup, "repeat": args.repeat,
                         "statistic": f"median of {args.repeat} batches of back-to-back "
                                      f"launches (each batch >= {BATCH_MS} ms), per launch",
                         "split_k_timing": "cuMemsetD32Async of C + the kernel, per launch",
                         "validation": f"float64 product (CuPy) at each size and at "
                                       f"{'x'.join(map(str, ODD))}; correct: both relative "
                                       f"errors < {tile_choice.MAX_RELATIVE_ERROR}",
                         "cublas": f"CuPy A @ B, float32, timed before each size, every "
                                   f"{CUBLAS_EVERY} configurations and after",
                         "inputs": "float32, random normal (numpy default_rng)",
                         "clocks": "as found (no clock control)", "quick": bool(args.quick),
                         "configs": args.configs,
                         "untimed": len(untimed), "seconds": round(time.time() - t0)}}
    command = "python3 bench/ladder_sizes.py" + (" --quick" if args.quick else "") + \
        (f" --configs {args.configs}" if args.configs != "full" else "")
    return document(info, rows, cublas_runs, sizes, command)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the defaults and a few tuned shapes")
    ap.add_argument("--configs", choices=CONFIGS, default=None,
                    help="which configurations: full (the default), quick (= --quick), or "
                         "second / third / fourth (tile_choice.second_sweep_configurations / "
                         "third_ / fourth_sweep_configurations, each at its sizes), or best "
                         "(each step's fastest per size in the data, again in one run)")
    ap.add_argument("--merge-into", metavar="FILE", default=None,
                    help="add this run to the runs in FILE (a sizes data file) and write them "
                         "all to --out (default: FILE)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: list the configurations and run each once on the emulator")
    ap.add_argument("--ptxas", action="store_true",
                    help="with --dry-run: nvcc's sm_90 report for each (needs nvcc)")
    ap.add_argument("--out", default=None,
                    help="the data file written (default: --merge-into's FILE, else "
                         "tilinglib/data/" + tile_choice.DATA_FILE + ")")
    ap.add_argument("--log", default=str(ROOT / "bench" / "results" / "ladder_sizes_h200.log"))
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--budget", type=float, default=420.0,
                    help="seconds for compiling and timing (the files are written after)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many configurations")
    args = ap.parse_args(argv)
    if args.quick and args.configs not in (None, "quick"):
        ap.error(f"--quick and --configs {args.configs}: choose one")
    args.configs = "quick" if args.quick else (args.configs or "full")
    args.quick = args.configs == "quick"
    base = None
    if args.merge_into is not None:
        try:                    # checked before the run: its format, and that it is there
            if tile_choice.load_sizes(args.merge_into) is None:
                ap.error(f"--merge-into {args.merge_into}: no such file")
            base = json.loads(Path(args.merge_into).read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError) as e:
            ap.error(f"--merge-into {args.merge_into}: not a sizes data file ({e})")
    if args.out is None:
        args.out = args.merge_into or str(ROOT / "tilinglib" / "data" / tile_choice.DATA_FILE)
    configs = configurations(args.configs)
    if args.limit:
        configs = configs[:args.limit]
    if args.dry_run:
        return 1 if dry_run(configs, args.ptxas) else 0

    lines = []

    def log(text=""):
        print(text, flush=True)
        lines.append(text)

    data = gpu_run(configs, args, log)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    if base is not None:
        try:
            merged = tile_choice.merge_sizes(base, data)
        except ValueError as e:             # another GPU: the run is kept in a file of its own
            alone = Path(args.out).with_suffix(".run.json")
            alone.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            log(f"!! not merged: {e}; this run alone: {alone}")
            Path(args.log).parent.mkdir(parents=True, exist_ok=True)
            Path(args.log).write_text("\n".join(lines) + "\n", encoding="utf-8")
            return 1
        log(f"\nmerged into {args.merge_into} ({len(base['rows'])} rows) as run "
            f"{merged['runs'][-1]['run']}: {len(data['rows'])} rows")
        data = merged
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    summary(tile_choice.load_sizes(args.out), log)
    log(f"\nwrote {args.out}")
    Path(args.log).parent.mkdir(parents=True, exist_ok=True)
    Path(args.log).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
