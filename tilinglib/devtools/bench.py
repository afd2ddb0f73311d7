"""Measure every course kernel on this machine's GPU and write a reference data file.

    python -m tilinglib.devtools.bench --out h200.json            # timings (a few minutes)
    python -m tilinglib.devtools.bench --out h200.json --ncu      # and Nsight Compute counters

The file is in the format `tilinglib.reference` reads (format version 1): device, driver,
CUDA and PyCUDA versions, the date and the settings, then one entry per timed launch and,
with ``--ncu``, one entry per profiled launch. Put it in ``tilinglib/data/`` as
``reference_<name>.json`` and every lesson can show it to readers without a GPU.

What is measured (median of `--repeat` CUDA-event timings after `--warmup` launches;
inputs copied to the GPU once, outside the timed region; random normal float32 data):

- SGEMM, C = A·B for N x N matrices at each `--sizes` N: the naive kernel with 16x16 and
  32x32 blocks; the tiled kernel at TILE 4, 8, 16, 32, each without and with ``+1``
  padding; the double-buffered tiled kernel at TILE 16 and 32; cuBLAS through CuPy's
  ``A @ B`` when CuPy is installed. GFLOP/s = 2 N^3 / median time. Each variant is first
  checked against a float64 product at the smallest N (max error relative to the largest
  entry); a variant that fails is reported and left out.
- SAXPY over 2^28 floats (block 256): GB/s counting 12 bytes per element (``gflops`` is
  null for this and the transposes: they are bandwidth kernels).
- Transpose of an N x N matrix (largest N): naive, shared, shared+padded; GB/s counting
  8 bytes per element.

- The SGEMM ladder of lessons 07-08 (`tilinglib.ladder.STEPS` and `ladder.TUNING`, each at its default tile
  shape at each `--sizes` N, and at each shape of its ``also_measured`` at the largest N), beside cuBLAS timed in the same run: GFLOP/s, the registers
  per thread and the local (spill) bytes from the loaded function, and ptxas's own report
  (``nvcc -Xptxas -v``: registers, spill stores and loads, stack). Each step is first
  checked at the smallest N and at an odd shape (1000 x 1003 x 999 for the steps that take
  any shape). These runs carry ``step`` and ``params``; `tilinglib.reference` finds them with
  ``ref.step(name, N)``. ``--only-ladder`` measures the ladder alone, and ``--merge FILE``
  writes FILE's other entries (kept as they are) together with the new ladder entries.

``--ncu`` runs each SGEMM and transpose variant once more at N = 1024 under
``ncu --clock-control none`` (one launch, a fixed metric list including the occupancy
limits and the shared-memory configuration the driver chose) and stores the readings; the ladder's
steps are profiled in one ncu process at N = 1024 with, in addition, the bytes requested by
global and shared load instructions (metrics this ncu does not know are left out, by name).

Needs PyCUDA and a CUDA GPU (``TILINGLIB_BACKEND`` must not be ``emulator``).
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

from .. import recipes
from ..gpu import ceil_div
from ..sgemm import random_inputs, random_matrices, relative_error
from ..toolchain.measure import metrics as ncu_names
from ..toolchain.measure.metrics import REPORT_METRICS as R

NCU_METRICS = (
    R["global_load_requests"],
    R["global_load_sectors"],
    R["global_store_requests"],
    R["global_store_sectors"],
    ncu_names.L2_SECTORS_READ,
    ncu_names.DRAM_BYTES_READ,
    ncu_names.DRAM_BYTES_WRITE,
    R["shared_load_instructions"],
    R["shared_store_instructions"],
    R["shared_load_wavefronts"],
    R["shared_store_wavefronts"],
    R["shared_load_bank_conflicts"],
    R["shared_store_bank_conflicts"],
    ncu_names.FFMA_THREAD_INSTRUCTIONS,
    ncu_names.REGISTERS_PER_THREAD,
    ncu_names.STATIC_SHARED_PER_BLOCK,
    ncu_names.SHARED_CONFIG_SIZE,
    ncu_names.OCCUPANCY_LIMIT_BLOCKS,
    ncu_names.OCCUPANCY_LIMIT_REGISTERS,
    ncu_names.OCCUPANCY_LIMIT_SHARED_MEM,
    ncu_names.OCCUPANCY_LIMIT_WARPS,
    ncu_names.WARPS_ACTIVE_PCT,
    ncu_names.DURATION,
)

# (kernel file, kernel name, block edge or None for TILE, options)
SGEMM_VARIANTS = (
    [(recipes.NAIVE.kernel, recipes.NAIVE.function, b, None, None) for b in (16, 32)]
    + [(recipes.TILED.kernel, recipes.TILED.function, None, t, p)
       for t in (4, 8, 16, 32) for p in (0, 1)]
    + [(recipes.TILED_DB.kernel, recipes.TILED_DB.function, None, t, None) for t in (16, 32)]
)
TRANSPOSE_VARIANTS = (("transposeNaive", 0), ("transposeShared", 0), ("transposeShared", 1))


def _options(tile, pad):
    return recipes.options({k: v for k, v in (("TILE", tile), ("PAD", pad)) if v is not None})


def _sgemm_function(tl, kernel_file, name, tile, pad):
    from .. import kernels

    return tl.SourceModule(kernels.load(kernel_file), options=_options(tile, pad)).get_function(name)


def _sgemm_launch(N, block_edge, tile):
    edge = tile if tile is not None else block_edge
    return (edge, edge, 1), (N // edge, N // edge)


def _check_sgemm(tl, f, N, block, grid, seed=1):
    A, B = random_matrices(N, seed)
    C = np.full_like(A, np.nan)
    f(np.int32(N), tl.In(A), tl.In(B), tl.Out(C), block=block, grid=grid)
    return relative_error(C, A, B)


def measure(sizes, warmup, repeat, log=print):
    """Time every variant on the PyCUDA backend; returns (runs, extra) for the data file."""
    import tilinglib as tl
    from ..roofline import sgemm_flops

    if tl.backend_name() != "pycuda":
        raise SystemExit("tilinglib.devtools.bench needs a CUDA GPU and PyCUDA (the backend here is "
                         f"{tl.backend_name()!r}); on a GPU machine unset TILINGLIB_BACKEND.")
    runs, errors = [], {}
    small = min(sizes)
    for kernel_file, name, edge, tile, pad in SGEMM_VARIANTS:
        f = _sgemm_function(tl, kernel_file, name, tile, pad)
        block, grid = _sgemm_launch(small, edge, tile)
        err = _check_sgemm(tl, f, small, block, grid)
        errors[(kernel_file, edge, tile, pad)] = err
        if not err < 1e-4:
            log(f"!! {kernel_file} tile={tile} pad={pad}: relative error {err:.2e}: left out")
            continue
        for N in sizes:
            A, B = random_matrices(N, seed=N)
            C = np.empty_like(A)
            block, grid = _sgemm_launch(N, edge, tile)
            t = tl.time_kernel(f, np.int32(N), tl.In(A), tl.In(B), tl.Out(C), block=block,
                               grid=grid, warmup=warmup, repeat=repeat,
                               flops=sgemm_flops(N, N, N))
            runs.append({
                "kernel": kernel_file, "N": N, "block": list(block), "tile": tile, "pad": pad,
                "static_shared_bytes": int(f.shared_size_bytes), "gflops": round(t.gflops, 1),
                "median_ms": round(t.median_ms, 4), "q1_ms": round(t.q1_ms, 4),
                "q3_ms": round(t.q3_ms, 4), "registers": int(f.num_regs),
                "max_relative_error": err,
            })
            log(f"{kernel_file:<15} N={N:<5} tile={tile!s:<4} pad={pad!s:<4} block={block} "
                f"{t.gflops:9,.0f} GFLOP/s  {t.median_ms:8.3f} ms")
    runs += _cublas(sizes, warmup, repeat, log)
    runs += _saxpy(tl, warmup, repeat, log)
    runs += _transpose(tl, max(sizes), warmup, repeat, log)
    return runs


def _event_time(fn, warmup, repeat):
    import pycuda.driver as drv

    for _ in range(warmup):
        fn()
    times = []
    start, end = drv.Event(), drv.Event()
    for _ in range(repeat):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.time_till(end))
    return times


def _cublas(sizes, warmup, repeat, log):
    try:
        import cupy as cp
    except Exception as exc:  # noqa: BLE001 - CuPy is optional
        log(f"(no cuBLAS figures: CuPy is not importable: {exc})")
        return []
    out = []
    for N in sizes:
        A, B = (cp.asarray(X) for X in random_matrices(N, seed=N))
        for _ in range(warmup):
            A @ B
        cp.cuda.Device().synchronize()
        times = []
        start, end = cp.cuda.Event(), cp.cuda.Event()
        for _ in range(repeat):
            start.record()
            A @ B
            end.record()
            end.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, end))
        ms = float(np.median(times))
        gflops = 2.0 * N ** 3 / ms / 1e6
        out.append({"kernel": "cublas", "N": N, "block": None, "tile": None, "pad": None,
                    "static_shared_bytes": None, "gflops": round(gflops, 1),
                    "median_ms": round(ms, 4), "library": f"CuPy {cp.__version__} A @ B"})
        log(f"{'cublas':<15} N={N:<5} {gflops:9,.0f} GFLOP/s  {ms:8.3f} ms")
        del A, B
    return out


def _saxpy(tl, warmup, repeat, log):
    import pycuda.driver as drv

    from .. import kernels

    n = 1 << 28
    f = tl.SourceModule(kernels.load("saxpy")).get_function("saxpy")
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    x_d, y_d = drv.mem_alloc(x.nbytes), drv.mem_alloc(y.nbytes)
    drv.memcpy_htod(x_d, x)
    drv.memcpy_htod(y_d, y)
    grid = (ceil_div(n, 256), 1)
    launch = getattr(f, "_launch_unchecked", f)
    times = _event_time(lambda: launch(np.int32(n), np.float32(2.0), x_d, y_d, block=(256, 1, 1),
                                       grid=grid), warmup, repeat)
    ms = float(np.median(times))
    gbps = 12.0 * n / ms / 1e6
    x_d.free()
    y_d.free()
    log(f"{'saxpy':<15} n=2^28 {gbps:9,.0f} GB/s  {ms:8.3f} ms")
    return [{"kernel": "saxpy", "N": n, "block": [256, 1, 1], "tile": None, "pad": None,
             "static_shared_bytes": 0, "gflops": None, "gbps": round(gbps, 1),
             "median_ms": round(ms, 4),
             "bytes_per_element": 12}]


def _transpose(tl, N, warmup, repeat, log):
    import pycuda.driver as drv

    from .. import kernels

    rng = np.random.default_rng(3)
    A = rng.standard_normal((N, N), dtype=np.float32)
    out = []
    for name, pad in TRANSPOSE_VARIANTS:
        f = tl.SourceModule(kernels.load("transpose"),
                            options=_options(None, pad)).get_function(name)
        O = np.empty_like(A)
        f(np.int32(N), tl.In(A), tl.Out(O), block=(32, 32, 1), grid=(N // 32, N // 32))
        ok = bool(np.array_equal(O, A.T))
        a_d, o_d = drv.mem_alloc(A.nbytes), drv.mem_alloc(A.nbytes)
        drv.memcpy_htod(a_d, A)
        launch = getattr(f, "_launch_unchecked", f)
        times = _event_time(lambda: launch(np.int32(N), a_d, o_d, block=(32, 32, 1),
                                           grid=(N // 32, N // 32)), warmup, repeat)
        a_d.free()
        o_d.free()
        ms = float(np.median(times))
        gbps = 8.0 * N * N / ms / 1e6
        log(f"{name:<15} N={N:<5} pad={pad} {gbps:9,.0f} GB/s  {ms:8.3f} ms  correct={ok}")
        out.append({"kernel": f"transpose:{name}", "N": N, "block": [32, 32, 1], "tile": 32,
                    "pad": pad, "static_shared_bytes": int(f.shared_size_bytes),
                    "gflops": None, "gbps": round(gbps, 1), "median_ms": round(ms, 4),
                    "correct": ok, "bytes_per_element": 8})
    return out


# ---------------------------------------------------------------------------- ladder

LADDER_NCU_METRICS = NCU_METRICS + (
    ncu_names.GLOBAL_LOAD_BYTES,
    ncu_names.SASS_SHARED_LOAD_BYTES,
    ncu_names.SASS_GLOBAL_LOAD_BYTES,
    ncu_names.SASS_SHARED_LOAD_INSTRUCTIONS,
    ncu_names.SASS_GLOBAL_LOAD_INSTRUCTIONS,
)
ODD_SHAPE = (1000, 1003, 999)     # M, N, K: every edge path of the any-shape kernels


def ptxas_report(source: str, options, arch: str) -> dict:
    """ptxas's resource report for `source` compiled with `options` for `arch` (e.g. 'sm_90'):
    {'registers', 'spill_stores', 'spill_loads', 'stack_bytes'} (bytes per thread), or
    {'error': text} when nvcc is missing or fails. Compiles as PyCUDA does (extern "C")."""
    return compile_cubin(source, options, arch)[1]


def compile_cubin(source: str, options, arch: str) -> tuple[bytes | None, dict]:
    """(the cubin, ptxas's report) for `source` compiled with `options` for `arch`, as
    PyCUDA's SourceModule compiles it (the source inside ``extern "C" {}``, ``nvcc -cubin``),
    with ``-Xptxas -v``. The report is `ptxas_report`'s; the cubin is None when nvcc is
    missing or fails (the report then has 'error'). The cubin loads with PyCUDA's
    ``driver.module_from_buffer``."""
    import re
    import tempfile

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None, {"error": "nvcc is not on PATH"}
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.cu")
        out = os.path.join(tmp, "k.cubin")
        with open(src, "w", encoding="utf-8") as fh:
            fh.write('extern "C" {\n' + source + '\n}\n')
        done = subprocess.run([nvcc, f"-arch={arch}", "-cubin", "-Xptxas", "-v", *options,
                               "-o", out, src], capture_output=True, text=True, timeout=300)
        cubin = None
        if done.returncode == 0 and os.path.isfile(out):
            with open(out, "rb") as fh:
                cubin = fh.read()
    text = done.stdout + done.stderr
    regs = re.findall(r"Used (\d+) registers", text)
    spill = re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill "
                       r"loads", text)
    if done.returncode != 0 or not regs or not spill:
        return None, {"error": text[-600:]}
    stack, stores, loads = (int(v) for v in spill[-1])
    return cubin, {"registers": int(regs[-1]), "spill_stores": stores, "spill_loads": loads,
                   "stack_bytes": stack}


def _ladder_inputs(M, N, K, seed):
    return random_inputs(M, N, K, seed)


def ladder_shapes() -> list:
    """[(step, params)]: every `ladder.STEPS` entry (and `ladder.TUNING`'s tuned kernel, lesson
    08's section 8) at its default tile shape, then at each
    shape of its `also_measured` (the shapes lessons 07-08 show), in that order."""
    from .. import ladder

    return [(step, step.resolve(extra)) for step in ladder.STEPS + ladder.TUNING
            for extra in ({},) + tuple(step.also_measured)]


def measure_ladder(sizes, warmup, repeat, log=print):
    """Time every `ladder.STEPS` entry and cuBLAS, in this one process: the default tile shape
    at each N of `sizes`, the `also_measured` shapes at the largest N only; returns the run
    entries (see the module docstring)."""
    import pycuda.driver as drv

    import tilinglib as tl

    from .. import kernels, ladder
    from ..roofline import sgemm_flops
    from ..sgemm import relative_error

    cc = drv.Context.get_device().compute_capability()
    arch = f"sm_{cc[0]}{cc[1]}"
    runs = []
    small = min(sizes)
    for step, p in ladder_shapes():
        extra = p != step.resolve()
        src = kernels.load(step.kernel)
        f = tl.SourceModule(src, options=step.defines(p)).get_function(step.function)
        ptx = ptxas_report(src, step.defines(p), arch)
        A, B = _ladder_inputs(small, small, small, 1)
        C = np.full((small, small), np.nan, dtype=np.float32)
        ladder._call(f, step, p, A, B, C, tl.In, tl.Out)
        err = relative_error(C, A, B)
        odd = None
        if not step.square_only:
            M, N, K = ODD_SHAPE
            A, B = _ladder_inputs(M, N, K, 2)
            C = np.full((M, N), np.nan, dtype=np.float32)
            ladder._call(f, step, p, A, B, C, tl.In, tl.Out)
            odd = relative_error(C, A, B)
        if not (err < 1e-4 and (odd is None or odd < 1e-4)):
            log(f"!! ladder step {step.name}: relative error {err:.2e} / {odd}: left out")
            continue
        for N in ([max(sizes)] if extra else sizes):
            A, B = _ladder_inputs(N, N, N, N)
            C = np.empty((N, N), dtype=np.float32)
            block, grid = step.block(p), step.grid(N, N, p)
            args = ((np.int32(N),) if step.square_only else (np.int32(N),) * 3)
            t = tl.time_kernel(f, *args, tl.In(A), tl.In(B), tl.Out(C), block=block, grid=grid,
                               warmup=warmup, repeat=repeat, flops=sgemm_flops(N, N, N))
            entry = {
                "kernel": step.kernel, "step": step.name, "params": p, "N": N,
                "block": list(block), "grid": list(grid), "tile": None, "pad": None,
                "static_shared_bytes": int(f.shared_size_bytes), "gflops": round(t.gflops, 1),
                "median_ms": round(t.median_ms, 4), "q1_ms": round(t.q1_ms, 4),
                "q3_ms": round(t.q3_ms, 4), "registers": int(f.num_regs),
                "local_bytes": int(f.local_size_bytes), "ptxas": ptx,
                "max_relative_error": err, "odd_shape_relative_error": odd,
                "global_bytes_per_fma_formula": step.global_bytes_per_fma(p),
                "shared_bytes_per_fma_formula": step.shared_bytes_per_fma(p),
            }
            runs.append(entry)
            log(f"ladder {step.name:<12} N={N:<5} regs={f.num_regs:<3} "
                f"spills={ptx.get('spill_stores')}/{ptx.get('spill_loads')} "
                f"{t.gflops:9,.0f} GFLOP/s  {t.median_ms:8.3f} ms")
    for r in _cublas(sizes, warmup, repeat, log):
        r["step"] = "cublas"
        r["params"] = {}
        runs.append(r)
    return runs


def _launch_ladder(N: int) -> None:
    """Launch every ladder step once at N x N x N (the process ncu profiles)."""
    import tilinglib as tl

    from .. import kernels, ladder

    for step, p in ladder_shapes():
        f = tl.SourceModule(kernels.load(step.kernel), options=step.defines(p)).get_function(
            step.function)
        A, B = _ladder_inputs(N, N, N, 1)
        C = np.empty((N, N), dtype=np.float32)
        ladder._call(f, step, p, A, B, C, tl.In, tl.Out)


def _parse_ncu_details(text: str) -> list:
    """ncu's --csv details output -> [(kernel name, {metric: value})] in launch order."""
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("==")]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    launches: dict = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        try:
            lid = int(row["ID"])
        except (KeyError, TypeError, ValueError):
            continue
        entry = launches.setdefault(lid, (row.get("Kernel Name", ""), {}))
        value = str(row.get("Metric Value", "")).replace(",", "")
        try:
            number = float(value)
            entry[1][row.get("Metric Name")] = int(number) if number.is_integer() else number
        except ValueError:
            entry[1][row.get("Metric Name")] = value
    return [launches[k] for k in sorted(launches)]


def _known_metrics(extra, log):
    """`NCU_METRICS` (known to work) and those of `extra` that ncu lists for this GPU in
    ``ncu --query-metrics`` (none of them, if it cannot say: an unknown name fails a run)."""
    done = subprocess.run([shutil.which("ncu"), "--query-metrics"], capture_output=True,
                          text=True, timeout=120)
    names = set(re.findall(r"([a-z0-9]+__[a-z0-9_]+)", done.stdout)) if done.returncode == 0 \
        else set()
    keep = [m for m in extra if m not in NCU_METRICS and m.rsplit(".", 1)[0] in names]
    left = [m for m in extra if m not in NCU_METRICS and m not in keep]
    if left:
        log(f"(ncu --query-metrics does not list {', '.join(left)}: left out)")
    return list(NCU_METRICS) + keep


def profile_ladder(log=print, N=1024):
    """Nsight Compute readings of every ladder step at N x N x N, in one ncu process."""
    from .. import ladder

    if shutil.which("ncu") is None:
        log("(no ladder counters: ncu is not on PATH)")
        return []
    shapes = ladder_shapes()
    names = sorted({s.function for s in ladder.STEPS + ladder.TUNING})

    def ncu(metrics):
        cmd = [shutil.which("ncu"), "--clock-control", "none", "--csv", "--print-units", "base",
               "--metrics", ",".join(metrics),
               "--kernel-name", "regex:^(" + "|".join(names) + ")$",
               "--launch-count", str(len(shapes)),
               sys.executable, "-m", "tilinglib.devtools.bench", "--launch-one", f"ladder:{N}"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        return done, _parse_ncu_details(done.stdout)

    done, launches = ncu(_known_metrics(LADDER_NCU_METRICS, log))
    if not launches:
        log(f"!! ncu failed with the extra metrics, again without: {done.stdout[-600:]}")
        done, launches = ncu(NCU_METRICS)
    if len(launches) != len(shapes):
        log(f"!! ncu profiled {len(launches)} of {len(shapes)} ladder launches: "
            f"{done.stderr[-800:]} {done.stdout[-800:]}")
    out = []
    for (step, p), (kname, metrics_read) in zip(shapes, launches):
        fmas = metrics_read.get(ncu_names.FFMA_THREAD_INSTRUCTIONS)
        entry = {"kernel": step.kernel, "step": step.name, "params": p, "N": N,
                 "block": list(step.block(p)), "tile": None, "pad": None,
                 "ncu_kernel_name": kname, "metrics": metrics_read}
        out.append(entry)
        g = metrics_read.get(ncu_names.GLOBAL_LOAD_BYTES)
        sh = metrics_read.get(ncu_names.SASS_SHARED_LOAD_BYTES)
        log(f"ncu ladder {step.name:<12} FFMA={fmas} global ld bytes={g} shared ld bytes={sh}")
    return out


# ------------------------------------------------------------------------------- ncu

def launch_one(spec: str) -> None:
    """Run one variant once (the process that ncu profiles): spec 'file:name:edge:tile:pad:N'."""
    import tilinglib as tl

    from .. import kernels

    if spec.startswith("ladder:"):
        _launch_ladder(int(spec.split(":")[1]))
        return
    kernel_file, name, edge, tile, pad, N = spec.split(":")
    edge = int(edge) if edge != "-" else None
    tile = int(tile) if tile != "-" else None
    pad = int(pad) if pad != "-" else None
    N = int(N)
    A, B = random_matrices(N, seed=1)
    if kernel_file == "transpose":
        f = tl.SourceModule(kernels.load("transpose"),
                            options=_options(None, pad)).get_function(name)
        O = np.empty_like(A)
        f(np.int32(N), tl.In(A), tl.Out(O), block=(32, 32, 1), grid=(N // 32, N // 32))
        return
    C = np.empty_like(A)
    f = _sgemm_function(tl, kernel_file, name, tile, pad)
    block, grid = _sgemm_launch(N, edge, tile)
    f(np.int32(N), tl.In(A), tl.In(B), tl.Out(C), block=block, grid=grid)


def _ncu_one(spec, name, log):
    ncu = shutil.which("ncu")
    cmd = [ncu, "--clock-control", "none", "--csv", "--page", "raw", "--launch-count", "1",
           "-k", f"regex:^{name}$", "--metrics", ",".join(NCU_METRICS),
           sys.executable, "-m", "tilinglib.devtools.bench", "--launch-one", spec]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = done.stdout
    start = text.find('"ID"')
    if done.returncode != 0 or start < 0:
        log(f"!! ncu failed for {spec}: {done.stderr[-800:]} {text[-800:]}")
        return None
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, values = rows[0], rows[2] if len(rows) > 2 else rows[1]
    metrics = {}
    for key, value in zip(header, values):
        if key in NCU_METRICS:
            try:
                number = float(value.replace(",", ""))
                metrics[key] = int(number) if number.is_integer() else number
            except ValueError:
                metrics[key] = value
    return metrics


def profile(log=print, N=1024):
    """Nsight Compute readings of every SGEMM and transpose variant at size N."""
    if shutil.which("ncu") is None:
        log("(no counters: ncu is not on PATH)")
        return []
    out = []
    specs = [(f, n, e, t, p) for f, n, e, t, p in SGEMM_VARIANTS]
    specs += [("transpose", name, None, 32, pad) for name, pad in TRANSPOSE_VARIANTS]
    for kernel_file, name, edge, tile, pad in specs:
        fmt = lambda v: "-" if v is None else str(v)  # noqa: E731
        spec = ":".join([kernel_file, name, fmt(edge), fmt(tile), fmt(pad), str(N)])
        metrics = _ncu_one(spec, name, log)
        if metrics is None:
            continue
        e = tile if tile is not None else edge
        label = kernel_file if kernel_file != "transpose" else f"transpose:{name}"
        out.append({"kernel": label, "N": N, "block": [e, e, 1], "tile": tile, "pad": pad,
                    "metrics": metrics})
        log(f"ncu {label:<28} tile={tile!s:<4} pad={pad!s:<4} " + ", ".join(
            f"{k.split('.')[0].split('__')[-1]}={v:,.0f}" for k, v in metrics.items()
            if isinstance(v, (int, float)) and k.startswith((ncu_names.OCCUPANCY_LIMIT_SHARED_MEM,
                                                            ncu_names.SHARED_CONFIG_SIZE))))
    return out


def device_info():
    import pycuda
    import pycuda.driver as drv

    import tilinglib as tl

    tl.backend_name()
    dev = drv.Context.get_device()
    attr = drv.device_attribute
    v = drv.get_driver_version()
    return ({"name": str(dev.name()),
             "compute_capability": ".".join(map(str, dev.compute_capability())),
             "sms": dev.get_attribute(attr.MULTIPROCESSOR_COUNT),
             "shared_memory_per_sm_bytes": dev.get_attribute(
                 attr.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
             "shared_memory_per_block_optin_bytes": dev.get_attribute(
                 attr.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
             "l2_bytes": dev.get_attribute(attr.L2_CACHE_SIZE)},
            {"cuda_driver_api": f"{v // 1000}.{v % 1000 // 10}",
             "pycuda": pycuda.VERSION_TEXT,
             "cuda_toolkit": ".".join(map(str, drv.get_version())),
             "python": sys.version.split()[0], "numpy": np.__version__})


def merge_ladder(path: str, new: dict) -> dict:
    """The reference file at `path` with its ``ladder`` replaced by that of `new`; its other
    fields and entries are kept as they are (see `tilinglib.reference` for the format)."""
    with open(path, encoding="utf-8") as fh:
        old = json.load(fh)
    return dict(old, ladder=new["ladder"])


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tilinglib.devtools.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="where to write the data file (JSON)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--ncu", action="store_true", help="also profile with Nsight Compute")
    parser.add_argument("--only-ladder", action="store_true",
                        help="measure the ladder of lessons 07-08 (and cuBLAS) only")
    parser.add_argument("--merge", metavar="FILE",
                        help="a reference file whose entries are kept beside the new ladder "
                             "entries (its old ladder entries are replaced)")
    parser.add_argument("--launch-one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.launch_one:
        launch_one(args.launch_one)
        return 0
    t0 = time.time()
    device, software = device_info()
    driver = os.popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader").read()
    if driver.strip():
        software["driver"] = driver.strip().splitlines()[0]
    print(f"device: {device['name']} ({device['sms']} SMs), driver {software.get('driver')}")
    runs = [] if args.only_ladder else measure(args.sizes, args.warmup, args.repeat)
    ladder_runs = measure_ladder(args.sizes, args.warmup, args.repeat)
    counters = profile() if args.ncu and not args.only_ladder else []
    ladder_counters = profile_ladder() if args.ncu else []
    data = {
        "format": "tilinglib-reference", "format_version": 1,
        "description": f"Every course kernel timed on an {device['name']} by "
                       f"python -m tilinglib.devtools.bench.",
        "device": device, "software": software,
        "date": _dt.date.today().isoformat(),
        "settings": {
            "compiler": "tilinglib.SourceModule (PyCUDA, nvcc defaults) with -DTILE=<tile> "
                        "-DPAD=<pad>",
            "inputs": "float32, random normal (numpy default_rng)",
            "timing": "CUDA events around each launch, inputs already on the GPU, no copies "
                      "timed",
            "warmup": args.warmup, "repeat": args.repeat, "statistic": "median",
            "gflops": "2 * N**3 / median time (SGEMM)",
            "validation": f"each SGEMM variant against a float64 product at N={min(args.sizes)}"
                          + (" and each ladder step that takes any shape at M, N, K = "
                             f"{ODD_SHAPE}"),
            "ladder": "tilinglib.ladder.STEPS at their default tile shapes and the "
                      "also_measured ones (params in each entry); registers from Function.num_regs, spills from nvcc -Xptxas -v",
            "counters": ("ncu --clock-control none, one launch each, N = 1024"
                         if counters else "none"),
            "clocks": "as found (no clock control)",
        },
        "source": "python -m tilinglib.devtools.bench" + (" --ncu" if args.ncu else ""),
        "runs": runs, "counters": counters,
    }
    data["ladder"] = {k: data[k] for k in ("description", "device", "software", "date",
                                           "settings", "source")}
    data["ladder"].update(
        description=f"The SGEMM ladder of lessons 07-08 (tilinglib.ladder.STEPS) and cuBLAS, "
                    f"timed in one run on an {device['name']} by python -m tilinglib.devtools.bench.",
        runs=ladder_runs, counters=ladder_counters)
    if args.merge:
        data = merge_ladder(args.merge, data)
    text = json.dumps(data, indent=1)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        print(f"wrote {args.out} ({len(runs)} runs, {len(counters)} counter sets; ladder "
              f"{len(ladder_runs)} runs, {len(ladder_counters)} counter sets) in "
              f"{time.time() - t0:.0f} s")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
