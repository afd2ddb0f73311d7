"""What each assignment grades, and where in its notebook the answers live.

The contract between the assignments' notebooks, nbgrader's test cells and the command
``python -m tilinglib.grading``:

- Every answer a student gives is a **Python literal** bound to a name at the top level of
  one nbgrader solution cell: ``KERNEL = r\"\"\"...\"\"\"``, ``CHOSEN_TILE = 32``,
  ``SHARED_BYTES = {4: 128, ...}``. `Answer` names the variable and the cell (its nbgrader
  ``grade_id``). The command reads these literals with `ast` and never executes the
  notebook (`literal_answers` reads one cell the same way: the last top-level assignment of
  a name wins); the notebook's test cells pass the same values from the notebook's
  namespace.
- `Assignment.grade(answers)` takes a mapping from answer name to value (an answer that is
  missing, or not a literal of the expected type, is absent) and returns a `GradeReport`
  whose `max_score` is `Assignment.max_score`. It raises nothing for any answer.
- `Assignment.parts` splits those points by nbgrader test cell: `Part.cell` is the test
  cell's grade_id, `Part.points` its points in the notebook. `grade_part(name, cell,
  answers)` grades one part (what that cell's last line gives nbgrader), and `grade` is the
  concatenation of all parts, so the points a notebook's test cells give are the points the
  command gives.
- `Assignment.manual` lists the grade_ids of the cells an instructor grades by hand (with the
  rubric in the source notebook); their points are not in `max_score`.

`ASSIGNMENTS` maps each assignment's name (its folder under notebooks/assignments/) to its
`Assignment`.
"""

from __future__ import annotations

import copy
import functools
import math
import time
import warnings
from dataclasses import dataclass, replace
from typing import Callable, Mapping

from .coarse import check_coarsened
from .sgemm import Check, GradeReport, check_sgemm
from ..gpu import MAX_THREADS_PER_BLOCK, ceil_div

__all__ = ["Answer", "Part", "Assignment", "ASSIGNMENTS", "grade", "grade_part",
           "literal_answers", "A2_BUGGY_KERNEL", "A3_TILES"]


@dataclass(frozen=True)
class Answer:
    """One answer: the variable `name`, the nbgrader `cell` (grade_id) that assigns it, and
    the Python `types` its literal value may have."""

    name: str
    cell: str
    types: tuple = (str,)


@dataclass(frozen=True)
class Part:
    """The points of one nbgrader test cell: its grade_id `cell`, its `points`, the answer
    names it reads (`answers`), and `grader`, which turns those answers into checks whose
    `max_points` add up to `points`."""

    cell: str
    points: float
    answers: tuple
    grader: Callable[[Mapping[str, object]], list]


@dataclass(frozen=True)
class Assignment:
    """An assignment: its `name`, its `answers`, the autograded points `max_score`, the
    grade_ids graded by hand (`manual`), and `grader`, which turns the answers into a
    `GradeReport`. `parts` gives the autograded points per nbgrader test cell."""

    name: str
    answers: tuple
    max_score: float
    grader: Callable[[Mapping[str, object]], GradeReport]
    manual: tuple = ()
    parts: tuple = ()

    def grade(self, answers: Mapping[str, object]) -> GradeReport:
        """Grade `answers` (name -> value; absent where the student gave none)."""
        return self.grader(answers)

    def grade_cells(self, answers: Mapping[str, object]) -> tuple:
        """Grade `answers` once and split the score by nbgrader test cell.

        Returns (`GradeReport`, {grade_id: points earned in that cell}); the points add up
        to the report's score. With one part (or none) the whole score is that cell's."""
        if len(self.parts) <= 1:
            report = self.grade(answers)
            return report, ({self.parts[0].cell: report.score} if self.parts else {})
        t0 = time.perf_counter()
        checks, cells = [], {}
        for part in self.parts:
            got = part.grader(answers)
            cells[part.cell] = round(sum(c.points for c in got), 4)
            checks += got
        return _report(self.name, checks, t0), cells

    def part(self, cell: str) -> Part:
        """The `Part` graded in test cell `cell`; KeyError naming the cells if none."""
        for p in self.parts:
            if p.cell == cell:
                return p
        raise KeyError(f"{self.name} has no autograded cell {cell!r}; its cells: "
                       f"{', '.join(p.cell for p in self.parts)}")


# --------------------------------------------------------------------------- helpers
def _given(answers: Mapping[str, object], answer: Answer):
    """The value of `answer` if given with one of its types (bool is not an int), else None."""
    try:
        value = answers.get(answer.name) if hasattr(answers, "get") else None
    except Exception:                      # a mapping that misbehaves gives no answer
        return None
    if isinstance(value, bool) and bool not in answer.types:
        return None
    return value if isinstance(value, answer.types) else None


def _as_number_text(value) -> str | None:
    """The number a string holds, written as a literal ("32" -> "32", " 0.5" -> "0.5"), or
    None if it holds none."""
    if not isinstance(value, str):
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return str(int(number)) if number.is_integer() else repr(number)


def _count(answers: Mapping[str, object], answer: Answer):
    """A whole-number answer (a TILE, a line number): (value, None) for an int or a
    whole-valued float (32.0 is 32), else (None, why) with `why` saying what is wrong with
    what was given (None when nothing usable was given)."""
    try:
        value = answers.get(answer.name) if hasattr(answers, "get") else None
    except Exception:                      # a mapping that misbehaves gives no answer
        return None, None
    if isinstance(value, bool):
        return None, None
    if isinstance(value, int):
        return value, None
    if isinstance(value, float) and math.isfinite(value):
        if value.is_integer():
            return int(value), None
        return None, (f"{answer.name} = {value!r}: the answer is a whole number, not "
                      f"{value!r}")
    number = _as_number_text(value)
    if number is not None:
        return None, (f"{answer.name} = {value!r}: write a number, not a string: "
                      f"{answer.name} = {number}")
    return None, None


def _report(name: str, checks: list, t0: float) -> GradeReport:
    return GradeReport(name, tuple(checks), None, None, time.perf_counter() - t0)


def _combine(spec_name: str, parts: tuple) -> Callable[[Mapping[str, object]], GradeReport]:
    def grader(answers):
        t0 = time.perf_counter()
        checks = [c for part in parts for c in part.grader(answers)]
        return _report(spec_name, checks, t0)
    return grader


def _scaled(report: GradeReport, points: float, prefix: str) -> list:
    """`report`'s checks, renamed with `prefix` and scaled so their maxima add to `points`."""
    factor = points / report.max_score if report.max_score else 0.0
    out = []
    for c in report.checks:
        if c.max_points == 0 and c.passed and c.message == "ok":
            continue            # kept when it says something ("ok, graded as sgemm<16>")
        out.append(Check(f"{prefix}{c.name}", round(c.points * factor, 4),
                         round(c.max_points * factor, 4), c.passed, c.message))
    return out


def _kernel_checks(source, points: float, prefix: str, missing: str) -> list:
    if not isinstance(source, str) or not source.strip():
        return [Check(f"{prefix}score", 0, points, False, missing)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = check_sgemm(source, "sgemm", gpu=False)
    return _scaled(report, points, prefix)


def literal_answers(source: str) -> dict:
    """The answers one notebook cell gives, read without running it, by the command's own
    rule (`tilinglib.grading.extract.cell_literals`): every top-level ``NAME = <literal>``,
    the last binding of each name winning. Returns {name: value}."""
    from .extract import cell_literals

    return cell_literals(source)


# --------------------------------------------------------------------------- a1
A1_KERNEL = Answer("KERNEL", "a1-kernel")


def _a1_kernel(answers) -> list:
    source = _given(answers, A1_KERNEL)
    if not isinstance(source, str) or not source.strip():
        return [Check("KERNEL", 0, 100, False, "no kernel: set KERNEL = r\"\"\"...\"\"\" to "
                      "your CUDA C source (a string literal) in the answer cell")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(check_sgemm(source, "sgemm", gpu=False).checks)


_A1_PARTS = (Part("a1-test-grader", 100, ("KERNEL",), _a1_kernel),)


def _grade_a1(answers: Mapping[str, object]) -> GradeReport:
    t0 = time.perf_counter()
    source = _given(answers, A1_KERNEL)
    if isinstance(source, str) and source.strip():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return check_sgemm(source, "sgemm", gpu=False)
    return _report("a1_tiled_sgemm", _a1_kernel(answers), t0)


# --------------------------------------------------------------------------- a2
A2_BUGGY_KERNEL = r"""#define TILE 16
__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + tx, kb = t * TILE + ty;
        As[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K) ? B[(size_t)kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[ty][k] * Bs[k][tx];
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = sum;
}"""
"""Assignment 2's kernel with its two bugs, exactly as the notebook prints it (line 1 is
``#define TILE 16``)."""

A2_BOUNDARY = Answer("BOUNDARY_BUG_LINE", "a2-boundary-answer", (int,))
A2_BARRIER = Answer("BARRIER_MISSING_AFTER_LINE", "a2-barrier-answer", (int,))
A2_FIXED = Answer("FIXED_KERNEL", "a2-fix-answer")
# The line whose load reads outside B: the emulator's out-of-bounds report names it
# (tests/test_assignments.py derives it again from a run).
_A2_BOUNDARY_LINE = 13
# Shapes on which a barrier inserted after a line must leave no race and the right answer.
_A2_SHAPES = ((32, 32, 32), (20, 21, 40), (35, 37, 39))


def _a2_lines() -> list:
    return A2_BUGGY_KERNEL.splitlines()


def _a2_boundary(answers) -> list:
    name, pts = "line of the boundary bug (BOUNDARY_BUG_LINE)", 5
    line, why = _count(answers, A2_BOUNDARY)
    n = len(_a2_lines())
    if why is not None:
        return [Check(name, 0, pts, False, why)]
    if line is None:
        return [Check(name, 0, pts, False, f"no answer: set BOUNDARY_BUG_LINE to a line number "
                      f"of BUGGY_KERNEL (1 to {n}), as a number")]
    if line == _A2_BOUNDARY_LINE:
        return [Check(name, pts, pts, True)]
    if not 1 <= line <= n:
        return [Check(name, 0, pts, False, f"BUGGY_KERNEL has lines 1 to {n}, not {line}")]
    text = _a2_lines()[line - 1].strip()
    hint = ("this load of A checks both row < M and ka < K" if line == 12 else
            "read the out-of-bounds report: it names the array, the element and the line")
    return [Check(name, 0, pts, False, f"line {line} ({text!r}) is not where a thread reads "
                  f"outside a matrix: {hint}.")]


def _insert_barrier(source: str, after: int) -> str:
    lines = source.splitlines()
    return "\n".join(lines[:after] + ["        __syncthreads();"] + lines[after:])


@functools.lru_cache(maxsize=None)
def barrier_fix_verdict(after: int) -> str | None:
    """Whether a ``__syncthreads();`` inserted after line `after` of Assignment 2's kernel
    (with its boundary bug fixed) makes it right: None if it compiles, raises no race and
    gives C = A·B on three shapes; otherwise what goes wrong, in one line."""
    import numpy as np

    from ..toolchain.backends.emulator import In, InOut, SourceModule
    from ..errors import TilingLibError
    from ..sgemm import random_inputs, reference_product

    fixed = A2_BUGGY_KERNEL.replace("Bs[ty][tx] = (kb < K) ?", "Bs[ty][tx] = (kb < K && col < N) ?")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = SourceModule(_insert_barrier(fixed, after)).get_function("sgemm")
            for M, N, K in _A2_SHAPES:
                A, B = random_inputs(M, N, K, [M, N, K])
                C = np.full((M, N), np.nan, dtype=np.float32)
                f(np.int32(M), np.int32(N), np.int32(K), In(A), In(B), InOut(C),
                  block=(16, 16, 1), grid=(ceil_div(N, 16), ceil_div(M, 16)), hazards="raise")
                if not np.allclose(C, reference_product(A, B), rtol=1e-4, atol=1e-4):
                    return f"M={M}, N={N}, K={K}: C is wrong"
    except TilingLibError as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return None


def _a2_barrier(answers) -> list:
    name, pts = "where the missing barrier goes (BARRIER_MISSING_AFTER_LINE)", 5
    line, why = _count(answers, A2_BARRIER)
    n = len(_a2_lines())
    if why is not None:
        return [Check(name, 0, pts, False, why)]
    if line is None:
        return [Check(name, 0, pts, False, f"no answer: set BARRIER_MISSING_AFTER_LINE to a "
                      f"line number of BUGGY_KERNEL (1 to {n}), as a number")]
    if not 1 <= line <= n:
        return [Check(name, 0, pts, False, f"BUGGY_KERNEL has lines 1 to {n}, not {line}")]
    problem = barrier_fix_verdict(line)
    if problem is None:
        return [Check(name, pts, pts, True)]
    text = _a2_lines()[line - 1].strip()
    return [Check(name, 0, pts, False, f"a __syncthreads() right after line {line} ({text!r}) "
                  f"does not fix the kernel (the boundary bug fixed too, on the emulator): "
                  f"{problem}. The barrier must separate the last read of a tile from the "
                  f"next iteration's stores into it.")]


def _a2_fix(answers) -> list:
    prefix, pts = "FIXED_KERNEL: ", 90
    source = _given(answers, A2_FIXED)
    if isinstance(source, str) and " ".join(source.split()) == " ".join(A2_BUGGY_KERNEL.split()):
        return [Check(f"{prefix}score", 0, pts, False, "FIXED_KERNEL is still BUGGY_KERNEL as "
                      "given: fix its two bugs")]
    return _kernel_checks(source, pts, prefix, "no kernel: set FIXED_KERNEL = r\"\"\"...\"\"\" "
                          "to your corrected CUDA C source (a string literal)")


_A2_PARTS = (Part("a2-test-boundary", 5, ("BOUNDARY_BUG_LINE",), _a2_boundary),
             Part("a2-test-barrier", 5, ("BARRIER_MISSING_AFTER_LINE",), _a2_barrier),
             Part("a2-test-grader", 90, ("FIXED_KERNEL",), _a2_fix))


# --------------------------------------------------------------------------- a3
A3_TILES = (4, 8, 16, 32)
A3_SHARED = Answer("SHARED_BYTES", "a3-part1-answer", (dict,))
A3_BLOCKS = Answer("BLOCKS_PER_SM", "a3-part1-answer", (dict,))
A3_INTENSITY = Answer("INTENSITY", "a3-part2-answer", (dict,))
A3_CHOSEN = Answer("CHOSEN_TILE", "a3-part3-answer", (int,))


def a3_expected() -> dict:
    """The numbers Assignment 3 asks for, computed as its notebook tells the student to:
    ``SHARED_BYTES`` (two TILE x TILE float arrays: 8·TILE² bytes), ``BLOCKS_PER_SM``
    (`tilinglib.occupancy.occupancy` with the registers per thread nvcc gave sgemm_tiled on
    the H200, from the course's reference data), ``INTENSITY`` (FLOP per byte of global loads:
    0.25·TILE, which the emulator's counters give exactly at N = 64), ``CHOSEN_TILE`` (the
    fastest TILE of `A3_TILES` on the H200 at N = 4096, from the reference data) and
    ``REGISTERS`` and ``GFLOPS`` (per TILE) behind them."""
    return copy.deepcopy(_a3_expected())


@functools.lru_cache(maxsize=1)
def _a3_expected() -> dict:
    from .. import reference
    from ..occupancy import occupancy

    h200 = reference.load("h200")
    runs = {t: h200.run("sgemm_tiled", 4096, tile=t, pad=0) for t in A3_TILES}
    registers = {t: int(runs[t].extra["registers"]) for t in A3_TILES}
    shared = {t: 2 * t * t * 4 for t in A3_TILES}
    blocks = {t: occupancy(t * t, registers_per_thread=registers[t],
                           static_shared=shared[t]).active_blocks for t in A3_TILES}
    gflops = {t: runs[t].gflops for t in A3_TILES}
    return {"SHARED_BYTES": shared, "BLOCKS_PER_SM": blocks,
            "INTENSITY": {t: 0.25 * t for t in A3_TILES},
            "CHOSEN_TILE": max(gflops, key=gflops.get), "REGISTERS": registers,
            "GFLOPS": gflops}


def _per_tile(answers, answer: Answer, name: str, pts: float, close, hint) -> list:
    given = _given(answers, answer)
    want = a3_expected()[answer.name]
    if given is None:
        return [Check(name, 0, pts, False, f"no answer: set {answer.name} to a dict literal "
                      f"{{4: ..., 8: ..., 16: ..., 32: ...}} of numbers (the grader reads the "
                      f"cell without running it: write the numbers, not code)")]
    earned, wrong = 0.0, []
    for t in A3_TILES:
        value = given.get(t)
        string_key = value is None and str(t) in given
        if string_key:
            value = given[str(t)]
        if string_key or isinstance(value, str):
            shown = _as_number_text(value) if isinstance(value, str) else repr(value)
            example = f"{{{t}: {shown or '...'}, ...}}"
            what = f"given under the string key {str(t)!r}" if string_key else repr(value)
            wrong.append(f"TILE={t}: {what} (write numbers, not strings: {example})")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value) and close(value, want[t]):
            earned += pts / len(A3_TILES)
        else:
            wrong.append(f"TILE={t}: {value!r} ({hint(t, value)})")
    if not wrong:
        return [Check(name, pts, pts, True)]
    return [Check(name, round(earned, 4), pts, False, "; ".join(wrong))]


def _shared_hint(t, value) -> str:
    if value is None:
        return "missing"
    if value == 4 * t * t:
        return "that is one array; the block has As and Bs"
    if value == 2 * t * t:
        return "count 4 bytes per float"
    return f"As and Bs are each {t} x {t} floats of 4 bytes"


def _blocks_hint(t, value) -> str:
    if value is None:
        return "missing"
    if isinstance(value, (int, float)) and value > 32:
        return "an H200 SM holds at most 32 blocks, whatever their size"
    return (f"use occupancy({t * t}, registers_per_thread=REGISTERS[{t}], "
            f"static_shared=SHARED_BYTES[{t}]).active_blocks")


def _intensity_hint(t, value) -> str:
    if value is None:
        return "missing"
    if isinstance(value, (int, float)) and abs(value - 0.25) < 1e-3:
        return "that is the naive kernel's 0.25 FLOP/B: each tile element is reused TILE times"
    return "report.flops / report.global_load_bytes_requested of count(TILE)"


def _a3_shared(answers) -> list:
    return _per_tile(answers, A3_SHARED, "shared memory per block (SHARED_BYTES)", 10,
                     lambda v, w: v == w, _shared_hint)


def _a3_blocks(answers) -> list:
    return _per_tile(answers, A3_BLOCKS, "blocks per SM (BLOCKS_PER_SM)", 10,
                     lambda v, w: v == w, _blocks_hint)


def _a3_intensity(answers) -> list:
    return _per_tile(answers, A3_INTENSITY, "FLOP per byte of global loads (INTENSITY)", 30,
                     lambda v, w: abs(v - w) <= 0.01 * w, _intensity_hint)


def _a3_choice(answers) -> list:
    name, pts = "the TILE to ship (CHOSEN_TILE)", 20
    chosen, why = _count(answers, A3_CHOSEN)
    exp = a3_expected()
    best, gflops = exp["CHOSEN_TILE"], exp["GFLOPS"]
    if why is not None:
        return [Check(name, 0, pts, False, f"{why} (one of {list(A3_TILES)})")]
    if chosen is None:
        return [Check(name, 0, pts, False, "no answer: set CHOSEN_TILE to a number, one of "
                      f"{list(A3_TILES)}")]
    if chosen == best:
        return [Check(name, pts, pts, True)]
    if chosen in gflops:
        why = (f"on the H200 TILE={chosen} runs at {gflops[chosen]:,.0f} GFLOP/s and "
               f"TILE={best} at {gflops[best]:,.0f}")
    elif chosen * chosen > MAX_THREADS_PER_BLOCK:
        why = (f"TILE={chosen} needs {chosen * chosen:,} threads per block, over the limit "
               f"of 1,024: it cannot launch")
    else:
        why = f"choose one of {list(A3_TILES)}"
    return [Check(name, 0, pts, False, f"CHOSEN_TILE = {chosen}: {why}.")]


_A3_PARTS = (Part("a3-test-shared", 10, ("SHARED_BYTES",), _a3_shared),
             Part("a3-test-blocks", 10, ("BLOCKS_PER_SM",), _a3_blocks),
             Part("a3-test-intensity", 30, ("INTENSITY",), _a3_intensity),
             Part("a3-test-choice", 20, ("CHOSEN_TILE",), _a3_choice))


# --------------------------------------------------------------------------- a4
A4_KERNEL = Answer("KERNEL", "a4-kernel")


def _a4_kernel(answers) -> list:
    return list(_grade_a4(answers).checks)


_A4_PARTS = (Part("a4-test-grader", 100, ("KERNEL",), _a4_kernel),)


def _grade_a4(answers: Mapping[str, object]) -> GradeReport:
    """Assignment 4: `check_coarsened` on KERNEL (the whole report, its notes included)."""
    t0 = time.perf_counter()
    source = _given(answers, A4_KERNEL)
    if isinstance(source, str) and source.strip():
        return check_coarsened(source)
    return _report("a4_coarsen", [Check("KERNEL", 0, 100, False, "no kernel: set KERNEL = "
                                        "r\"\"\"...\"\"\" to your CUDA C source (a string literal) "
                                        "in the answer cell")], t0)


# --------------------------------------------------------------------------- registry
ASSIGNMENTS: dict[str, Assignment] = {
    "a1_tiled_sgemm": Assignment("a1_tiled_sgemm", (A1_KERNEL,), 100.0, _grade_a1,
                                 parts=_A1_PARTS),
    "a2_fix_the_kernel": Assignment("a2_fix_the_kernel", (A2_BOUNDARY, A2_BARRIER, A2_FIXED),
                                    100.0, _combine("a2_fix_the_kernel", _A2_PARTS),
                                    parts=_A2_PARTS),
    "a3_choose_tile": Assignment("a3_choose_tile", (A3_SHARED, A3_BLOCKS, A3_INTENSITY,
                                                    A3_CHOSEN),
                                 70.0, _combine("a3_choose_tile", _A3_PARTS),
                                 manual=("a3-justification",), parts=_A3_PARTS),
    "a4_coarsen": Assignment("a4_coarsen", (A4_KERNEL,), 100.0, _grade_a4, parts=_A4_PARTS),
}

# Assignments of one kernel graded whole: grade_part gives their full report (TILE, block
# and notes included), not only the checks.
_WHOLE_REPORT = {"a1_tiled_sgemm": _grade_a1, "a4_coarsen": _grade_a4}


def _spec(assignment: str) -> Assignment:
    try:
        return ASSIGNMENTS[assignment]
    except (KeyError, TypeError):
        raise KeyError(f"no assignment {assignment!r}; known: {', '.join(ASSIGNMENTS)}") from None


def grade(assignment: str, answers: Mapping[str, object]) -> GradeReport:
    """Grade `answers` for the assignment named `assignment` (a key of `ASSIGNMENTS`).

    Raises `KeyError` naming the known assignments for an unknown name."""
    return _spec(assignment).grade(answers)


def grade_part(assignment: str, cell: str, answers: Mapping[str, object]) -> GradeReport:
    """Grade the part of `assignment` that nbgrader test cell `cell` (its grade_id) holds.

    `answers`: name -> value, e.g. the notebook's ``globals()``; only the part's own answer
    names are read. The report's `max_score` is the cell's points, its `score` what the cell
    gives nbgrader: the same checks, and points, as that part of `grade(assignment, ...)`.
    Raises `KeyError` for an unknown assignment or cell."""
    spec = _spec(assignment)
    part = spec.part(cell)
    t0 = time.perf_counter()
    picked = {}
    for name in part.answers:
        try:
            if name in answers:
                picked[name] = answers[name]
        except Exception:
            pass
    notes = []
    for name in _computed_answers(answers, part.answers):
        picked.pop(name, None)
        notes.append(f"{name} is computed by code, not written as a literal: the grader reads "
                     f"the answer cell as text, without running it, so it sees no {name}. "
                     f"Write the value itself (numbers, a string, a dict of numbers).")
    if spec.name in _WHOLE_REPORT:
        report = _WHOLE_REPORT[spec.name](picked)
        return replace(report, seconds=time.perf_counter() - t0,
                       notes=tuple(report.notes) + tuple(notes))
    return replace(_report(f"{spec.name} [{cell}]", part.grader(picked), t0),
                   notes=tuple(notes))


def _computed_answers(answers, names) -> list:
    """In a notebook (`answers` is IPython's namespace, with its input history ``_ih``: the
    list ``In`` names too, but a notebook may rebind ``In``, as a3 does with tilinglib's): the
    answer names whose latest top-level binding in the cells run so far is not a literal.
    The command would see no answer there; so the notebook must not either. Elsewhere: []."""
    from .extract import cell_bound_names

    try:
        history = answers.get("_ih") if hasattr(answers, "get") else None
    except Exception:
        return []
    if not isinstance(history, list):
        return []
    computed = []
    for name in names:
        for source in reversed(history):
            if not isinstance(source, str) or name not in cell_bound_names(source):
                continue
            if name not in literal_answers(source):
                computed.append(name)
            break
    return computed
