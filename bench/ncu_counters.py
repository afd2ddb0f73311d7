"""Nsight Compute against the CPU emulator: the same CUDA source, sizes and inputs, counter
by counter, written as a markdown table (and JSON) to --out.

On a GPU machine (CUDA toolkit, `ncu` on PATH, PyCUDA importable):

    python bench/ncu_counters.py --out bench/results/ncu_vs_emulator.md

runs the suite (the course's kernels at N=256 and every case of tests/test_conformance.py at
its test size) once under ``ncu --clock-control none`` in one child process, parses ncu's
CSV, runs the emulator on the same launches, and prints a summary. If that single ncu run
fails it falls back to one ncu run per kernel (``--launch-count 1``) within --budget seconds.

Without a GPU, ``--from-json bench/results/reference_h200_bench.json`` compares the emulator
with ncu readings saved earlier by ``python -m tilinglib.devtools.bench --ncu``.

Verdicts: global requests and sectors must be equal ("=", else "DIFF"). Shared-memory counts
are equal unless nvcc changed the accesses: "merged" when ncu counts fewer shared loads
(LDS.64/128 merging, values kept in registers), "noise" when ncu's wavefronts exceed the
emulator's by under 15% (bank arbitration with other traffic, as on conflict-free kernels).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# report field -> Nsight Compute metric (the table is tilinglib's: one home for the names)
from tilinglib.toolchain.measure import metrics as ncu_names  # noqa: E402

METRICS = {k: ncu_names.REPORT_METRICS[k] for k in (
    "global_load_requests", "global_load_sectors", "global_store_requests",
    "global_store_sectors", "shared_load_instructions", "shared_load_wavefronts",
    "shared_store_instructions", "shared_store_wavefronts")}
FFMA = ncu_names.FFMA_THREAD_INSTRUCTIONS
OPTIONAL = {
    "fadd": ncu_names.FADD_THREAD_INSTRUCTIONS,
    "fmul": ncu_names.FMUL_THREAD_INSTRUCTIONS,
    "global_atom": ncu_names.GLOBAL_ATOM_REQUESTS,
    "global_red": ncu_names.GLOBAL_RED_REQUESTS,
    "shared_atom": ncu_names.REPORT_METRICS["shared_atomic_instructions"],
}
# Report fields under their names before the rename (saved tables, bench/results/*.json).
RENAMED = {"shared_load_requests": "shared_load_instructions",
           "shared_store_requests": "shared_store_instructions"}
CORE = list(METRICS.values()) + [FFMA]
SHORT = {"global_load_requests": "gld req", "global_load_sectors": "gld sect",
         "global_store_requests": "gst req", "global_store_sectors": "gst sect",
         "shared_load_instructions": "lds inst", "shared_load_wavefronts": "lds wavef",
         "shared_store_instructions": "sts inst", "shared_store_wavefronts": "sts wavef",
         "flops": "FLOP"}


# ----------------------------------------------------------------------------- the suite

@dataclass
class Entry:
    """One launch of the suite: a name, the source, the kernel and a conformance `Case`
    (whose `setup` makes the arguments, block and grid)."""

    name: str
    case: object

    @property
    def kernel(self) -> str:
        return self.case.kernel


def _course_case(name, kernel, options, setup):
    from test_conformance import Case

    return Case(name, kernel, setup, course_kernel=name.split("@")[0].split("/")[0],
                options=options)


def _sgemm_n(N, block):
    from test_conformance import IN, OUT, Run

    def setup(rng):
        A = rng.standard_normal((N, N)).astype(np.float32)
        B = rng.standard_normal((N, N)).astype(np.float32)
        return Run([np.int32(N), (IN, A), (IN, B), (OUT, np.zeros((N, N), np.float32))],
                   block, (N // block[0], N // block[1]), {})
    return setup


def _transpose_n(N):
    from test_conformance import IN, OUT, Run

    def setup(rng):
        a = rng.standard_normal((N, N)).astype(np.float32)
        return Run([np.int32(N), (IN, a), (OUT, np.zeros_like(a))], (32, 32, 1),
                   (N // 32, N // 32), {})
    return setup


def _saxpy_n(n):
    from test_conformance import IN, INOUT, Run

    def setup(rng):
        x = rng.standard_normal(n).astype(np.float32)
        return Run([np.int32(n), np.float32(2), (IN, x), (INOUT, x.copy())], (256, 1, 1),
                   (n // 256, 1), {})
    return setup


def course_entries(N=256) -> list:
    """The course's kernels (tilinglib/kernels) at size N."""
    out = []
    for block in [(16, 16, 1), (32, 32, 1)]:
        out.append(Entry(f"sgemm_naive {block[0]}x{block[1]} N={N}",
                         _course_case("sgemm_naive", "sgemmNaive", [], _sgemm_n(N, block))))
    for tile in (4, 8, 16, 32):
        for pad in (0, 1):
            out.append(Entry(f"sgemm_tiled TILE={tile} PAD={pad} N={N}",
                             _course_case("sgemm_tiled", "sgemmTiled",
                                          [f"-DTILE={tile}", f"-DPAD={pad}"],
                                          _sgemm_n(N, (tile, tile, 1)))))
    for tile in (16, 32):
        out.append(Entry(f"sgemm_tiled_db TILE={tile} N={N}",
                         _course_case("sgemm_tiled_db", "sgemmTiledDB", [f"-DTILE={tile}"],
                                      _sgemm_n(N, (tile, tile, 1)))))
    out.append(Entry(f"transposeNaive N={N}",
                     _course_case("transpose", "transposeNaive", [], _transpose_n(N))))
    for pad in (0, 1):
        out.append(Entry(f"transposeShared PAD={pad} N={N}",
                         _course_case("transpose", "transposeShared", [f"-DPAD={pad}"],
                                      _transpose_n(N))))
    out.append(Entry("saxpy n=65536", _course_case("saxpy", "saxpy", [], _saxpy_n(1 << 16))))
    return out


def conformance_entries() -> list:
    from test_conformance import CASES

    return [Entry(f"conformance/{c.name}", c) for c in CASES]


def suite(N=256) -> list:
    return course_entries(N) + conformance_entries()


# ----------------------------------------------------------------------------- launching

def launch_entry(entry: Entry, SourceModule, In, Out, InOut, **kw):
    """Launch `entry` once with the given backend objects; returns the Function."""
    from test_conformance import run_case

    _, _, f = run_case(entry.case, SourceModule, In, Out, InOut, **kw)
    return f


def emulator_counts(entry: Entry) -> dict:
    """The emulator's counters for `entry`, keyed by report field (plus flops, atomics)."""
    from tilinglib import emulator

    f = launch_entry(entry, emulator.SourceModule, emulator.In, emulator.Out, emulator.InOut,
                     hazards="ignore", check_uninitialized=False)
    r = f.last_report
    out = {k: getattr(r, k) for k in METRICS}
    out["flops"] = r.flops
    out["global_atomics"] = r.global_atomic_requests
    out["shared_atomics"] = r.shared_atomic_instructions
    return out


def child_main(args) -> int:
    """Run under ncu: launch each entry once on the GPU, record the order of launches."""
    os.environ.setdefault("TILINGLIB_BACKEND", "pycuda")
    from tilinglib.backend import get_backend

    gpu = get_backend()
    entries = suite(args.n)
    if args.only:
        entries = [e for e in entries if e.name == args.only]
    order = open(args.order_file, "w")
    for e in entries:
        try:
            launch_entry(e, gpu.SourceModule, gpu.In, gpu.Out, gpu.InOut)
            order.write(json.dumps({"name": e.name, "kernel": e.kernel}) + "\n")
        except Exception as exc:  # noqa: BLE001 - report and go on with the others
            order.write(json.dumps({"name": e.name, "kernel": e.kernel,
                                    "error": f"{type(exc).__name__}: {exc}"}) + "\n")
        order.flush()
    order.close()
    return 0


# ----------------------------------------------------------------------------- ncu

def parse_ncu_csv(text: str) -> list:
    """ncu's --csv details output -> [(kernel name, {metric: value})] in launch (ID) order."""
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
        name = row.get("Kernel Name", "")
        metric, value = row.get("Metric Name"), row.get("Metric Value", "")
        entry = launches.setdefault(lid, (name, {}))
        try:
            entry[1][metric] = float(str(value).replace(",", ""))
        except ValueError:
            entry[1][metric] = None
    return [launches[k] for k in sorted(launches)]


def run_ncu(entries, metrics, workdir: Path, timeout: float, n: int, only=None):
    """One ncu process profiling the child's launches. Returns (launches, order, log)."""
    order_file = workdir / "order.jsonl"
    log_file = workdir / "ncu.log"
    for p in (order_file, log_file):
        if p.exists():
            p.unlink()
    names = sorted({e.kernel for e in entries})
    cmd = ["ncu", "--clock-control", "none", "--csv", "--print-units", "base",
           "--log-file", str(log_file), "--metrics", ",".join(metrics),
           "--kernel-name", "regex:^(" + "|".join(names) + ")$",
           "--launch-count", str(len(entries)),
           sys.executable, str(Path(__file__).resolve()), "--child", "--n", str(n),
           "--order-file", str(order_file)]
    if only:
        cmd += ["--only", only]
    env = dict(os.environ, TILINGLIB_BACKEND="pycuda")
    out = _run_group(cmd, env, timeout)
    log = log_file.read_text(errors="replace") if log_file.exists() else ""
    launches = parse_ncu_csv(log) or parse_ncu_csv(out)
    order = []
    if order_file.exists():
        order = [json.loads(ln) for ln in order_file.read_text().splitlines() if ln.strip()]
    return launches, order, out + "\n" + log


def _run_group(cmd, env, timeout: float) -> str:
    """Run `cmd` in its own process group; on timeout kill the whole group (ncu and the
    Python child it started). Returns stdout + stderr."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out or ""
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = proc.communicate()
        return f"ncu timed out after {timeout:.0f} s\n{out or ''}"


def gpu_readings(entries, args) -> tuple[dict, dict]:
    """{entry name: {metric: value}} from ncu, and {entry name: error} for failures."""
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget
    metrics = CORE + list(OPTIONAL.values())
    launches, order, log = run_ncu(entries, metrics, work, args.budget * 0.6, args.n)
    if not launches and "timed out" not in log:
        print("ncu gave nothing with the optional metrics (fadd, fmul, atomics); retrying "
              "with the core metrics only")
        metrics = CORE
        launches, order, log = run_ncu(entries, metrics, work, args.budget * 0.5, args.n)
    (work / "ncu_suite.log").write_text(log)
    if not launches:
        tail = "\n".join(log.strip().splitlines()[-30:])
        print(f"the suite run gave no ncu readings; the end of its log:\n{tail}\n")
    readings, errors = match(launches, order)
    missing = [e for e in entries if e.name not in readings and e.name not in errors]
    if missing:
        print(f"{len(missing)} launches not profiled in the suite run; one ncu run each now")
    for e in missing:
        left = deadline - time.monotonic()
        if left < 20:
            errors[e.name] = "not profiled: out of time budget (raise --budget)"
            continue
        one, order1, log1 = run_ncu([e], metrics, work, min(left, 120), args.n, only=e.name)
        r1, err1 = match(one, order1)
        readings.update(r1)
        errors.update(err1)
        if e.name not in r1 and e.name not in err1:
            errors[e.name] = "ncu gave no reading: " + log1.strip().splitlines()[-1:][0] \
                if log1.strip() else "ncu gave no reading"
    return readings, errors


def match(launches, order) -> tuple[dict, dict]:
    """Pair ncu's launches (in ID order) with the child's successful launches (in order)."""
    readings, errors = {}, {}
    ok = [o for o in order if "error" not in o]
    for o in order:
        if "error" in o:
            errors[o["name"]] = o["error"]
    for o, (kname, metrics) in zip(ok, launches):
        if o["kernel"] not in kname:
            errors[o["name"]] = f"ncu's launch order did not match (got {kname})"
            continue
        readings[o["name"]] = metrics
    return readings, errors


def ncu_counts(metrics: dict) -> dict:
    """ncu readings (keyed by metric name) -> the emulator's report fields."""
    out = {k: metrics.get(m) for k, m in METRICS.items()}
    ffma = metrics.get(FFMA)
    if ffma is not None:
        out["flops"] = 2 * ffma + (metrics.get(OPTIONAL["fadd"]) or 0) + \
            (metrics.get(OPTIONAL["fmul"]) or 0)
    ga = [metrics.get(OPTIONAL[k]) for k in ("global_atom", "global_red")]
    if any(v is not None for v in ga):
        out["global_atomics"] = sum(v or 0 for v in ga)
    if metrics.get(OPTIONAL["shared_atom"]) is not None:
        out["shared_atomics"] = metrics[OPTIONAL["shared_atom"]]
    return out


# ----------------------------------------------------------------------------- comparing

def verdict(field: str, ncu, emu) -> str:
    """How ncu's value relates to the emulator's (see the module docstring)."""
    if ncu is None:
        return "n/a"
    ncu = int(round(ncu))
    if ncu == emu:
        return "="
    if field.startswith("global"):
        return "DIFF"
    if field == "flops":
        # fewer: nvcc fused a multiply and an add; more: the math library's own FFMAs
        return "contracted" if ncu < emu else "libm"
    if ncu < emu:
        return "merged"
    if field.endswith("wavefronts") and emu and (ncu - emu) / emu < 0.15:
        return "noise"
    if field.endswith("requests"):
        # more instructions, same wavefronts: warps issuing with every lane predicated off
        return "predicated"
    return "DIFF"


def refine(row: dict) -> dict:
    """Instruction counts above the emulator's are predication only when the wavefronts
    (the work actually done) agree; otherwise mark them DIFF."""
    cells = row["cells"]
    for op in ("load", "store"):
        req, wf = cells.get(f"shared_{op}_instructions"), cells.get(f"shared_{op}_wavefronts")
        if req and wf and req["verdict"] == "predicated" and wf["verdict"] not in ("=", "noise"):
            req["verdict"] = "DIFF"
    return row


def compare(name: str, ncu: dict, emu: dict) -> dict:
    fields = list(METRICS) + ["flops", "global_atomics", "shared_atomics"]
    row = {"name": name, "cells": {}}
    for f in fields:
        n = ncu.get(f)
        e = emu.get(f)
        if n is None and f.endswith("atomics"):
            continue
        row["cells"][f] = {"ncu": None if n is None else int(round(n)), "emulator": e,
                           "verdict": verdict(f, n, e)}
    return refine(row)


def fmt_cell(c: dict) -> str:
    if c["verdict"] == "=":
        return f"{c['emulator']:,} ="
    if c["ncu"] is None:
        return f"– / {c['emulator']:,}"
    return f"{c['ncu']:,} / {c['emulator']:,} {c['verdict']}"


def markdown(rows, errors, header: str) -> str:
    cols = list(METRICS) + ["flops"]
    lines = [header, "",
             "Each cell: the value when ncu and the emulator agree (`=`), else "
             "`ncu / emulator verdict`.", "",
             "| launch | " + " | ".join(SHORT[c] for c in cols) + " | notes |",
             "|---|" + "---|" * len(cols) + "---|"]
    for r in rows:
        cells = [fmt_cell(r["cells"][c]) if c in r["cells"] else "" for c in cols]
        notes = []
        for k in ("global_atomics", "shared_atomics"):
            c = r["cells"].get(k)
            if c and c["emulator"]:
                notes.append(f"{k.replace('_', ' ')} {fmt_cell(c)}")
        lines.append(f"| {r['name']} | " + " | ".join(cells) + f" | {'; '.join(notes)} |")
    if errors:
        lines += ["", "Not compared:", ""] + [f"- {k}: {v}" for k, v in errors.items()]
    return "\n".join(lines) + "\n"


def summary(rows) -> str:
    """Counts of verdicts per counter group, for the closing lines of the run."""
    groups = {"global": [], "shared": [], "flops": []}
    for r in rows:
        for f, c in r["cells"].items():
            key = "global" if f.startswith("global") and not f.endswith("atomics") else \
                "shared" if f.startswith("shared") and not f.endswith("atomics") else \
                "flops" if f == "flops" else None
            if key:
                groups[key].append((r["name"], f, c))
    out = []
    for g, items in groups.items():
        bad = [(n, f) for n, f, c in items if c["verdict"] == "DIFF"]
        kinds: dict = {}
        for _, _, c in items:
            kinds[c["verdict"]] = kinds.get(c["verdict"], 0) + 1
        out.append(f"{g:7s}: " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())))
        out += [f"         DIFF in {n}: {f}" for n, f in bad]
    return "\n".join(out)


# ----------------------------------------------------------------------------- from saved JSON

def entries_from_reference(path: Path) -> list:
    """(Entry, ncu metrics) pairs for the `counters` of a tilinglib-reference JSON file."""
    data = json.loads(path.read_text())
    pairs = []
    for c in data.get("counters", []):
        kernel, N, block = c["kernel"], int(c["N"]), tuple(c["block"])
        tile, pad = c.get("tile"), c.get("pad")
        opts = []
        if tile:
            opts.append(f"-DTILE={tile}")
        if pad is not None and "db" not in kernel:
            opts.append(f"-DPAD={pad}")
        if kernel.startswith("transpose:"):
            fn = kernel.split(":", 1)[1]
            case = _course_case("transpose", fn, opts, _transpose_n(N))
        else:
            fn = {"sgemm_naive": "sgemmNaive", "sgemm_tiled": "sgemmTiled",
                  "sgemm_tiled_db": "sgemmTiledDB"}.get(kernel)
            if fn is None:
                continue
            case = _course_case(kernel, fn, opts, _sgemm_n(N, block))
        name = f"{kernel} {block[0]}x{block[1]} " + " ".join(o[2:] for o in opts) + f" N={N}"
        pairs.append((Entry(name.replace("  ", " "), case), c["metrics"]))
    return pairs


# ----------------------------------------------------------------------------- main

def write(out: Path, rows, errors, header, extra):
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(markdown(rows, errors, header))
    out.with_suffix(".json").write_text(json.dumps(
        {"header": header, "rows": rows, "errors": errors, **extra}, indent=1))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="bench/results/ncu_vs_emulator.md")
    p.add_argument("--n", type=int, default=256, help="N for the course's kernels")
    p.add_argument("--budget", type=float, default=420,
                   help="seconds for all ncu runs (the suite run gets 60%%)")
    p.add_argument("--workdir", default="bench/results/ncu_work")
    p.add_argument("--from-json", help="compare with saved ncu readings instead of a GPU")
    p.add_argument("--from-table", help="re-run the emulator against the ncu values of an "
                                        "earlier output of this script (its .json)")
    p.add_argument("--only", help=argparse.SUPPRESS)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--order-file", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child_main(args)
    t0 = time.monotonic()
    if args.from_table:
        saved = json.loads(Path(args.from_table).read_text())
        # Already in report fields: keep them as they are.
        readings = {r["name"]: {RENAMED.get(f, f): c["ncu"] for f, c in r["cells"].items()}
                    for r in saved["rows"]}
        entries = [e for e in suite(args.n) if e.name in readings]
        errors = dict(saved.get("errors", {}))
        header = (f"# Nsight Compute (saved in {args.from_table}) vs the CPU emulator as it is "
                  f"now")
    elif args.from_json:
        pairs = entries_from_reference(Path(args.from_json))
        readings = {e.name: m for e, m in pairs}
        entries, errors = [e for e, _ in pairs], {}
        header = f"# Nsight Compute (saved in {args.from_json}) vs the CPU emulator"
    else:
        if shutil.which("ncu") is None:
            print("ncu is not on PATH: install Nsight Compute or use --from-json")
            return 2
        entries = suite(args.n)
        print(f"profiling {len(entries)} launches under ncu (budget {args.budget:.0f} s)")
        readings, errors = gpu_readings(entries, args)
        header = "# Nsight Compute (`ncu --clock-control none`) vs the CPU emulator"
    rows = []
    for e in entries:
        if e.name not in readings:
            continue
        try:
            emu = emulator_counts(e)
        except Exception as exc:  # noqa: BLE001 - keep comparing the others
            errors[e.name] = f"emulator: {type(exc).__name__}: {exc}"
            continue
        ncu = readings[e.name] if args.from_table else ncu_counts(readings[e.name])
        rows.append(compare(e.name, ncu, emu))
    out = Path(args.out)
    write(out, rows, errors, header, {"seconds": round(time.monotonic() - t0, 1)})
    print(markdown(rows, errors, header))
    print(summary(rows))
    print(f"\n{len(rows)} launches compared, {len(errors)} not; table in {out} and "
          f"{out.with_suffix('.json')} ({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
