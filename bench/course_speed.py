"""How long does a student wait? The lessons' explorers and the lessons under nbval, timed.
Figures for the issue's targets (a slider move at most 0.5 s of compute on a 2-core
machine; the eight lessons under nbval in at most 20 s); a benchmark, never a timed test.

    python3 bench/course_speed.py                          # this tree
    python3 bench/course_speed.py --compare-tree DIR       # DIR (e.g. an older checkout) and
                                                           # this tree, side by side
    python3 bench/course_speed.py --compare-tree DIR --repeat 3 --skip-nbval

Each figure is taken in a fresh process per tree (PYTHONPATH puts that tree's tilinglib
first), the trees alternating, `--repeat` times; the best of each is kept, so that a machine
shared with others slows both alike. "Compute" is the process's CPU time (what the move
costs the machine); the wall time is printed beside it.

Explorer moves, on the CPU emulator, as a student makes them (each to a shape not seen
before, then back to one seen: the explorer keeps what it computed):

- lesson 01: `roofline_explorer`, TILE 1 .. 32 and the GPU menu, its plot drawn as in
  Jupyter (an IPython shell with the inline backend);
- lesson 03: `tile_explorer(128)`, TILE 1, 2, 4, 8, 16, 32;
- lesson 07: `ladder_explorer("regtile2d", 128, BM = BN = 64, TM = TN = 4)`, each slider;
- lesson 08: `ladder_explorer("warptile", 128)`, the block tile, APAD and the warp layout.

nbval: ``pytest --nbval-lax notebooks/0*.ipynb`` (the README's test command on the lessons),
wall time and the CPU time of pytest and its kernels.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (lesson, explorer, moves): each move a dict of what the student changes.
MOVES = {
    "01 roofline": [{"tile": t} for t in (1, 2, 4, 8, 16)] + [{"gpu": "A100 SXM 80GB"}],
    "03 tile": [{"tile": t} for t in (1, 2, 4, 8, 32, 16)],
    "07 regtile2d": [{"BK": 16}, {"TM": 8}, {"TN": 8}, {"BM": 128}, {"BN": 128}, {"BK": 8},
                     {"BM": 64}],
    "08 warptile": [{"BK": 16}, {"APAD": 0}, {"BM": 64}, {"BN": 64}, {"BK": 8},
                    {"layout": 1}, {"BM": 128}],
}


def _explorer(name: str):
    from tilinglib import widgets

    if name == "01 roofline":
        return widgets.roofline_explorer("H200 SXM", value=32)
    if name == "03 tile":
        return widgets.tile_explorer(128, value=16)
    if name == "07 regtile2d":
        return widgets.ladder_explorer("regtile2d", 128,
                                       value={"BM": 64, "BN": 64, "TM": 4, "TN": 4})
    return widgets.ladder_explorer("warptile", 128)


def _move(e, move: dict) -> None:
    if "gpu" in move and e.gpu.value != move["gpu"]:
        e.gpu.value = move["gpu"]
    if "tile" in move:
        e.select(move["tile"])
    elif "gpu" in move:
        pass
    elif "layout" in move:
        d = e.joints["warp layout"]
        d.value = d.options[move["layout"]][1]       # the next layout the menu offers
    else:
        e.select(**move)
    if getattr(e, "error", None):
        raise SystemExit(f"move {move}: {e.error}")


def worker_explorer(name: str) -> dict:
    """CPU and wall seconds of the explorer's start and of each move."""
    os.environ["TILINGLIB_BACKEND"] = "emulator"
    if name == "01 roofline":
        # In an IPython shell with the inline backend, as in Jupyter: the plot is drawn too.
        import matplotlib
        from IPython.core.interactiveshell import InteractiveShell

        InteractiveShell.instance()
        matplotlib.use("module://matplotlib_inline.backend_inline")
    c, w = time.process_time(), time.perf_counter()
    e = _explorer(name)
    start = (time.process_time() - c, time.perf_counter() - w)
    moves, first = [], None
    for move in MOVES[name]:
        c, w = time.process_time(), time.perf_counter()
        _move(e, move)
        moves.append((time.process_time() - c, time.perf_counter() - w))
        if first is None:                            # the state after the first move
            first = dict(e.params) if hasattr(e, "params") else dict(
                move, **({"gpu": e.gpu.value} if hasattr(e, "gpu") else {}))
    c, w = time.process_time(), time.perf_counter()
    _move(e, first)                                  # back to a shape seen before
    again = (time.process_time() - c, time.perf_counter() - w)
    return {"start": start, "moves": moves, "again": again}


def _run(tree: Path, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TILINGLIB_BACKEND="emulator")
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", *args],
                          capture_output=True, text=True, env=env, cwd=tree)
    if proc.returncode:
        raise SystemExit(f"worker {args} in {tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def nbval(tree: Path) -> dict:
    """Wall seconds and CPU seconds (pytest and its kernels) of the lessons under nbval."""
    env = dict(os.environ, PYTHONPATH=str(tree) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TILINGLIB_BACKEND="emulator")
    lessons = sorted(str(p.relative_to(tree)) for p in (tree / "notebooks").glob("0*.ipynb"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--nbval-lax", "--nbval-current-env", *lessons],
                          capture_output=True, text=True, env=env, cwd=tree)
    wall = time.perf_counter() - w
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"nbval in {tree} failed:\n{proc.stdout[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "lessons": len(lessons)}


def _best(runs: list[dict]) -> dict:
    """Per figure, the best (least CPU) of the repeats."""
    out = {"start": min(r["start"] for r in runs), "again": min(r["again"] for r in runs)}
    out["moves"] = [min(m) for m in zip(*(r["moves"] for r in runs))]
    return out


def _fmt(pair) -> str:
    return f"{pair[0]:5.2f} ({pair[1]:4.2f})"


def report(trees: list[tuple[str, Path]], repeat: int, skip_nbval: bool) -> None:
    results = {label: {} for label, _ in trees}
    for _ in range(repeat):
        for name in MOVES:
            for label, tree in trees:
                results[label].setdefault(name, []).append(_run(tree, "explorer", name))
        if not skip_nbval:
            for label, tree in trees:
                results[label].setdefault("nbval", []).append(nbval(tree))
    labels = [label for label, _ in trees]
    print(f"Best of {repeat}; seconds of CPU (wall in parentheses); 2 cores here: "
          f"{os.cpu_count()} CPUs seen, load {os.getloadavg()[0]:.1f} at the end.\n")
    head = "".join(f"{label:>22}" for label in labels)
    for name, moves in MOVES.items():
        print(f"{name} explorer{'':<27}{head}")
        best = {label: _best(results[label][name]) for label in labels}
        print(f"  {'start (first shape)':<42}" + "".join(f"{_fmt(best[l]['start']):>22}"
                                                    for l in labels))
        for i, move in enumerate(moves):
            what = ", ".join(f"{k}={v}" for k, v in move.items())
            print(f"  {'move ' + what:<42}" + "".join(f"{_fmt(best[l]['moves'][i]):>22}"
                                                     for l in labels))
        print(f"  {'back to the first move (seen before)':<42}"
              + "".join(f"{_fmt(best[l]['again']):>22}" for l in labels))
        worst = "".join(f"{max(c for c, _ in best[l]['moves']):>16.2f} cpu  " for l in labels)
        med = "".join(f"{statistics.median(c for c, _ in best[l]['moves']):>16.2f} cpu  "
                      for l in labels)
        print(f"  {'slowest move':<42}{worst}\n  {'median move':<42}{med}\n")
    if not skip_nbval:
        print(f"the lessons under nbval{'':<21}{head}")
        for key, what in (("wall", "wall seconds"), ("cpu", "CPU seconds, pytest + kernels")):
            print(f"  {what:<42}" + "".join(
                f"{min(r[key] for r in results[l]['nbval']):>22.1f}" for l in labels))
        print(f"  {'lessons':<42}" + "".join(f"{results[l]['nbval'][0]['lessons']:>22}"
                                               for l in labels))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--compare-tree", metavar="DIR", help="another checkout, measured first")
    p.add_argument("--repeat", type=int, default=2, help="runs per tree (best kept)")
    p.add_argument("--skip-nbval", action="store_true", help="explorers only")
    p.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        what, name = args.worker[0], " ".join(args.worker[1:])
        print(json.dumps(worker_explorer(name)))
        return 0
    trees = [("this tree", ROOT)]
    if args.compare_tree:
        trees.insert(0, (f"{Path(args.compare_tree).name} (before)",
                         Path(args.compare_tree).resolve()))
    report(trees, args.repeat, args.skip_nbval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
