"""One class graded three ways: ``--jobs``, shards one after another then ``--merge``, Dask.

    .venv/bin/python bench/grade_shards.py                  # the 300-class of grade_class.py
    .venv/bin/python bench/grade_shards.py --n 60 --shards 3 --jobs 2

Builds the class of ``bench/grade_class.py`` (`build_class`: correct, buggy and hostile
submissions of a1_tiled_sgemm, shuffled with a fixed seed) and grades it with
``python -m tilinglib.grading`` (each run a subprocess):

1. ``--jobs J`` over the whole class;
2. ``--shard K/N --jobs J`` for K = 1..N one after another (as N machines would, but on this
   one), then ``--merge`` of the N results files, each given with the digest its run printed;
3. ``--scheduler`` on a Dask LocalCluster of J worker processes, one thread each (needs the
   ``cluster`` extra; left out without it).

It prints each wall time (the shards' one by one and summed; the merge's; the cluster's
start-up apart from its grading), for run 1 the submissions per minute and the peak memory
of its whole process tree (the command, its grading processes and their clang children, as
the command measures it and writes in grades.json) and the number of rows (student, assignment, status, score)
that differ from run 1, in all and among the deterministic kinds (every kind but the hostile
ones whose outcome depends on time or memory: an endless loop may end graded or timeout).
Exit status 0 when no deterministic row differs and every command succeeded, else 1.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _grade_class():
    spec = importlib.util.spec_from_file_location("grade_class", ROOT / "bench" / "grade_class.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("grade_class", module)
    spec.loader.exec_module(module)
    return module


def _load() -> str:
    """The 1-minute load average (other work on the machine slows every run alike)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except (AttributeError, OSError):
        return "unknown"


def rows_of(csv_path: Path) -> dict:
    """{(student, assignment): (status, score)} of a grades.csv."""
    with open(csv_path, newline="") as fh:
        return {(r["student"], r["assignment"]): (r["status"], float(r["score"]))
                for r in csv.DictReader(fh)}


def command(argv, env) -> tuple:
    """Run ``python -m tilinglib.grading ARGV``: (wall seconds, completed process)."""
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "tilinglib.grading", *map(str, argv)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
    return time.monotonic() - t0, proc


def _memory(results: Path) -> dict:
    """The command's own memory figures from its results file (``run.memory``: the peak of
    the whole process tree, the command and every grading process and compiler under it,
    `tilinglib.grading.memory`), {} if it has none."""
    try:
        return json.loads(results.read_text())["run"]["memory"] or {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def outputs(folder: Path) -> list:
    return ["--out", folder / "grades.csv", "--results", folder / "grades.json",
            "--feedback-dir", folder / "feedback", "--quiet"]


def differing(rows: dict, reference: dict, plan: dict) -> tuple:
    """(rows that differ from `reference` or are missing or extra, of them deterministic)."""
    keys = set(rows) | set(reference)
    diff = [k for k in keys if rows.get(k) != reference.get(k)]
    return len(diff), sum(plan[s].deterministic for s, _ in diff if s in plan)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=300, help="submissions (default 300)")
    p.add_argument("--shards", type=int, default=3, help="N of --shard K/N (default 3)")
    p.add_argument("--jobs", type=int, default=2,
                   help="--jobs of runs 1 and 2, Dask worker processes of run 3 (default 2)")
    p.add_argument("--timeout", type=float, default=20.0, help="--timeout per submission, s")
    p.add_argument("--memory", type=int, default=1536, help="--memory per submission, MiB")
    p.add_argument("--no-dask", action="store_true", help="leave out run 3")
    p.add_argument("--no-shards", action="store_true", help="leave out run 2 (the shards)")
    args = p.parse_args(argv)

    gc = _grade_class()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x])}
    limits = ["--timeout", args.timeout, "--memory", args.memory]
    problems = []
    with tempfile.TemporaryDirectory(prefix="tilinglib-shards-") as tmp:
        base = Path(tmp)
        plan = gc.build_class(base / "submitted", args.n)
        print(f"class: {len(plan)} submissions of {gc.ASSIGNMENT} "
              f"({sum(k.hostile for k in plan.values())} hostile, "
              f"{sum(k.deterministic for k in plan.values())} deterministic) on "
              f"{os.cpu_count()} cores; load average {_load()}", flush=True)

        wall, proc = command([base / "submitted", "--jobs", args.jobs, *limits,
                              *outputs(base / "jobs")], env)
        if proc.returncode:
            print(proc.stderr[-2000:], file=sys.stderr)
            return 1
        reference = rows_of(base / "jobs" / "grades.csv")
        print(f"--jobs {args.jobs}: {wall:.1f} s for {len(plan)} submissions "
              f"({60 * len(plan) / wall:.1f} per minute)", flush=True)
        gc._print_memory(_memory(base / "jobs" / "grades.json"))

        if not args.no_shards:
            shard_walls, files = [], []
            for k in range(1, args.shards + 1):
                folder = base / f"shard{k}"
                wall_k, proc = command([base / "submitted", "--shard", f"{k}/{args.shards}",
                                        "--jobs", args.jobs, *limits, *outputs(folder)], env)
                if proc.returncode:
                    problems.append(f"shard {k}: exit {proc.returncode}: {proc.stderr[-500:]}")
                    continue
                shard_walls.append(wall_k)
                files.append(f"{folder / 'grades.json'}={proc.stdout.strip()}")
                print(f"  --shard {k}/{args.shards}: {wall_k:.1f} s "
                      f"({len(rows_of(folder / 'grades.csv'))} submissions)", flush=True)
            wall_m, proc = command(["--merge", *files, "-o", base / "merged" / "grades.json",
                                    "--out", base / "merged" / "grades.csv",
                                    "--feedback-dir", base / "merged" / "feedback"], env)
            if proc.returncode:
                problems.append(f"merge: exit {proc.returncode}: {proc.stderr[-500:]}")
                print(f"{args.shards} shards one after another: {sum(shard_walls):.1f} s; merge "
                      f"refused ({proc.stderr.strip()[-300:]})")
            else:
                d_all, d_det = differing(rows_of(base / "merged" / "grades.csv"), reference, plan)
                print(f"{args.shards} shards one after another: {sum(shard_walls):.1f} s; merge: "
                      f"{wall_m:.1f} s; rows differing from --jobs {args.jobs}: {d_all} "
                      f"(deterministic: {d_det})", flush=True)
                if d_det:
                    problems.append(f"merged shards: {d_det} deterministic rows differ")

        if not args.no_dask:
            try:
                from distributed import LocalCluster
            except ImportError:
                print("Dask: not run (no dask.distributed: pip install -e '.[cluster]')")
            else:
                os.environ["PYTHONPATH"] = env["PYTHONPATH"]     # the workers' tilinglib
                t0 = time.monotonic()
                with LocalCluster(n_workers=args.jobs, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
                    start = time.monotonic() - t0
                    wall_d, proc = command([base / "submitted", "--scheduler",
                                            cluster.scheduler_address, *limits,
                                            *outputs(base / "dask")], env)
                if proc.returncode:
                    problems.append(f"dask: exit {proc.returncode}: {proc.stderr[-500:]}")
                else:
                    d_all, d_det = differing(rows_of(base / "dask" / "grades.csv"), reference,
                                             plan)
                    print(f"Dask, {args.jobs} worker processes: {wall_d:.1f} s (cluster "
                          f"start-up {start:.1f} s apart); rows differing from --jobs "
                          f"{args.jobs}: {d_all} (deterministic: {d_det})", flush=True)
                    if d_det:
                        problems.append(f"dask: {d_det} deterministic rows differ")
    print(f"load average at the end: {_load()}")
    for line in problems:
        print("problem: " + line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
