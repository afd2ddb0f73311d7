"""Variants of the tuned kernel (tilinglib/kernels/sgemm_tuned.cu) beside cuBLAS, on one GPU.

    python3 bench/tuned_variants.py                       # every variant of VARIANTS, timed
    python3 bench/tuned_variants.py --only base,fast      # some of them
    python3 bench/tuned_variants.py --sass                # + SASS opcode counts of each
    python3 bench/tuned_variants.py --list                # no GPU: the variants and -D options
    python3 bench/tuned_variants.py --ncu FILE --only base,fast   # Nsight Compute's issue and
                                                  # stall figures of each and of cuBLAS

Each variant is the kernel's default shape (`tilinglib.ladder.TUNED`'s defaults) with some
switches changed; ``base`` is the course's choice at N = 4096. For each: nvcc for the GPU's architecture as
PyCUDA's SourceModule compiles it (ptxas's registers and spills kept); C checked against a
float64 product (CuPy) at 1000 x 1003 x 999 and at every size; then, per size, `--rounds`
rounds, each timing cuBLAS (CuPy's ``A @ B``) and then every variant (the median of
`--repeat` batches of back-to-back launches, as bench/ladder_sizes.py times), so that each
variant is compared with cuBLAS timed minutes, not hours, apart. Printed per variant: the
median over the rounds in GFLOP/s, % of the median cuBLAS, registers, spills, static shared
bytes, the two errors and each round's figure. ``--sass`` adds, per variant, the count of
each SASS opcode class in the kernel (cuobjdump), the static instruction mix; ``--json``
writes everything.

``--ncu FILE`` instead runs this script under ``ncu --clock-control none`` (``--profile``: one
launch of each variant and of cuBLAS per size, untimed) with the WarpStateStats,
SchedulerStats, InstructionStats and LaunchStats sections and a few raw metrics (`NCU_METRICS`),
and writes, per kernel, every metric Nsight Compute printed (display name -> value, unit) to
FILE as JSON: what the course's data keep of where the issue slots go.

Needs on the GPU: PyCUDA, CuPy, nvcc (and cuobjdump for --sass), and this repository on
PYTHONPATH (``.gpu/setup.sh``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tilinglib import kernels, ladder, tile_choice  # noqa: E402
from tilinglib.devtools import bench  # noqa: E402
from tilinglib.toolchain.measure import metrics  # noqa: E402

ODD = (1000, 1003, 999)

#: name -> the switches changed from the tuned kernel's defaults (`ladder.TUNED.resolve`).
VARIANTS: dict[str, dict] = {
    "base": {"GSWZ": 4},                     # the course's choice at N = 4096 (run 1 of the data)
    "gswz1": {},
    "bk16_swizzle": {"BK": 16, "APAD": 0, "SWIZZLE": 1, "GSWZ": 4},
    "bk8": {"BK": 8, "GSWZ": 4},
    "fast": {"GSWZ": 4, "FAST": 1},
    "fast_gswz8": {"GSWZ": 8, "FAST": 1},
    "fast_bk16_swizzle": {"BK": 16, "APAD": 0, "SWIZZLE": 1, "GSWZ": 4, "FAST": 1},
    "fast_bk8": {"BK": 8, "GSWZ": 4, "FAST": 1},
    "fast_bk8_swizzle": {"BK": 8, "APAD": 0, "SWIZZLE": 1, "GSWZ": 4, "FAST": 1},
    "pingpong": {"GSWZ": 4, "PINGPONG": 1},
    "tail9": {"GSWZ": 4, "SPLITK": 9, "TAILWAVE": 132},
    "fast_tail9": {"GSWZ": 4, "FAST": 1, "SPLITK": 9, "TAILWAVE": 132},
    "fast_pingpong_tail9": {"GSWZ": 4, "FAST": 1, "PINGPONG": 1, "SPLITK": 9, "TAILWAVE": 132},
    "fast_pingpong_tail4": {"GSWZ": 4, "FAST": 1, "PINGPONG": 1, "SPLITK": 4, "TAILWAVE": 132},
    "fast_pingpong": {"GSWZ": 4, "FAST": 1, "PINGPONG": 1},
    # the course's choice at N = 4096 after run 3 of the sizes data
    "best4096": {"BK": 16, "APAD": 0, "SWIZZLE": 1, "GSWZ": 16, "FAST": 1, "PINGPONG": 1},
    "fast_pingpong_bk16_swizzle": {"BK": 16, "APAD": 0, "SWIZZLE": 1, "GSWZ": 4, "FAST": 1,
                                   "PINGPONG": 1},
}


def resolved(name: str) -> dict:
    """The variant's full parameters; raises KeyError for an unknown name, ArgumentError for a
    parameter the tuned recipe lacks."""
    return ladder.TUNED.resolve(VARIANTS[name])


#: Raw Nsight Compute metrics read with the sections (names as ncu spells them).
NCU_METRICS = (metrics.SM_CLOCK, metrics.WARP_INSTRUCTIONS, metrics.FFMA_THREAD_INSTRUCTIONS_SM,
               metrics.ISSUE_ACTIVE_PCT, metrics.FMA_PIPE_ACTIVE_PCT, metrics.DURATION)
NCU_SECTIONS = ("WarpStateStats", "SchedulerStats", "InstructionStats", "LaunchStats")


def parse_ncu_details(text: str) -> dict[str, dict]:
    """{kernel name: {metric name: [value, unit]}} from ``ncu --csv --page details`` output
    (values as floats where they read as numbers, commas removed); a kernel launched more
    than once keeps its last launch."""
    import csv
    import io

    start = text.find('"ID"')
    out: dict[str, dict] = {}
    last_id: dict[str, str] = {}
    if start < 0:
        return out
    for row in csv.DictReader(io.StringIO(text[start:])):
        name, metric = row.get("Kernel Name"), row.get("Metric Name")
        if not name or not metric:
            continue
        value = row.get("Metric Value") or ""
        try:
            value = float(value.replace(",", ""))
        except ValueError:
            pass
        if last_id.get(name) != row.get("ID"):           # a later launch: start again
            last_id[name] = row.get("ID")
            out[name] = {}
        out[name][metric] = [value, row.get("Metric Unit") or ""]
    return out


def run_ncu(path: str, names: list[str], sizes: list[int]) -> int:
    """Profile `names` and cuBLAS under ncu (module docstring) and write `path`."""
    import shutil

    ncu = shutil.which("ncu")
    if ncu is None:
        print("!! ncu is not on PATH")
        return 1
    cmd = [ncu, "--clock-control", "none", "-k", "regex:sgemmTuned|sm80_xmma_gemm_f32",
           "--csv", "--page", "details", "--print-details", "all",
           "--metrics", ",".join(NCU_METRICS)]
    for s in NCU_SECTIONS:
        cmd += ["--section", s]
    out = {}
    for n in names:           # one variant a run: each kernel's figures under its own name
        done = subprocess.run(cmd + [sys.executable, __file__, "--profile", "--only", n,
                                     "--sizes", ",".join(map(str, sizes))],
                              capture_output=True, text=True, timeout=600)
        kernels_seen = parse_ncu_details(done.stdout)
        if not kernels_seen:
            print(f"!! ncu gave nothing for {n}: {(done.stdout + done.stderr)[-800:]}")
            return 1
        for k, metrics in kernels_seen.items():
            out["sgemmTuned " + n if k == "sgemmTuned" else k] = metrics
    doc = {"format": "tilinglib-ncu-kernels", "format_version": 1,
           "command": "python3 bench/tuned_variants.py --ncu FILE --only " + ",".join(names) +
                      " --sizes " + ",".join(map(str, sizes)),
           "ncu": " ".join(cmd[1:]), "variants": {n: VARIANTS[n] for n in names},
           "kernels": out}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}: {', '.join(out)}")
    return 0


def sass_mix(cubin: bytes) -> dict[str, int]:
    """{opcode without modifiers: count} of the SASS in `cubin` (cuobjdump -sass); empty
    when cuobjdump is missing."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.cubin")
        Path(path).write_bytes(cubin)
        try:
            text = subprocess.run(["cuobjdump", "-sass", path], capture_output=True,
                                  text=True, timeout=120).stdout
        except OSError:
            return {}
    ops = collections.Counter()
    for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[\w.]+)?",
                         text):
        op, mods = m.group(1), m.group(2) or ""
        width = re.search(r"\.(64|128)\b", mods)
        ops[op + (f".{width.group(1)}" if width and op in ("LDS", "LDG", "STS", "STG")
                  else "")] += 1
    return dict(ops.most_common())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated variant names (default: all)")
    ap.add_argument("--sizes", default="4096", help="comma-separated square sizes N")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--sass", action="store_true", help="count each variant's SASS opcodes")
    ap.add_argument("--profile", action="store_true",
                    help="launch each variant and cuBLAS once per size, untimed (run under ncu)")
    ap.add_argument("--list", action="store_true", help="list the variants (no GPU)")
    ap.add_argument("--ncu", metavar="FILE", default=None,
                    help="profile the variants and cuBLAS under ncu and write FILE (JSON)")
    ap.add_argument("--json", default=None, help="write the results to this file")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    params = {n: resolved(n) for n in names}
    for n in names:
        why = ladder.TUNED.valid(params[n])
        if why:
            ap.error(f"variant {n}: {why}")
    if args.list:
        for n in names:
            print(f"{n:<16} {' '.join(ladder.TUNED.defines(params[n]))}")
        return 0
    if args.ncu:
        return run_ncu(args.ncu, names, sizes)

    from ladder_sizes import _Gpu, _launcher  # noqa: E402  (the GPU run's helpers)

    gpu = _Gpu()
    cp = gpu.cp
    t0 = time.time()
    source = kernels.load(ladder.TUNED.kernel)
    out: dict = {"device": gpu.dev.name(), "arch": gpu.arch, "variants": {}, "sizes": {}}
    functions = {}
    for n in names:
        cubin, report = bench.compile_cubin(source, ladder.TUNED.defines(params[n]), gpu.arch)
        if cubin is None:
            print(f"!! {n}: compile error {report.get('error', '')[-600:]}")
            return 1
        f = gpu.drv.module_from_buffer(cubin).get_function(ladder.TUNED.function)
        f.prepare("iiiPPP")
        functions[n] = f
        out["variants"][n] = {"changed": VARIANTS[n], "params": params[n],
                              "registers": int(f.num_regs), "spill": [report["spill_stores"],
                                                                      report["spill_loads"]],
                              "static_shared_bytes": int(f.shared_size_bytes)}
        if args.sass:
            out["variants"][n]["sass"] = sass_mix(cubin)
    print(f"{gpu.dev.name()} {gpu.arch}: compiled {len(names)} in {time.time() - t0:.0f} s")

    Ao, Bo, refo, scaleo = gpu.inputs(*ODD, seed=7)
    for n in names if not args.profile else ():
        C = cp.zeros(ODD[:2], dtype=cp.float32)
        _launcher(gpu, functions[n], ladder.TUNED, params[n], *ODD, Ao, Bo, C)()
        out["variants"][n]["odd_error"] = gpu.error(C, refo, scaleo)
    del Ao, Bo, refo

    for N in sizes:
        A, B, ref, scale = gpu.inputs(N, N, N, seed=3 * N)
        C = cp.zeros((N, N), dtype=cp.float32)
        cout = cp.empty((N, N), dtype=cp.float32)
        go = {n: _launcher(gpu, functions[n], ladder.TUNED, params[n], N, N, N, A, B, C)
              for n in names}
        if args.profile:
            cp.matmul(A, B, out=cout)
            for n in names:
                go[n]()
            cp.cuda.Device().synchronize()
            continue
        errors = {}
        for n in names:
            C.fill(cp.nan)
            go[n]()
            cp.cuda.Device().synchronize()
            errors[n] = gpu.error(C, ref, scale)
        flops = 2.0 * N ** 3
        rounds = {n: [] for n in ["cuBLAS"] + names}
        for _ in range(args.rounds):
            ms = np.median(gpu.time_batches(lambda: cp.matmul(A, B, out=cout), args.warmup,
                                            args.repeat))
            rounds["cuBLAS"].append(flops / ms / 1e6)
            for n in names:
                ms = np.median(gpu.time_batches(go[n], args.warmup, args.repeat))
                rounds[n].append(flops / ms / 1e6)
        cub = float(np.median(rounds["cuBLAS"]))
        print(f"\nN={N}: cuBLAS {cub:,.0f} GFLOP/s (rounds {[round(x) for x in rounds['cuBLAS']]})")
        print(f"  {'variant':<16} {'GFLOP/s':>8} {'%cuBLAS':>8} {'regs':>5} {'spill':>7} "
              f"{'smem':>6}  err(odd, N)")
        out["sizes"][N] = {"cublas_gflops": cub, "rounds": rounds, "errors": errors}
        for n in names:
            v = out["variants"][n]
            g = float(np.median(rounds[n]))
            ok = max(v["odd_error"], errors[n]) < tile_choice.MAX_RELATIVE_ERROR
            print(f"  {n:<16} {g:>8,.0f} {100 * g / cub:>7.1f}% {v['registers']:>5} "
                  f"{v['spill'][0]:>3}/{v['spill'][1]:<3} {v['static_shared_bytes']:>6}  "
                  f"{v['odd_error']:.1e} {errors[n]:.1e} {'ok' if ok else 'WRONG'}  "
                  f"{[round(x) for x in rounds[n]]}")
        A = B = ref = C = cout = None
        cp.get_default_memory_pool().free_all_blocks()
    if args.sass:
        print("\nSASS opcodes (static counts):")
        for n in names:
            mix = out["variants"][n]["sass"]
            print(f"  {n:<16} total {sum(mix.values()):>6}  " +
                  " ".join(f"{k}={v}" for k, v in list(mix.items())[:16]))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str) + "\n",
                                   encoding="utf-8")
    print(f"\ntotal {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
