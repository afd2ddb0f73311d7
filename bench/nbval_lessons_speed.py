"""The eight lessons under nbval, timed per notebook and per cell (issue 19: at most 20 s in
all on a 2-core machine). A benchmark, never a timed test.

    python3 bench/nbval_lessons_speed.py                        # this tree
    python3 bench/nbval_lessons_speed.py --tree DIR --tree .    # DIR (e.g. an export of an
                                                                # older commit), then this tree
    python3 bench/nbval_lessons_speed.py --tree DIR --tree . --repeat 2 --out FILE

Each tree runs, in a fresh process with that tree's tilinglib first on PYTHONPATH and
TILINGLIB_BACKEND=emulator, the README's test command on the lessons:

    python -m pytest -q -p no:cacheprovider --durations=0 --durations-min=0 notebooks/0*.ipynb

(pyproject.toml adds --nbval-lax --nbval-current-env). Reported: the wall seconds of the
whole pytest process, pytest's own "passed in" seconds, the sums of the cells' call, setup
(the kernel's start) and teardown times per notebook, and the slowest cells; beside the
wall seconds, the CPU seconds of pytest and its kernels (what the run costs the machine,
less moved by other work on it than the wall time). With ``--repeat`` the trees alternate
and the run with the least CPU time is kept per tree.
``--cache`` (repeatable) says how the tree finds tilinglib's disk cache
(toolchain/disk_cache.py, ``TILINGLIB_CACHE_DIR``): ``cold`` (default: a fresh empty folder for
each run, a first run's figures), ``warm`` (a folder that one untimed run of the lessons filled
first: a second run's, or the lessons after the tests in one pytest run) or ``off``. A tree
without the cache (an older commit) is measured once, in the first mode only.
With the notebooks run ahead (tilinglib/devtools/nbval_kernels.py, two CPUs or more) a
cell's "call" time is how long nbval waited for it, not what it cost; for the cost per cell
run with ``TILINGLIB_NBVAL_AHEAD=0`` in the environment (it is passed on).
``--bytecode`` says whether the tree's modules have their bytecode: ``as-is`` (default:
whatever __pycache__ there is; PYTHONDONTWRITEBYTECODE=1 means none is written),
``compiled`` (``python -m compileall -q tilinglib`` first, as an installed package has it)
or ``none`` (the tree's __pycache__ folders under tilinglib/ removed first).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_ROW = re.compile(r"^\s*([\d.]+)s (call|setup|teardown)\s+(\S+?)::(Cell \d+)\s*$")
_PASSED = re.compile(r"(\d+) passed.* in ([\d.]+)s")


def _bytecode(tree: Path, mode: str) -> None:
    if mode == "compiled":
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "tilinglib")],
                       check=True, stdout=subprocess.DEVNULL)
    elif mode == "none":
        for d in (tree / "tilinglib").rglob("__pycache__"):
            shutil.rmtree(d)


def has_cache(tree: Path) -> bool:
    return (tree / "tilinglib" / "toolchain" / "disk_cache.py").is_file()


def run_tree(tree: Path, cache: str = "cold") -> dict:
    """One nbval run of the tree's lessons: wall seconds, pytest's seconds, per-cell rows.
    `cache`: cold, warm or off (see the module's docstring)."""
    if cache == "off":
        return _run(tree, "off")
    with tempfile.TemporaryDirectory(prefix="nbval-cache-") as folder:
        if cache == "warm":
            _run(tree, folder)
        return _run(tree, folder)


def _run(tree: Path, cache_dir: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TILINGLIB_BACKEND="emulator", TILINGLIB_CACHE_DIR=cache_dir)
    lessons = sorted(str(p.relative_to(tree)) for p in (tree / "notebooks").glob("0*.ipynb"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--durations=0", "--durations-min=0", *lessons],
                          capture_output=True, text=True, env=env, cwd=tree)
    wall = time.perf_counter() - w
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    passed = _PASSED.search(proc.stdout)
    if passed is None:
        raise SystemExit(f"nbval in {tree} did not run:\n{proc.stdout[-3000:]}")
    # (a failing cell is reported, not fatal: its time is still spent)
    failed = re.findall(r"^FAILED (\S+::Cell \d+)", proc.stdout, re.M)
    rows = [(float(m[1]), m[2], m[3], m[4]) for m in map(_ROW.match, proc.stdout.splitlines())
            if m]
    return {"wall": wall, "cpu": cpu, "pytest": float(passed[2]), "passed": int(passed[1]),
            "failed": failed, "rows": rows}


def report(label: str, r: dict) -> list[str]:
    per = collections.defaultdict(lambda: collections.Counter())
    for sec, phase, nb, _ in r["rows"]:
        per[Path(nb).name][phase] += sec
    failed = f", {len(r['failed'])} failed ({', '.join(r['failed'])})" if r["failed"] else ""
    tot = collections.Counter()
    for c in per.values():
        tot.update(c)
    out = [f"== {label}",
           f"wall seconds of the pytest process: {r['wall']:.1f} (CPU seconds of pytest and "
           f"its kernels: {r['cpu']:.1f}); pytest: {r['passed']} passed{failed} "
           f"in {r['pytest']:.1f} s; cells' call {tot['call']:.1f} s + kernel start (setup) "
           f"{tot['setup']:.1f} s + teardown {tot['teardown']:.1f} s",
           f"  {'notebook':<40} {'call':>6} {'setup':>6} {'teardown':>8}"]
    for nb in sorted(per):
        c = per[nb]
        out.append(f"  {nb:<40} {c['call']:>6.2f} {c['setup']:>6.2f} {c['teardown']:>8.2f}")
    out.append("  slowest 10 cells (call):")
    calls = sorted((row for row in r["rows"] if row[1] == "call"), reverse=True)[:10]
    out += [f"    {sec:5.2f} s  {Path(nb).name}::{cell}" for sec, _, nb, cell in calls]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tree", action="append", help="a checkout to measure (repeatable; "
                   "default: this one)")
    p.add_argument("--repeat", type=int, default=1, help="runs per tree (least CPU kept)")
    p.add_argument("--bytecode", choices=("as-is", "compiled", "none"), default="as-is")
    p.add_argument("--cache", action="append", choices=("cold", "warm", "off"),
                   help="the disk cache's state (repeatable; default: cold)")
    p.add_argument("--out", help="also write the report to this file")
    args = p.parse_args(argv)
    trees = [Path(t).resolve() for t in (args.tree or [str(ROOT)])]
    modes = args.cache or ["cold"]
    runs = [(tree, mode) for tree in trees
            for mode in (modes if has_cache(tree) else modes[:1])]
    best: dict = {}
    for _ in range(args.repeat):
        for tree, mode in runs:
            _bytecode(tree, args.bytecode)
            r = run_tree(tree, mode)
            if (tree, mode) not in best or r["cpu"] < best[tree, mode]["cpu"]:
                best[tree, mode] = r
    lines = [f"bench/nbval_lessons_speed.py {' '.join(argv if argv is not None else sys.argv[1:])}",
             f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the end; "
             f"bytecode {args.bytecode}; PYTHONDONTWRITEBYTECODE="
             f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}; best of {args.repeat}", ""]
    for tree, mode in runs:
        label = f"{tree}, disk cache {mode}" if has_cache(tree) else f"{tree} (no disk cache)"
        lines += report(label, best[tree, mode]) + [""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
