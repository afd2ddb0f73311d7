"""Each kernel of the grader's corpus, graded on the public inputs and on drawn ones.

    .venv/bin/python bench/grading_draws.py                # tests/submissions/, a1 and a4
    .venv/bin/python bench/grading_draws.py --seeds 3 --only bad_floor

For every kernel of ``tests/submissions/*.cu`` (check_sgemm, with its ``// grader: block=``)
and ``tests/submissions/a4/*.cu`` (check_coarsened), and for the generated attacks of
``bench/grading_attacks.py``, prints the score on the public shapes and data (what the
student's notebook shows, and what the command gave before the instructor's secret) and the
scores inside `tilinglib.grading.secret.drawing` for `--seeds` draws (what the command gives
now), with the seconds each took and the first check a drawn grade fails that the public one
passes. A correct kernel must score 100 on every draw; a kernel whose score depends on the
draw is named at the end.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _attacks():
    spec = importlib.util.spec_from_file_location("grading_attacks",
                                                  ROOT / "bench" / "grading_attacks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus() -> list:
    """(name, grader, source, keyword arguments) for every kernel graded here."""
    import nbformat

    from tilinglib.grading import check_coarsened, check_sgemm
    from tilinglib.grading.assignments import ASSIGNMENTS
    from tilinglib.grading.extract import extract_from_notebook

    def solution(name):
        nb = nbformat.read(ROOT / "notebooks" / "assignments" / name / f"{name}.ipynb",
                           as_version=4)
        return extract_from_notebook(nb, ASSIGNMENTS[name]).values["KERNEL"]

    sgemm = lambda src, **kw: check_sgemm(src, "sgemm", gpu=False, **kw)   # noqa: E731
    items = []
    for path in sorted((ROOT / "tests" / "submissions").glob("*.cu")):
        text = path.read_text()
        block = re.search(r"^// grader: block=\((.*?)\)$", text, re.M)
        kw = {"block": tuple(int(x) for x in block.group(1).split(","))} if block else {}
        items.append((path.stem, sgemm, text, kw))
    for path in sorted((ROOT / "tests" / "submissions" / "a4").glob("*.cu")):
        items.append(("a4/" + path.stem, check_coarsened, path.read_text(), {}))
    ga = _attacks()
    a1, a4 = solution("a1_tiled_sgemm"), solution("a4_coarsen")
    items += [("a1 solution", sgemm, a1, {}), ("a4 solution", check_coarsened, a4, {}),
              ("attack: lookup table", sgemm, ga.lookup_table(16), {}),
              ("attack: tiled on public shapes only", sgemm, ga.shape_detecting(16), {}),
              ("attack: wrong on big grids, TILE 16", sgemm, ga.wrong_on_big_grids(a1), {}),
              ("attack: wrong on big grids, TILE 32", sgemm,
               ga.wrong_on_big_grids(a1.replace("#define TILE 16", "#define TILE 32")), {}),
              ("a4 attack: tiled on public shapes only", check_coarsened,
               ga.shape_detecting_coarse(a4), {}),
              ("a4 attack: wrong on big grids", check_coarsened,
               ga.wrong_on_big_grids(a4, "sgemmCoarse"), {})]
    return items


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=2, help="draws per kernel (default 2)")
    p.add_argument("--only", default="", help="only kernels whose name contains this")
    args = p.parse_args(argv)
    from tilinglib.grading.secret import Draw, drawing

    warnings.simplefilter("ignore")
    varies = []
    print(f"{'kernel':<44} {'public':>7} {'drawn':>15}  seconds (public / drawn)  first new failure")
    for name, grader, source, kw in corpus():
        if args.only not in name:
            continue
        t0 = time.perf_counter()
        public = grader(source, **kw)
        t1 = time.perf_counter()
        drawn = []
        for seed in range(1, args.seeds + 1):
            with drawing(Draw(seed)):
                drawn.append(grader(source, **kw))
        t2 = time.perf_counter()
        scores = [r.score for r in drawn]
        passed = {c.name for c in public.checks if c.passed}
        new = [c for c in drawn[0].checks if not c.passed and c.name in passed]
        first = f"{new[0].name}: {new[0].message.splitlines()[0][:80]}" if new else ""
        print(f"{name:<44} {public.score:>7g} {' '.join(f'{s:g}' for s in scores):>15}  "
              f"{t1 - t0:6.1f} / {(t2 - t1) / len(drawn):6.1f}   {first}", flush=True)
        if len(set(scores)) > 1:
            varies.append(name)
    print("scores that depend on the draw: " + (", ".join(varies) if varies else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
