"""Autograding for the course's assignments: run a student's kernel where it can fail.

Introduced by ``notebooks/assignments/``. The grader never trusts a single lucky run: it
launches the student's CUDA C on the CPU emulator (always; it needs no GPU, and its
out-of-bounds, race, barrier and uninitialised-memory checks are exact) on shapes chosen to
break the usual mistakes, with random non-symmetric data and an output pre-filled with NaN,
and reads the source for the two mistakes no affordable run shows (32-bit index products,
an accumulator read before it is set). On a machine where tilinglib's backend is PyCUDA it
also runs the same cases on the GPU.

```python
from tilinglib.grading import check_sgemm
report = check_sgemm(source, "sgemm")      # source: str of CUDA C
report.passed, report.score, report.max_score
for message in report.failures: print(message)
report                                     # a table in Jupyter, text in a terminal
```

Every lost point comes with a message that says what went wrong, on which shape, and what to
change. Every launch has a step budget, so a kernel that never ends fails its check instead
of hanging the grader.

The weights reward what the assignment teaches: correctness is 30 of the 100 points; the
other 70 (tiling, synchronisation, the declared TILE, index width, the accumulator) count
only for a kernel that really stages tiles in shared memory with TILE >= 4, and in
proportion to the correctness earned. So a correct naive kernel scores 30, an empty one 0.
"""

from __future__ import annotations

import contextlib
import functools
import html
import math
import re
import signal
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..errors import (BarrierError, CompileError, KernelArgumentError, KernelRuntimeError,
                     LaunchError, MemoryAccessError, RaceError, StepBudgetExceeded)
from .evidence import fma_shortfall, staging_shortfall
from .secret import Draw, active_draw, active_time_limit, record_shapes
from .templates import Instance, instantiate, macro_clash_hint
from ..gpu import MAX_THREADS_PER_BLOCK, WARP_SIZE, ceil_div

__all__ = ["Check", "GradeReport", "check_sgemm", "declared_tile", "sgemm_cases",
           "SGEMM_SIGNATURE"]

SGEMM_SIGNATURE = "(int M, int N, int K, const float* A, const float* B, float* C)"
PROBE = "tilinglib_tile_probe"


@dataclass(frozen=True)
class Check:
    """One graded check: its `name`, the `points` it earned out of `max_points`, whether it
    `passed`, and a `message` (what went wrong and what to change; "ok" when it passed with
    full points, "ok, ..." saying why when it passed but counts for less)."""

    name: str
    points: float
    max_points: float
    passed: bool
    message: str = "ok"


@dataclass(frozen=True)
class GradeReport:
    """The outcome of grading one submission.

    `checks` holds one `Check` per graded item; `passed`, `score`, `max_score` and `failures`
    (the messages of the failed checks, each naming the check) are derived from them.
    `tile` is the TILE the submission declared (None if it could not be read), `seconds`
    the time grading took.
    """

    kernel: str
    checks: tuple
    tile: int | None = None
    block: tuple | None = None
    seconds: float = 0.0
    notes: tuple = ()

    @property
    def score(self) -> float:
        return round(sum(c.points for c in self.checks), 2)

    @property
    def max_score(self) -> float:
        return round(sum(c.max_points for c in self.checks), 2)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[str]:
        return [f"{c.name}: {c.message}" for c in self.checks if not c.passed]

    def __str__(self) -> str:
        where = (f"TILE={self.tile}, block={self.block}, " if self.tile is not None else "")
        head = (f"{self.kernel}: {self.score:g} / {self.max_score:g}"
                f"{'  (all checks passed)' if self.passed else ''}"
                f"  [{where}{self.seconds:.1f} s]")
        width = max((len(c.name) for c in self.checks), default=0)
        lines = [head]
        for c in self.checks:
            mark = "FAIL" if not c.passed else "ok  " if c.message == "ok" else "ok ~"
            lines.append(f"  {mark} {c.name:<{width}}  {c.points:.3g}/{c.max_points:g}")
            if c.message != "ok":
                lines += ["         " + line for line in c.message.splitlines()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for c in self.checks:
            colour = "#070" if c.passed else "#b00"
            msg = "" if c.message == "ok" else html.escape(c.message).replace("\n", "<br>")
            rows.append(f"<tr><td style='color:{colour}'>{'✔' if c.passed else '✘'}</td>"
                        f"<td style='text-align:left'>{html.escape(c.name)}</td>"
                        f"<td>{c.points:.3g}/{c.max_points:g}</td>"
                        f"<td style='text-align:left;font-family:monospace'>{msg}</td></tr>")
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (f"<b>{html.escape(self.kernel)}: {self.score:g} / {self.max_score:g}</b> "
                f"(TILE={self.tile}, block={self.block}, {self.seconds:.1f} s)"
                f"<table>{''.join(rows)}</table>" + (f"<ul>{notes}</ul>" if notes else ""))

    def __repr__(self) -> str:
        return (f"GradeReport(kernel={self.kernel!r}, score={self.score:g}, "
                f"max_score={self.max_score:g}, passed={self.passed}, "
                f"failures={len(self.failures)})")


# --------------------------------------------------------------------------- the cases
@dataclass(frozen=True)
class _Case:
    name: str
    shapes: tuple          # ((M, N, K), ...)
    points: float
    why: str


def sgemm_cases(tile: int) -> list:
    """The correctness cases for a kernel with tile size `tile`: (name, [(M, N, K), ...],
    points, what the case is for). Sizes stay small enough for the emulator. The points add
    up to `CORRECTNESS_POINTS` (30) for every tile."""
    t = int(tile)
    lo, hi = max(t - 1, 1), t + 1
    return [
        _Case("1x1x1", ((1, 1, 1),), 4, "one element: almost every thread of the block is "
              "outside the matrices"),
        _Case("square, multiple of TILE", ((2 * t, 2 * t, 2 * t),), 4,
              "the easy case: no partial tile anywhere"),
        _Case("TILE+1 and TILE-1", ((hi, lo, hi), (lo, hi, lo)), 5,
              "one element past a tile, one short of a tile"),
        _Case("primes, M != N != K", ((37, 19, 53), (13, 29, 7)), 5,
              "nothing divides anything; rows, columns and K all differ"),
        _Case("tall and wide", ((1000, 3, 5), (3, 1000, 7)), 4,
              "1000 rows by 3 columns, then 3 rows by 1000 columns"),
        _Case("long K", ((7, 9, 3 * t + 5),), 4,
              "several tiles along K, the last one partial"),
        _Case("interior blocks, partial K tile", ((2 * t + 3, 2 * t + 5, 2 * t + 7),), 4,
              "a 3 x 3 grid whose interior blocks (not in the last block row or column) also "
              "meet the last, partial tile along K"),
    ]


def graded_cases(tile: int, draw: Draw | None = None,
                 threads_per_block: int | None = None) -> list:
    """`sgemm_cases(tile)`, each case with the shapes of `draw` (a `secret.Draw`, or None for
    the public shapes only) for its kind added: the cases the grade to trust runs
    (`secret.drawn_shapes`; `threads_per_block` as there). Same names and points."""
    cases = sgemm_cases(tile)
    if draw is None:
        return cases
    extra = draw.shapes(tile, threads_per_block)
    return [_Case(c.name, c.shapes + tuple(extra.get(c.name, ())), c.points, c.why)
            for c in cases]


# --------------------------------------------------------------------------- helpers
def _default_grid(M: int, N: int, K: int, tile: int) -> tuple:
    return (ceil_div(N, tile), ceil_div(M, tile), 1)


def _inputs(M: int, N: int, K: int, seed: int):
    rng = np.random.default_rng([seed, M, N, K])
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.uniform(-1.0, 2.0, size=(K, N)).astype(np.float32)   # not A's distribution
    return A, B


def _step_budget(M, N, K, tile, threads) -> int:
    """Loop iterations (summed over the emulator's batches of blocks) a launch may take:
    generous for any sensible kernel, small enough that a runaway loop stops in seconds."""
    batches = ceil_div(threads, 1 << 16)
    tiles = ceil_div(K, tile)
    return batches * (8 * (K + tiles * (tile + 4)) + 2000)


def declared_tile(source: str, options: Sequence[str] | None = None) -> int:
    """The TILE a kernel source declares: the value of the macro TILE after the source's own
    ``#define`` and the ``-DTILE=...`` in `options` (nvcc-style strings).

    Raises `CompileError` if the source does not compile or does not define TILE."""
    return _probe_tile(source, list(options or []))


def _probe_tile(source: str, options, deadline: float | None = None, macro: str = "TILE") -> int:
    """The value of TILE (or of the integer macro `macro`) after the submission's own
    #defines and the -D options (the probe launch stops at `deadline`, a time.perf_counter()
    value, or after 10 s). Raises `CompileError` if the macro is not defined."""
    from ..toolchain.backends.emulator import Out, SourceModule

    probe = (source + f"\n__global__ void {PROBE}(int* out) {{ out[0] = (int)({macro}); }}\n")
    f = SourceModule(probe, options=options).get_function(PROBE)
    out = np.zeros(1, dtype=np.int32)
    f(Out(out), block=(1, 1, 1), grid=(1, 1), max_steps=100_000,
      max_seconds=_seconds_left(deadline if deadline is not None
                                else time.perf_counter() + 10.0))
    return int(out[0])


def _macro_or_none(source: str, options, deadline: float, macro: str) -> int | None:
    """The value of integer macro `macro` in `source` with `options`, None when the source
    does not define it (or it cannot be read)."""
    try:
        return _probe_tile(source, options, deadline, macro=macro)
    except (CompileError, KernelRuntimeError, LookupError):
        return None


def _seconds_left(deadline: float) -> float:
    """Seconds until `deadline` (a time.perf_counter() value), at least 0.01: the launch's
    max_seconds, so that no launch runs past the grader's time limit."""
    return max(0.01, deadline - time.perf_counter())


def _close(C, ref, bound, K) -> np.ndarray:
    """Elements of C within float32 round-off of the float64 reference."""
    tol = 8 * max(K, 1) * np.finfo(np.float32).eps * bound + 1e-6
    with np.errstate(invalid="ignore"):
        return np.abs(C.astype(np.float64) - ref) <= tol


def _diagnose(C, A, B, M, N, K, tile) -> str:
    """What the wrong answer looks like, in words a student can act on."""
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = A64 @ B64
    bound = np.abs(A64) @ np.abs(B64)
    ok = _close(C, ref, bound, K)
    bad = ~ok
    nan = np.isnan(C)
    n_bad = int(bad.sum())
    i, j = (int(x) for x in np.argwhere(bad)[0])
    parts = [f"{n_bad} of {M * N} elements of C are wrong; first C[{i}][{j}] = "
             f"{C[i, j]:.6g}, expected {ref[i, j]:.6g}."]
    alternatives = []
    if K % tile:
        kf = (K // tile) * tile
        alternatives.append((A64[:, :kf] @ B64[:kf, :],
                             f"C equals A·B summed over only the first {kf} of K={K} terms: "
                             f"the tile loop stops before the last, partial tile. Loop over "
                             f"(K + TILE - 1) / TILE tiles and load 0 past the edge."))
    alternatives.append((A64 @ B64.reshape(N, K).T,
                         "C equals A times B read as if it were stored transposed "
                         "(B[col*K + k]): B is K x N, row-major, so element (k, col) is "
                         "B[k*N + col]."))
    alternatives.append((A64.reshape(K, M).T @ B64,
                         "C equals A read as if it were stored transposed (A[k*M + row]): "
                         "A is M x K, row-major, so element (row, k) is A[row*K + k]."))
    alternatives.append((ref.T.reshape(M, N),
                         "C holds A·B stored transposed (C[col*M + row]): C is M x N, "
                         "row-major, so element (row, col) is C[row*N + col]."))
    if min(M, N, K) > 1:
        for alt, words in alternatives:
            if alt.shape == C.shape and bool(np.all(_close(C, alt, np.abs(alt) + bound, K))):
                parts.append(words)
                break
    if nan.any():
        rows = np.flatnonzero(nan.any(axis=1))
        cols = np.flatnonzero(nan.any(axis=0))
        parts.append(f"{int(nan.sum())} elements were never written (C was filled with NaN "
                     f"before the launch), e.g. C[{rows[0]}][{cols[0]}].")
        full_rows, full_cols = (M // tile) * tile, (N // tile) * tile
        edge = np.zeros_like(nan)
        edge[full_rows:, :] = True
        edge[:, full_cols:] = True
        if nan[edge].all() and not nan[~edge].any() and edge.any():
            parts.append("Exactly the partial tiles at the bottom/right edge are missing: "
                         "launch ceil(M/TILE) x ceil(N/TILE) blocks and compute the edge "
                         "tiles, guarding with row < M && col < N.")
        elif M != N:
            parts.append("Check that rows come from the y dimension (blockIdx.y, threadIdx.y) "
                         "and columns from x, and the grid is (ceil(N/TILE), ceil(M/TILE)): a "
                         "swap only works when M == N.")
    else:
        full_rows, full_cols = (M // tile) * tile, (N // tile) * tile
        if full_rows and full_cols and not bad[:full_rows, :full_cols].any():
            parts.append("Only the last, partial block row/column is wrong: look at the "
                         "boundary handling.")
    return " ".join(parts)


def _explain_error(exc: Exception, shape) -> str:
    M, N, K = shape
    where = f"M={M}, N={N}, K={K}"
    text = str(exc).strip()
    if isinstance(exc, StepBudgetExceeded) and " s on the CPU emulator" in text:
        return (f"{where}: the kernel did not finish within the grader's time limit (a loop "
                f"that never ends, or far more work than C = A·B needs)")
    if isinstance(exc, StepBudgetExceeded):
        # The emulator's advice on lifting the limit is for notebooks, not for a graded run.
        text = text.split(" If the kernel is right and only big")[0]
        return (f"{where}: the kernel did not finish within the grader's step budget (a loop "
                f"that never ends, or far more work than C = A·B needs): {text}")
    if isinstance(exc, MemoryAccessError) and "__shared__" in text:
        return (f"{where}: out-of-bounds shared-memory access: {text}\nThe shared arrays, the "
                f"block and the indices must agree on the tile size.")
    if isinstance(exc, MemoryAccessError):
        return (f"{where}: out-of-bounds access: {text}\nEvery load of A and B and every store "
                f"to C needs a guard (row < M, col < N, k < K) unless it provably stays inside.")
    if isinstance(exc, BarrierError):
        return f"{where}: {text}"
    if isinstance(exc, RaceError):
        return f"{where}: {text}"
    if isinstance(exc, LaunchError):
        return f"{where}: the launch itself fails: {text}"
    return f"{where}: {type(exc).__name__}: {text}"


@dataclass
class _Runner:
    """Runs one compiled submission on the emulator, remembering what went wrong."""

    function: object
    tile: int
    block: tuple
    grid: Callable
    seed: int
    deadline: float
    aborted: str | None = None
    hazards: list = field(default_factory=list)
    reports: dict = field(default_factory=dict)
    sync_errors: list = field(default_factory=list)     # (shape, BarrierError/RaceError)
    step_scale: int = 1          # multiplies _step_budget (kernels whose threads loop more)
    counters: dict = field(default_factory=dict)        # shape -> the emulator's Counters
    unset_reads: list = field(default_factory=list)     # (shape, UninitializedReadWarning text)
    right: set = field(default_factory=set)             # shapes whose C was right

    def run(self, shape, *, hazards="warn"):
        """Returns (C, A, B) or raises the kernel's error. `self.hazards` collects races."""
        from ..toolchain.backends.emulator import In, InOut
        from ..errors import InputWriteWarning, UninitializedReadWarning

        M, N, K = shape
        A, B = _inputs(M, N, K, self.seed)
        C = np.full((M, N), np.nan, dtype=np.float32)
        grid = tuple(int(g) for g in self.grid(M, N, K, self.tile))
        threads = math.prod(self.block) * math.prod(grid)
        needed = math.prod(self.block) * ceil_div(M, self.tile) * ceil_div(N, self.tile)
        if threads > 4 * needed + (1 << 16):
            raise LaunchError(f"grid {grid} launches {threads:,} threads for a {M} x {N} result "
                              f"(one {self.tile} x {self.tile} tile per block needs "
                              f"{needed:,}): over the grader's budget of "
                              f"{4 * needed + (1 << 16):,}. Launch ceil(N/TILE) x "
                              f"ceil(M/TILE) blocks.")
        budget = _step_budget(M, N, K, self.tile, threads) * self.step_scale
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("ignore")
            warnings.simplefilter("always", InputWriteWarning)
            warnings.simplefilter("always", UninitializedReadWarning)
            self.function(np.int32(M), np.int32(N), np.int32(K), In(A), In(B), InOut(C),
                          block=self.block, grid=grid, hazards=hazards, max_steps=budget,
                          max_seconds=_seconds_left(self.deadline))
        report = self.function.last_report
        self.reports[shape] = report
        self.counters[shape] = getattr(self.function, "last_counters", None)
        for h in report.hazards:
            self.hazards.append((shape, h))
        self.unset_reads += [(shape, str(w.message)) for w in caught
                             if issubclass(w.category, UninitializedReadWarning)]
        writes = [w for w in caught if issubclass(w.category, InputWriteWarning)]
        if writes:
            w = min(writes, key=lambda w: w.lineno)
            found = re.search(r" writes to (\w+) at line", str(w.message))
            name = found.group(1) if found else "an input"
            raise _InputWritten(name, w.lineno)
        return C, A, B


class _InputWritten(Exception):
    """The kernel stored into A or B (passed as In): a fault of the kernel, not a crash."""

    def __init__(self, array: str, line: int):
        super().__init__(f"the kernel writes into {array} at line {line}: {array} is an input; "
                         f"on a GPU other blocks may still be reading it")
        self.array, self.line = array, line


def _fail_all(kernel: str, reason: str, *, tile=None, block=None, t0=0.0) -> GradeReport:
    checks = [Check("compiles and launches", 0, 0, False, reason)]
    # The reason is given once, in the first check; the others point back to it.
    later = "not run: the kernel could not be launched (see 'compiles and launches')"
    for case in sgemm_cases(tile or 16):
        checks.append(Check(f"correct: {case.name}", 0, case.points, False, later))
    for name, pts in _OTHER_CHECKS:
        checks.append(Check(name, 0, pts, False, later))
    return GradeReport(kernel, tuple(checks), tile, block, time.perf_counter() - t0)


class _GradingTimeout(BaseException):
    """Raised by the time box's alarm (a BaseException, so no `except Exception` inside
    the emulator takes it for a fault of the kernel)."""


@contextlib.contextmanager
def _time_box(seconds: float):
    """Interrupt the body after `seconds` of wall-clock time with `_GradingTimeout`: the
    emulator's own limits end a hostile kernel sooner, this bounds the rest (compiling
    included). Needs the main thread (SIGALRM); elsewhere the emulator's limits alone hold."""
    usable = (hasattr(signal, "setitimer") and seconds > 0
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def alarm(signum, frame):
        raise _GradingTimeout

    previous = signal.signal(signal.SIGALRM, alarm)
    start = time.monotonic()
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:           # someone else's alarm (pytest-timeout, say): give it back
            signal.setitimer(signal.ITIMER_REAL,
                             max(0.001, outer - (time.monotonic() - start)))


GRACE_SECONDS = 1.5      # the time box's margin past time_limit


def _contained(grade, fail_all=None):
    """Make a grader raise nothing for any source string: whatever escapes it (a
    RecursionError, MemoryError or OverflowError from a hostile source, the time box's
    alarm) becomes a failing report whose first message starts with a status word
    ("timeout:", "memory:", "error:"). Arguments of the wrong type still raise TypeError.
    `fail_all(kernel_name, why, t0=...)` builds that report (default: check_sgemm's checks);
    use ``functools.partial(_contained, fail_all=...)`` as the decorator for another grader."""
    fail_all = fail_all or _fail_all

    @functools.wraps(grade)
    def contained(source, kernel_name, *args, time_limit: float | None = None, **kwargs):
        if time_limit is None:          # 60 s, or the command's limit inside its drawing block
            time_limit = active_time_limit() or 60.0
        if not isinstance(source, str) or not isinstance(kernel_name, str) \
                or not isinstance(time_limit, (int, float)):
            return grade(source, kernel_name, *args, time_limit=time_limit, **kwargs)
        t0 = time.perf_counter()
        from ..toolchain.frontend.program import recursion_room
        try:
            with _time_box(time_limit + GRACE_SECONDS), recursion_room():
                return grade(source, kernel_name, *args, time_limit=time_limit, **kwargs)
        except _GradingTimeout:
            why = (f"timeout: grading stopped after {time_limit:g} s (compiling and running the "
                   f"kernel count against the limit): a loop that never ends, a huge launch, "
                   f"or a source the emulator takes too long to compile")
        except MemoryError:
            why = ("memory: the kernel needed more memory than the grader has (huge local or "
                   "shared arrays, or a huge launch)")
        except RecursionError:
            why = "error: the source nests too deeply for the emulator (RecursionError)"
        except Exception as exc:     # noqa: BLE001 (a hostile source must not crash grading)
            text = str(exc).splitlines()[0][:300] if str(exc) else ""
            why = f"error: the grader could not run this kernel ({type(exc).__name__}: {text})"
        return fail_all(kernel_name, why, t0=t0)

    return contained


CORRECTNESS_POINTS = 30
MIN_TILE = 4
CAP_WITHOUT_TILING = CORRECTNESS_POINTS
# The checks after correctness (70 points), in order. The first is the tiling gate: a kernel
# that fails it earns none of the others, so without tiling a kernel scores at most
# CORRECTNESS_POINTS however correct. All of them count in proportion to the correctness
# points earned (see _weigh).
_TILING = "tiling (tiles staged in shared memory, TILE >= 4)"
_SYNC = "synchronisation (races, barriers, uninitialised shared memory)"
_OTHER_CHECKS = [(_TILING, 25),
                 (_SYNC, 20),
                 ("TILE declared is the TILE used", 5),
                 ("64-bit index arithmetic", 10),
                 ("accumulator initialised", 10)]


def _weigh(checks: list, gate: str = _TILING, gate_why: str | None = None) -> list:
    """The final points of every check, from checks that each hold full or no points.

    Correctness checks keep their points. Every other check counts in proportion to the
    correctness points earned (an empty kernel, or one that never writes C, scores 0 whatever
    else it gets right), and only when the tiling check passed (a kernel that stages no tiles,
    or reuses nothing because TILE < 4, keeps only its correctness points: at most 30).
    Messages say why a passed check counts for less than its points. `gate` names the
    gating check (another grader's own tiling check) and `gate_why` what the message says
    when it failed."""
    correct = [c for c in checks if c.name.startswith("correct: ")]
    earned = sum(c.points for c in correct)
    total = sum(c.max_points for c in correct) or 1.0
    share = earned / total
    tiled = any(c.name == gate and c.passed for c in checks)
    why_share = (f"counted at {share:.0%}: the checks after correctness count in proportion "
                 f"to the correctness points earned ({earned:g} of {total:g})")
    why_gate = gate_why or ("not counted: without tiling (see 'tiling') a kernel keeps only "
                            "its correctness points")
    out = []
    for c in checks:
        if c.name.startswith("correct: ") or c.name == "compiles and launches":
            out.append(c)
        elif earned == 0:
            out.append(Check(c.name, 0, c.max_points, c.passed,
                             f"ok, but {why_share}" if c.passed else c.message))
        elif c.name != gate and not tiled:
            out.append(Check(c.name, 0, c.max_points, c.passed,
                             f"ok, but {why_gate}" if c.passed
                             else f"{c.message}\n({why_gate[0].upper() + why_gate[1:]}.)"))
        elif c.passed and share < 1:
            out.append(Check(c.name, round(c.max_points * share, 4), c.max_points, True,
                             f"ok, {why_share}"))
        else:
            out.append(c)
    return out


# --------------------------------------------------------------------------- the grader
@_contained
def check_sgemm(source: str, kernel_name: str, *, options: Sequence[str] | None = None,
                block: Sequence[int] | None = None,
                grid: Callable[[int, int, int, int], Sequence[int]] | None = None,
                seed: int | None = None, gpu: bool | None = None,
                time_limit: float | None = None, draw: Draw | None = None,
                template_tile_default: int = 16) -> GradeReport:
    """Grade a tiled SGEMM kernel, ``C = A·B`` for any M, N, K.

    The kernel must have the signature
    ``__global__ void <kernel_name>(int M, int N, int K, const float* A, const float* B,
    float* C)``, with A (M x K), B (K x N) and C (M x N) row-major float32 arrays, and must
    define TILE (``#define TILE 16``, or ``-DTILE=16`` in `options`). The grader launches it
    with ``block`` (default ``(TILE, TILE, 1)``; give a non-square block such as
    ``(TILE, TILE // 4, 1)`` if each thread computes several elements) and one block per
    TILE x TILE tile of C: ``grid = (ceil(N / TILE), ceil(M / TILE))``, or ``grid(M, N, K,
    TILE)`` when a `grid` callable is given (to grade a student's own launch arithmetic).

    Checks (100 points). Correctness (30): 1x1x1, 2·TILE cubed, TILE±1, primes with
    M != N != K, 1000x3x5 and 3x1000x7, a K spanning several tiles, and (2·TILE+3) x
    (2·TILE+5) x (2·TILE+7), whose interior blocks meet the last, partial K tile; each with
    NaN-filled C and random non-symmetric float32 data (seeded with `seed`, default 0),
    every load and store bounds-checked, checked against a float64 NumPy product within
    8·K·eps(float32) of the sum of |terms|; a store into A or B (inputs, which other blocks
    may still be reading) fails the case, and so does a right C from fewer than M·N·K
    multiply-adds (`evidence.fma_shortfall`: a table of answers), and a case whose run
    detects a race on shared memory and whose C is wrong when the warps of each block run
    in another order a GPU may produce (`find_race_failure` finds the seed on the 2·TILE
    cube, `ADVERSARY_SEEDS` seeds, at most `ADVERSARY_SECONDS`; schedule="adversarial",
    tilinglib/toolchain/runtime/schedule.py). `draw` (a `secret.Draw`; default: the one of an
    enclosing `secret.drawing` block, as the command grades, else none) seeds the data
    instead and adds its shapes to each case (`graded_cases`). Then (70): tiling, tiles of
    A and B really staged in shared memory (about 2·ceil(K/TILE) global load requests per
    warp, not 2·K; atomics count as loads; on every run with the right C, global load bytes
    at most twice the whole tiles' 8·TILE² per block per step along K, and the inputs read,
    stored in shared memory and feeding the multiply-adds: `evidence.staging_shortfall`)
    with TILE >= 4, on every
    correctness shape, each against its own grid and K (25); no shared-memory race, partial
    barrier or read of unwritten shared memory on any shape (20); the shared arrays as big
    as TILE says (5); index products computed in 64 bits, in the kernel and the __device__
    functions it calls, never cast back to int (10, read from the source: the overflow
    needs matrices over 8 GiB); the accumulator set before it is read (10, from the
    source: the emulator's registers start at 0, a GPU's do not). The emulator defines
    __CUDA_ARCH__ and __CUDACC__ as nvcc does for device code, so it runs the branch of an
    ``#ifdef __CUDA_ARCH__`` that the GPU runs.

    Tiling is what the assignment teaches, so the 70 count only for a kernel that passes
    the tiling check (one that stages no tiles, or TILE < 4, scores at most 30 however
    correct), and each counts in proportion to the correctness points earned: a kernel
    right on 21 of the 30 gets 70% of each check it passes, an empty kernel or one that
    never writes C gets 0.

    A kernel template (``template <int TILE> __global__ void sgemm(...)``) is graded as its
    instantiation: the source's own (``template __global__ void sgemm<16>(...);``), else at
    the source's TILE macro, else at `template_tile_default` (16, the assignments'
    default TILE); tilinglib/grading/templates.py gives the rule, and the message of the
    check "compiles and launches" says which instantiation ran.

    A source that does not compile, the wrong signature, no TILE, or a block over 1,024
    threads scores 0, with the reason. `gpu=None` also runs the correctness cases on the
    GPU when tilinglib's backend is PyCUDA (`True` requires it, `False` never). Grading
    stops launching after `time_limit` seconds (default 60, or inside a `secret.drawing`
    block the command's own limit, so that there only the command's --timeout stops a
    submission) and fails what is left.

    Returns a `GradeReport`; raises nothing for a faulty submission (TypeError only for
    arguments of the wrong type, e.g. a non-str source).
    """
    if not isinstance(source, str):
        raise TypeError(f"source must be the kernel's CUDA C as a str, not "
                        f"{type(source).__name__}")
    t0 = time.perf_counter()
    options = list(options or [])
    from ..toolchain.backends.emulator import SourceModule

    # --- compile, signature, TILE, block
    try:
        module = SourceModule(source, options=options)
    except CompileError as exc:
        return _fail_all(kernel_name, f"the source does not compile: {exc}"
                         + macro_clash_hint(source, options, ("TILE",)), t0=t0)
    graded_source, graded_kernel, template_tile, launched = source, kernel_name, None, "ok"
    notes: list[str] = []
    try:
        f = module.get_function(kernel_name)
    except LookupError as exc:
        # a kernel template: graded as its instantiation at the assignment's TILE
        inst = instantiate(source, options, module, kernel_name, ("TILE",),
                           {"TILE": template_tile_default},
                           lambda macro: _macro_or_none(source, options, t0 + time_limit,
                                                        macro))
        if not isinstance(inst, Instance):
            return _fail_all(kernel_name, inst or str(exc), t0=t0)
        f, graded_source, graded_kernel = inst.function, inst.source, inst.kernel
        template_tile = inst.values.get("TILE")
        launched = f"ok, {inst.note}"       # said where every grader shows it (a2's too)
    kinds = [(p.ctype.kind if not p.ctype.is_pointer else
              "pointer:" + getattr(p.ctype.target, "name", "?")) for p in f.params]
    expected = ["int", "int", "int", "pointer:float", "pointer:float", "pointer:float"]
    if kinds != expected:
        have = ", ".join(f"{p.ctype} {p.name}" for p in f.params)
        return _fail_all(kernel_name, f"the kernel's parameters are ({have}); the assignment "
                         f"asks for {SGEMM_SIGNATURE}", t0=t0)
    try:
        tile = template_tile if template_tile is not None else \
            _probe_tile(source, options, t0 + time_limit)
    except CompileError:
        return _fail_all(kernel_name, "TILE is not defined: write '#define TILE 16' (or pass "
                         "options=['-DTILE=16']) and use TILE for the shared arrays and the "
                         "launch", t0=t0)
    except KernelRuntimeError as exc:
        return _fail_all(kernel_name, f"could not read TILE: {exc}", t0=t0)
    if not 1 <= tile <= 1024:
        return _fail_all(kernel_name, f"TILE = {tile} is not a tile size (1 to 32)", tile=tile,
                         t0=t0)
    block3 = tuple(int(b) for b in (block or (tile, tile, 1)))
    block3 = block3 + (1,) * (3 - len(block3))
    threads = math.prod(block3)
    if threads > MAX_THREADS_PER_BLOCK:
        return _fail_all(kernel_name, f"TILE = {tile} launches a block of {block3[0]} x "
                         f"{block3[1]} = {threads:,} threads, but a block holds at most 1,024 "
                         f"on every CUDA GPU: with one thread per element, TILE <= 32",
                         tile=tile, block=block3, t0=t0)
    draw = draw if draw is not None else active_draw()
    if seed is None:
        seed = draw.seed if draw is not None else 0
    cases = graded_cases(tile, draw, threads)
    record_shapes(kernel_name, tile, cases)
    runner = _Runner(f, tile, block3,
                     grid or (lambda M, N, K, t: _default_grid(M, N, K, t)), int(seed),
                     t0 + time_limit)
    checks: list[Check] = [Check("compiles and launches", 0, 0, True, launched)]

    # --- correctness
    shared_case_shape = None
    for case in cases:
        checks.append(_correctness(runner, case))
        if shared_case_shape is None and case.name == "long K":
            shared_case_shape = case.shapes[0]

    # --- correctness again where a race was detected: warps in another order a GPU allows
    notes += _adversary(runner, checks, tile)

    # --- synchronisation: hazards seen in the runs above, then a hazards="raise" run
    checks.append(_shared_used(runner, shared_case_shape))
    checks.append(_synchronisation(runner, shared_case_shape))
    checks.append(_tile_consistent(f, tile, block3))
    checks.append(_index_width(graded_source, options, graded_kernel))
    checks.append(_accumulator(graded_source, options, graded_kernel, runner))

    if gpu or gpu is None:
        notes += _gpu_pass(graded_source, options, graded_kernel, tile, block3, runner, checks,
                           gpu, cases, template=graded_kernel != kernel_name)
    checks = _weigh(checks)
    return GradeReport(kernel_name, tuple(checks), tile, block3, time.perf_counter() - t0,
                       tuple(notes))


def _correctness(runner: _Runner, case: _Case) -> Check:
    name = f"correct: {case.name}"
    for shape in case.shapes:
        if runner.aborted:
            return Check(name, 0, case.points, False, f"not run: {runner.aborted}")
        if time.perf_counter() > runner.deadline:
            runner.aborted = "the grader's time limit ran out on earlier cases"
            return Check(name, 0, case.points, False, f"not run: {runner.aborted}")
        try:
            C, A, B = runner.run(shape)
        except StepBudgetExceeded as exc:
            runner.aborted = (f"an earlier case ran past the step budget (M={shape[0]}, "
                              f"N={shape[1]}, K={shape[2]})")
            return Check(name, 0, case.points, False, _explain_error(exc, shape))
        except (KernelRuntimeError, LaunchError, KernelArgumentError) as exc:
            if isinstance(exc, (BarrierError, RaceError)):
                runner.sync_errors.append((shape, exc))
            return Check(name, 0, case.points, False, _explain_error(exc, shape))
        except _InputWritten as exc:
            return Check(name, 0, case.points, False,
                         f"M={shape[0]}, N={shape[1]}, K={shape[2]}: {exc}")
        except CompileError as exc:      # a construct the emulator only rejects when it runs
            return Check(name, 0, case.points, False, f"M={shape[0]}, N={shape[1]}, "
                         f"K={shape[2]}: the emulator cannot run this kernel: {exc}")
        M, N, K = shape
        A64, B64 = A.astype(np.float64), B.astype(np.float64)
        ref = A64 @ B64
        if not bool(np.all(_close(C, ref, np.abs(A64) @ np.abs(B64), K))):
            return Check(name, 0, case.points, False,
                         f"M={M}, N={N}, K={K}: " + _diagnose(C, A, B, M, N, K, runner.tile))
        runner.right.add(shape)
        short = fma_shortfall(shape, runner.reports[shape])
        if short is not None:
            return Check(name, 0, case.points, False, f"M={M}, N={N}, K={K}: {short}")
    return Check(name, case.points, case.points, True)


ADVERSARY_SEEDS = 4          # seeds find_race_failure tries on a racy submission
ADVERSARY_SECONDS = 20.0     # and the most time it takes


def adversary_shape(tile: int) -> tuple:
    """The shape the adversarial search runs on: the 2·TILE cube (2 x 2 blocks, two tiles
    along K, so both barriers of the tile loop matter)."""
    return (2 * tile, 2 * tile, 2 * tile)


def grading_args(function, tile: int, M: int, N: int, K: int, seed: int = 0):
    """(arguments, block, grid) of the grader's launch of `function` at M x N x K: the
    inputs of `_inputs`, C pre-filled with NaN (an InOut), block (TILE, TILE, 1), the
    default grid."""
    from ..toolchain.backends.emulator import In, InOut

    A, B = _inputs(M, N, K, seed)
    C = np.full((M, N), np.nan, dtype=np.float32)
    return ([np.int32(M), np.int32(N), np.int32(K), In(A), In(B), InOut(C)], (tile, tile, 1),
            _default_grid(M, N, K, tile))


def _adversary(runner: _Runner, checks: list, tile: int) -> list:
    """A correctness case whose lockstep run was right but detected a read/write race on
    shared memory is run again with the warps of each block in another order a GPU may
    produce (tilinglib.find_race_failure on the 2·TILE cube finds the seed; each racy case
    then runs under it): where C is then wrong, the case fails, with the evidence. Returns
    the notes to add (what was searched)."""
    from ..toolchain.runtime.race_search import find_race_failure
    from ..toolchain.runtime.schedule import _ORDER

    racy = {shape for shape, h in runner.hazards if h.kind in _ORDER}
    if not racy or runner.aborted:
        return []
    left = runner.deadline - time.perf_counter()
    if left < 5.0:
        return ["the race detected was not run under other warp orders: no time was left"]
    shape = adversary_shape(tile)
    if shape not in racy:
        shape = min(racy, key=math.prod)
    M, N, K = shape
    args, block, _ = grading_args(runner.function, tile, M, N, K, runner.seed)
    grid = tuple(int(g) for g in runner.grid(M, N, K, tile))
    try:
        found = find_race_failure(runner.function, *args, block=runner.block, grid=grid,
                                  seeds=ADVERSARY_SEEDS,
                                  max_seconds=min(ADVERSARY_SECONDS, left - 2.0))
    except (KernelRuntimeError, LaunchError, CompileError) as exc:
        return [f"the race detected could not be run under other warp orders: "
                f"{str(exc).splitlines()[0]}"]
    if not found.found:
        return [f"under other warp orders (schedule='adversarial', {found.seeds_tried} seeds) "
                f"the answer did not change: {found.reason}"]
    for i, c in enumerate(checks):
        case = next((k for k in sgemm_cases(tile) if f"correct: {k.name}" == c.name), None)
        if case is None or not c.passed:
            continue
        for case_shape in case.shapes:
            if case_shape not in racy:
                continue
            why = _wrong_under(runner, case_shape, found)
            if why:
                checks[i] = Check(c.name, 0, c.max_points, False, why)
                break
    return [f"a race was detected, so each case with one also ran with the warps in another "
            f"order a GPU may produce (schedule='adversarial', seed={found.seed})"]


def _wrong_under(runner: _Runner, shape, found) -> str | None:
    """Why C is wrong at `shape` under `found`'s seed (None when it is right)."""
    from ..toolchain.backends.emulator import In, InOut

    M, N, K = shape
    A, B = _inputs(M, N, K, runner.seed)
    C = np.full((M, N), np.nan, dtype=np.float32)
    grid = tuple(int(g) for g in runner.grid(M, N, K, runner.tile))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runner.function(np.int32(M), np.int32(N), np.int32(K), In(A), In(B), InOut(C),
                            block=runner.block, grid=grid, hazards="ignore",
                            schedule="adversarial", seed=found.seed,
                            max_seconds=_seconds_left(runner.deadline))
    except (KernelRuntimeError, LaunchError, CompileError):
        return None
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ok = _close(C, A64 @ B64, np.abs(A64) @ np.abs(B64), K)
    if bool(np.all(ok)):
        return None
    i, j = (int(x) for x in np.argwhere(~ok)[0])
    head = (f"M={M}, N={N}, K={K}: right in lockstep, wrong when the warps of a block run in "
            f"another order a GPU may produce (schedule='adversarial', seed={found.seed}): "
            f"C[{i}][{j}] = {float(C[i, j]):.6g}, should be {float((A64 @ B64)[i, j]):.6g} "
            f"({int(np.count_nonzero(~ok)):,} of {M * N:,} elements wrong). A missing "
            f"__syncthreads() lets a warp read a tile before it is complete, or overwrite "
            f"it while another warp still reads it")
    if found.flip is not None and shape == adversary_shape(runner.tile):
        (l1, t1), (l2, t2) = found.statements
        f = found.flip
        verb = {"R": "read", "W": "wrote"}
        head += (f": warp {f.first_warp} {verb[f.first_kind]} {f.element} at line {l1} "
                 f"({t1}) before warp {f.second_warp} {verb[f.second_kind]} it at line {l2} "
                 f"({t2})")
    return head + "."


def _counted_shape(runner: _Runner, preferred):
    """The shape whose completed run the tiling and synchronisation checks read: `preferred`
    (the long-K case) if it ran to the end, else the completed run with the most tiles along
    K; None if no run completed."""
    if preferred in runner.reports:
        return preferred
    done = sorted(runner.reports, key=lambda s: (ceil_div(s[2], runner.tile), s[2]))
    return done[-1] if done else None


def _synchronisation(runner: _Runner, preferred) -> Check:
    name, pts = _SYNC, dict(_OTHER_CHECKS)[_SYNC]
    if runner.hazards:
        (M, N, K), h = runner.hazards[0]
        return Check(name, 0, pts, False, f"M={M}, N={N}, K={K}: {h}")
    if runner.sync_errors:
        shape, exc = runner.sync_errors[0]
        return Check(name, 0, pts, False, _explain_error(exc, shape))
    if runner.aborted:
        return Check(name, 0, pts, False, f"not run: {runner.aborted}")
    shape = _counted_shape(runner, preferred)
    if shape is None:
        return Check(name, 0, pts, False, "not checked: no correctness case ran to the end")
    try:
        runner.run(shape, hazards="raise")
    except _InputWritten:
        pass                # a correctness failure already; no race or barrier fault
    except (RaceError, BarrierError) as exc:
        return Check(name, 0, pts, False, _explain_error(exc, shape))
    except (KernelRuntimeError, LaunchError, KernelArgumentError) as exc:
        return Check(name, 0, pts, False, "not checked: the kernel fails before the end: "
                     + _explain_error(exc, shape))
    if runner.hazards:
        (M, N, K), h = runner.hazards[0]
        return Check(name, 0, pts, False, f"M={M}, N={N}, K={K}: {h}")
    return Check(name, pts, pts, True)


def _shared_used(runner: _Runner, preferred) -> Check:
    name, pts = _TILING, dict(_OTHER_CHECKS)[_TILING]
    t = runner.tile
    cap = (f"A kernel without tiling scores at most {CAP_WITHOUT_TILING} of 100 however "
           f"correct: its correctness points only.")
    if t < MIN_TILE:
        reuse = ("reuses nothing: each element staged in shared memory is used by one thread"
                 if t == 1 else f"reuses each element staged in shared memory only {t} times")
        return Check(name, 0, pts, False,
                     f"TILE = {t}: the kernel {reuse}, {0.25 * t:g} FLOP per byte requested "
                     f"(the naive kernel: 0.25; TILE = 16: 4). {cap} Use TILE >= {MIN_TILE} "
                     f"(16 or 32 on a real GPU).")
    if not runner.reports:
        return Check(name, 0, pts, False, "not checked: no correctness case ran to the end")
    # Every completed correctness run is read, each against the tiled count of its own grid
    # and K: a kernel that tiles only on some shapes (say, `if (M == 7 && N == 9)`) is not
    # tiled. An atomic returns the old value, so it is a read: atomics count as loads. A run
    # that reads no global memory at all (floor(K/TILE) = 0 tiles, say) shows nothing.
    def no_staging(shape, report):
        M, N, K = shape
        return Check(name, 0, pts, False, f"M={M}, N={N}, K={K}: the kernel stores "
                     f"{report.shared_store_instructions} and loads {report.shared_load_instructions} "
                     f"warp-requests of shared memory: it does not stage tiles there (every "
                     f"correctness shape is checked). Load each TILE x TILE tile of A and B "
                     f"into __shared__ arrays once, then compute from them. {cap}")

    for shape, report in runner.reports.items():
        M, N, K = shape
        blocks = math.prod(report.grid)
        tiles = ceil_div(K, t)
        tiled = blocks * tiles * 2 * ceil_div(t * t, WARP_SIZE)
        naive = report.warps * 2 * K
        reads = report.global_load_requests + report.global_atomic_requests
        if reads and (report.shared_load_instructions == 0 or report.shared_store_instructions == 0):
            return no_staging(shape, report)
        if reads > 2 * tiled:
            atomics = (f" ({report.global_load_requests:,} loads and "
                       f"{report.global_atomic_requests:,} atomics: an atomic returns the old "
                       f"value, so it counts as a load)" if report.global_atomic_requests
                       else "")
            return Check(name, 0, pts, False, f"M={M}, N={N}, K={K}: {reads:,} global load "
                         f"requests{atomics}, where a tiled kernel needs about {tiled:,} (a "
                         f"naive one about {naive:,}): the inner loop still reads A or B from "
                         f"global memory instead of the shared tiles. {cap}")
        # On every run that gave the right C: the bytes, and the work in shared memory.
        staged = _staging(runner, shape, report, t, blocks, tiles) \
            if shape in runner.right else None
        if staged is not None:
            return Check(name, 0, pts, False, f"{staged} {cap}")
    if not any(r.global_load_requests + r.global_atomic_requests
               for r in runner.reports.values()):
        return no_staging(*next(iter(runner.reports.items())))
    return Check(name, pts, pts, True)


def _staging(runner: _Runner, shape, report, t: int, blocks: int, tiles: int) -> str | None:
    """The tiling rule in bytes on one run: global loads at most twice what staging whole
    TILE x TILE tiles of A and B once per block per step along K asks for (8·TILE² bytes),
    then `evidence.staging_shortfall` (inputs read, staged in shared memory, feeding the
    multiply-adds); None when the run meets them."""
    M, N, K = shape
    whole = 8 * t * t * blocks * tiles
    loads = report.global_load_bytes_requested + 128 * report.global_atomic_requests
    if loads > 2 * whole:
        return (f"M={M}, N={N}, K={K}: {loads:,} bytes of global loads, over twice the "
                f"{whole:,} that staging each TILE x TILE tile of A and of B once per block "
                f"asks for (a naive kernel: {8 * M * N * K:,}): the multiply-adds still read "
                f"A or B from global memory instead of the shared tiles.")
    return staging_shortfall(shape, report, runner.counters.get(shape), t)


def _tile_consistent(f, tile: int, block) -> Check:
    name, pts = _OTHER_CHECKS[2]
    need = 2 * tile * tile * 4
    have = f.shared_size_bytes
    if have < need:
        return Check(name, 0, pts, False, f"the kernel's __shared__ arrays hold {have:,} bytes, "
                     f"but one TILE x TILE tile of A and one of B with TILE = {tile} need "
                     f"{need:,}: size the arrays with TILE (As[TILE][TILE]), not a number, so "
                     f"the tile you declare is the tile that runs.")
    if block[0] != tile:
        return Check(name, 0, pts, False, f"block {block} does not have TILE = {tile} threads "
                     f"along x: the launch and the kernel disagree on the tile.")
    return Check(name, pts, pts, True)


def _index_width(source, options, kernel) -> Check:
    from .source_checks import int_overflow_risks

    name, pts = _OTHER_CHECKS[3]
    risks = int_overflow_risks(source, options, kernel)
    if not risks:
        return Check(name, pts, pts, True)
    where = "; ".join(f"line {r.line}: {r.text}" for r in risks[:4])
    return Check(name, 0, pts, False,
                 f"int overflow risk: {where}. These index products reach an address in 32 "
                 f"bits (a product of two int values, in the kernel or in a __device__ "
                 f"function whose result is an index, or a 64-bit product cast back to int) "
                 f"and wrap around once a matrix has more than 2^31 elements (e.g. M = K = "
                 f"50,000: 10 GB, which an H200 holds), so the address goes negative. Compute "
                 f"them in 64 bits and keep them there: (size_t)row * K + k, with size_t "
                 f"parameters and results in helpers. (Read from the source: no run that fits "
                 f"the grader's memory can show the overflow.)")


def _accumulator(source, options, kernel, runner: _Runner | None = None) -> Check:
    """The source check for local scalars read before they are set
    (`source_checks.uninitialized_locals`), then, from `runner`'s correctness runs, the
    emulator's own report of local *array* elements read before they were written (a
    ``float sum[1];`` or ``float acc[COARSE];`` never zeroed)."""
    from .source_checks import uninitialized_locals

    name, pts = _OTHER_CHECKS[4]
    found = uninitialized_locals(source, options, kernel)
    if found:
        f0 = found[0]
        return Check(name, 0, pts, False,
                     f"uninitialised variable: '{f0.text}' is read at line {f0.line} before it "
                     f"is given a value. On a GPU it starts with whatever its register held "
                     f"(the emulator starts it at 0, so the answer may look right here): write "
                     f"'float {f0.text} = 0.0f;'.")
    if runner is not None and runner.unset_reads:
        (M, N, K), text = runner.unset_reads[0]
        return Check(name, 0, pts, False,
                     f"M={M}, N={N}, K={K}: {text} (the emulator starts local memory at 0, so "
                     f"the answer may look right here; on a GPU it holds whatever was there): "
                     f"set every element before reading it, e.g. 'float acc[4] = {{}};'.")
    return Check(name, pts, pts, True)


def _gpu_pass(source, options, kernel, tile, block, runner, checks, gpu,
              cases=None, template: bool = False) -> list[str]:
    """On the PyCUDA backend, run the correctness shapes on the GPU too; a wrong GPU result
    turns that case's check into a failure. `template`: `kernel` is a template's
    instantiation ('sgemm<16>'), compiled without PyCUDA's extern "C" (where nvcc refuses a
    template) and found under its mangled name. Returns notes for the report."""
    from ..backend import get_backend
    from ..errors import BackendUnavailableError

    try:
        backend = get_backend()
    except BackendUnavailableError as exc:
        if gpu:
            return [f"GPU pass not run: {exc}"]
        return []
    if backend.name != "pycuda":
        return ["GPU pass not run: tilinglib's backend here is the CPU emulator"] if gpu else []
    mod = (backend.SourceModule(source, options=options, no_extern_c=True) if template
           else backend.SourceModule(source, options=options))
    fn = mod.get_function(kernel)
    by_name = {c.name: i for i, c in enumerate(checks)}
    for case in cases or sgemm_cases(tile):
        i = by_name[f"correct: {case.name}"]
        if not checks[i].passed:
            continue
        for (M, N, K) in case.shapes:
            A, B = _inputs(M, N, K, runner.seed)
            C = np.full((M, N), np.nan, dtype=np.float32)
            grid = tuple(int(g) for g in runner.grid(M, N, K, tile))[:2]
            fn(np.int32(M), np.int32(N), np.int32(K), backend.In(A), backend.In(B),
               backend.InOut(C), block=block, grid=grid)
            A64, B64 = A.astype(np.float64), B.astype(np.float64)
            if not bool(np.all(_close(C, A64 @ B64, np.abs(A64) @ np.abs(B64), K))):
                checks[i] = Check(checks[i].name, 0, checks[i].max_points, False,
                                  f"on the GPU ({backend.device_name}), M={M}, N={N}, K={K}: "
                                  + _diagnose(C, A, B, M, N, K, tile))
                break
    return [f"correctness cases also run on the GPU ({backend.device_name})"]
