"""Grading a coarsened tiled SGEMM (Assignment 4): correct, race-free, and cheap in traffic.

Introduced by ``notebooks/assignments/a4_coarsen/``, after lesson 07 (register tiling and
thread coarsening). The kernel is the tiled kernel of lessons 03 and a1 with each thread
computing COARSE outputs of C from registers instead of one:

```python
from tilinglib.grading.coarse import check_coarsened
report = check_coarsened(source)        # kernel "sgemmCoarse", TILE 32, COARSE from the source
report.score, report.max_score, report.failures, report.notes
```

The launch is fixed: ``block = (TILE, TILE / COARSE, 1)``, ``grid = (ceil(N / TILE),
ceil(M / TILE))``: each block computes one TILE x TILE tile of C, each thread COARSE of its
elements. TILE must be 32; COARSE (``#define COARSE``) one of 2, 4, 8, 16, 32.

The targets, per FMA of the product (M·N·K of them, whatever the kernel executes), in bytes
the threads ask for (the emulator's counters, as Nsight Compute's "requested" metrics):

- global loads: a block stages each TILE x TILE tile of A and of B once, 8·TILE² bytes per
  step along K, for TILE³ FMAs: **8 / TILE = 0.25 B/FMA** at TILE = 32. Coarsening keeps it.
- shared loads: the tiled kernel reads As[ty][k] and Bs[k][tx] for every FMA: 8 B/FMA. A
  coarsened thread reads Bs[k][tx] once per k into a register and COARSE values of As for its
  COARSE FMAs: (4 + 4·COARSE) / COARSE = **4 + 4/COARSE B/FMA** (6 at COARSE = 2, 5 at 4).

Both are measured at M = N = K = 2·TILE, where every tile is full, and bounded on every
correctness shape by what staging whole tiles costs, so a kernel cannot be cheap only on the
shape the targets are read at. The grader's random data are seeded from the source itself,
so no kernel can carry the answers of the data it will be graded on.
"""

from __future__ import annotations

import functools
import hashlib
import time
import warnings
from typing import Sequence

from ..errors import CompileError, KernelRuntimeError
from ..gpu import ceil_div
from .evidence import staging_shortfall
from .secret import Draw, active_draw, record_shapes
from .sgemm import (_SYNC, SGEMM_SIGNATURE, Check, GradeReport, _accumulator,
                    _contained, _correctness, _default_grid, _index_width, _macro_or_none,
                    _probe_tile, _Runner, _synchronisation, _weigh, graded_cases, sgemm_cases)
from .templates import Instance, instantiate, macro_clash_hint

__all__ = ["check_coarsened", "coarse_targets", "declared_coarse", "COARSE_TILE",
           "COARSE_VALUES", "COARSE_KERNEL"]

COARSE_KERNEL = "sgemmCoarse"
COARSE_TILE = 32
COARSE_VALUES = (2, 4, 8, 16, 32)
# A warp's shared loads must carry, on average, at least this many bytes per request (4-byte
# loads by at least half of its 32 lanes): below it, a few lanes do the block's work.
MIN_BYTES_PER_SHARED_REQUEST = 64

GLOBAL = "global loads: at most 8/TILE bytes per FMA (tiles staged in shared memory)"
SHARED = "shared loads: at most 4 + 4/COARSE bytes per FMA (operands reused from registers)"
INDEX = "64-bit index arithmetic"
ACCUMULATOR = "accumulator initialised"
# The checks after correctness (70 points; correctness is 30), in order. GLOBAL is the gate:
# a kernel that does not stage tiles keeps only its correctness points.
A4_CHECKS = ((GLOBAL, 20), (SHARED, 25), (_SYNC, 15), (INDEX, 5), (ACCUMULATOR, 5))
_GATE_WHY = ("not counted: without tiles staged in shared memory (see 'global loads') a "
             "kernel keeps only its correctness points")


def coarse_targets(coarse: int, tile: int = COARSE_TILE) -> dict:
    """The traffic targets for a kernel of tile `tile` computing `coarse` outputs per thread:
    {"global": 8 / tile, "shared": 4 + 4 / coarse}, in bytes requested per FMA of C = A·B.
    Raises ValueError for a `coarse` or `tile` below 1."""
    if int(coarse) < 1 or int(tile) < 1:
        raise ValueError(f"coarse and tile must be at least 1, not {coarse} and {tile}")
    return {"global": 8 / int(tile), "shared": 4 + 4 / int(coarse)}


def declared_coarse(source: str, options: Sequence[str] | None = None) -> int:
    """The COARSE a kernel source declares: the value of the macro COARSE after the source's
    own ``#define`` and the ``-DCOARSE=...`` in `options` (nvcc-style strings).

    Raises `CompileError` if the source does not compile or does not define COARSE."""
    return _probe_tile(source, [str(o) for o in (options or [])], macro="COARSE")


def _seed_of(source: str, options) -> int:
    """The data seed for `source`: 32 bits of its SHA-256 (with the options). The same source
    gets the same data in a notebook and in the command; a source cannot know its own seed."""
    text = source + "\0" + "\0".join(options)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:4], "big")


def _fail_all(kernel: str, reason: str, *, tile=None, block=None, t0=0.0) -> GradeReport:
    checks = [Check("compiles and launches", 0, 0, False, reason)]
    later = "not run: the kernel could not be launched (see 'compiles and launches')"
    for case in sgemm_cases(tile or COARSE_TILE):
        checks.append(Check(f"correct: {case.name}", 0, case.points, False, later))
    for name, pts in A4_CHECKS:
        checks.append(Check(name, 0, pts, False, later))
    return GradeReport(kernel, tuple(checks), tile, block, time.perf_counter() - t0)


def _repoint(check: Check, name: str, points: float) -> Check:
    """An all-or-nothing check of check_sgemm's, renamed and worth `points`."""
    return Check(name, points if check.passed else 0, points, check.passed, check.message)


def _whole_tiles(shape, coarse: int) -> dict:
    """Bytes a kernel staging whole tiles asks for on `shape` at most: global loads (every
    element of every A and B tile, 8·TILE² per block per step along K) and shared loads
    (TILE·(1 + COARSE) 4-byte loads per thread per step)."""
    M, N, K = shape
    t = COARSE_TILE
    steps = ceil_div(M, t) * ceil_div(N, t) * ceil_div(K, t)
    threads = t * t // coarse
    return {"global": 8 * t * t * steps, "shared": 4 * t * (1 + coarse) * threads * steps}


def _global_loads(report) -> int:
    # An atomic returns the old value, so it is a read: count a warp's atomic as 128 bytes.
    return report.global_load_bytes_requested + 128 * report.global_atomic_requests


def _traffic(runner: _Runner, coarse: int, measured, measured_ok: bool):
    """The global and shared traffic checks, and notes with the measured values."""
    targets = coarse_targets(coarse)
    g_pts, s_pts = dict(A4_CHECKS)[GLOBAL], dict(A4_CHECKS)[SHARED]
    if not runner.reports:
        why = "not checked: no correctness case ran to the end"
        return Check(GLOBAL, 0, g_pts, False, why), Check(SHARED, 0, s_pts, False, why), []
    M, N, K = measured
    where = f"M = N = K = {M}"
    if measured not in runner.reports or not measured_ok:
        why = (f"not checked: the traffic is read at {where}, where the kernel did not give the "
               f"right C (see 'correct: square, multiple of TILE'): the traffic of a wrong "
               f"answer says nothing")
        return Check(GLOBAL, 0, g_pts, False, why), Check(SHARED, 0, s_pts, False, why), []
    report, counters = runner.reports[measured], runner.counters.get(measured)
    fmas = M * N * K
    g_bytes = _global_loads(report)
    s_bytes = counters.shared_load_bytes if counters is not None else 0
    g, s = g_bytes / fmas, s_bytes / fmas
    notes = [f"measured at {where} (the emulator's counters, bytes requested per FMA of "
             f"C = A·B, {fmas:,} FMAs): global loads {g:.4g} B/FMA (target <= "
             f"{targets['global']:g}), shared loads {s:.4g} B/FMA (target <= "
             f"{targets['shared']:g} at COARSE = {coarse})"]

    # 1. The global target at the measured shape, and the tiles really in shared memory.
    g_fail = s_fail = None
    if g_bytes < 4 * (M * K + K * N):
        g_fail = (f"{where}: the kernel asks for {g_bytes:,} bytes of global loads, fewer than "
                  f"A and B hold ({4 * (M * K + K * N):,}): it does not read its inputs.")
    elif g > targets["global"] + 1e-12:
        g_fail = (f"{where}: {g:.4g} bytes of global loads per FMA, over the target of "
                  f"{targets['global']:g} (8/TILE: each block loads every element of its A "
                  f"and B tiles once per step along K, {8 * COARSE_TILE ** 2:,} bytes for "
                  f"{COARSE_TILE ** 3:,} FMAs; a naive kernel needs 8). Stage the tiles in "
                  f"__shared__ arrays, each thread loading COARSE elements of each, and "
                  f"compute only from them.")
    elif report.shared_store_instructions == 0 or report.shared_load_instructions == 0:
        g_fail = (f"{where}: the kernel stores {report.shared_store_instructions} and loads "
                  f"{report.shared_load_instructions} warp-requests of shared memory: it does not "
                  f"stage tiles there.")
    # 2. The shared target, with the work spread over the warps' lanes.
    per_request = s_bytes / counters.shared_load_instructions if s_bytes else 0.0
    if s_bytes == 0:
        s_fail = (f"{where}: the kernel loads nothing from shared memory: there is no reuse "
                  f"to count.")
    elif s > targets["shared"] + 1e-12:
        words = (" 8 B/FMA is the tiled kernel's count: both operands read from shared memory "
                 "for every FMA." if abs(s - 8) < 0.05 else "")
        s_fail = (f"{where}: {s:.4g} bytes of shared loads per FMA, over the target of "
                  f"{targets['shared']:g} (4 + 4/COARSE at COARSE = {coarse}).{words} Read "
                  f"Bs[k][tx] into a register once per k and use it for all COARSE of the "
                  f"thread's outputs, each from its own As row: COARSE + 1 shared loads for "
                  f"COARSE FMAs.")
    elif per_request < MIN_BYTES_PER_SHARED_REQUEST:
        s_fail = (f"{where}: the warps' shared loads carry {per_request:.3g} bytes per request "
                  f"on average, {per_request / 4:.2g} of 32 lanes: a few threads do the "
                  f"block's work while the others wait. Each of the block's TILE x "
                  f"TILE/COARSE threads computes its own COARSE outputs.")
    # 3. On every shape that ran (right or wrong), no more than staging whole tiles costs:
    #    a kernel cannot be cheap on the measured shape only.
    for shape, rep in runner.reports.items():
        m, n, k = shape
        bound = _whole_tiles(shape, coarse)
        got = _global_loads(rep)
        if g_fail is None and got > bound["global"]:
            g_fail = (f"M={m}, N={n}, K={k}: the kernel asks for {got:,} bytes of global loads, "
                      f"where staging each TILE x TILE tile of A and of B once per block "
                      f"needs at most {bound['global']:,} (a naive kernel: {8 * m * n * k:,}): "
                      f"on this shape the kernel still reads A or B from global memory instead "
                      f"of the shared tiles (every correctness shape is checked).")
        cnt = runner.counters.get(shape)
        s_got = cnt.shared_load_bytes if cnt is not None else 0
        if s_fail is None and s_got > bound["shared"]:
            s_fail = (f"M={m}, N={n}, K={k}: the kernel asks for {s_got:,} bytes of shared "
                      f"loads, where {COARSE_TILE} x (1 + COARSE) loads per thread per tile "
                      f"need at most {bound['shared']:,} (every correctness shape is checked).")

    # 4. On every run that gave the right C: the inputs read, staged, feeding the FMAs.
    for shape in runner.reports:
        if g_fail is None and shape in runner.right:
            g_fail = staging_shortfall(shape, runner.reports[shape], runner.counters.get(shape),
                                       COARSE_TILE)
    g_check = Check(GLOBAL, 0 if g_fail else g_pts, g_pts, g_fail is None, g_fail or "ok")
    s_check = Check(SHARED, 0 if s_fail else s_pts, s_pts, s_fail is None, s_fail or "ok")
    return g_check, s_check, notes


def _accumulators(runner: _Runner, source, options, kernel) -> Check:
    """check_sgemm's source check for local scalars read before they are set, then the
    emulator's own report of local *array* elements read before they were written (a
    ``float acc[COARSE];`` never zeroed), from the correctness runs."""
    return _repoint(_accumulator(source, options, kernel, runner), ACCUMULATOR,
                    dict(A4_CHECKS)[ACCUMULATOR])


def _grade(source: str, kernel_name: str, *, options: Sequence[str] | None = None,
           seed: int | None = None, time_limit: float = 60.0,
           draw: Draw | None = None) -> GradeReport:
    if not isinstance(source, str):
        raise TypeError(f"source must be the kernel's CUDA C as a str, not "
                        f"{type(source).__name__}")
    t0 = time.perf_counter()
    options = [str(o) for o in (options or [])]
    deadline = t0 + time_limit
    from ..toolchain.backends.emulator import SourceModule

    fail = functools.partial(_fail_all, kernel_name, t0=t0)
    try:
        module = SourceModule(source, options=options)
    except CompileError as exc:
        return fail(f"the source does not compile: {exc}"
                    + macro_clash_hint(source, options, ("TILE", "COARSE")))
    graded_source, graded_kernel, template_values, template_notes = source, kernel_name, {}, []
    try:
        f = module.get_function(kernel_name)
    except LookupError as exc:
        # a kernel template: graded as its instantiation (TILE = 32, COARSE from the source)
        inst = instantiate(source, options, module, kernel_name, ("TILE", "COARSE"),
                           {"TILE": COARSE_TILE},
                           lambda macro: _macro_or_none(source, options, deadline, macro))
        if not isinstance(inst, Instance):
            return fail(inst or str(exc))
        f, graded_source, graded_kernel = inst.function, inst.source, inst.kernel
        template_values, template_notes = dict(inst.values), [inst.note]
    kinds = [(p.ctype.kind if not p.ctype.is_pointer else
              "pointer:" + getattr(p.ctype.target, "name", "?")) for p in f.params]
    if kinds != ["int", "int", "int", "pointer:float", "pointer:float", "pointer:float"]:
        have = ", ".join(f"{p.ctype} {p.name}" for p in f.params)
        return fail(f"the kernel's parameters are ({have}); the assignment asks for "
                    f"{kernel_name}{SGEMM_SIGNATURE}")
    values = {}
    for macro, example in (("TILE", "#define TILE 32"), ("COARSE", "#define COARSE 4")):
        if macro in template_values:
            values[macro] = template_values[macro]
            continue
        try:
            values[macro] = _probe_tile(source, options, deadline, macro=macro)
        except CompileError:
            return fail(f"{macro} is not defined: write '{example}' at the top of the source "
                        f"and use {macro} in the kernel")
        except KernelRuntimeError as exc:
            return fail(f"could not read {macro}: {exc}")
    tile, coarse = values["TILE"], values["COARSE"]
    if tile != COARSE_TILE:
        return fail(f"TILE = {tile}: this assignment fixes TILE = {COARSE_TILE} (its targets "
                    f"are for 32 x 32 tiles): write '#define TILE {COARSE_TILE}'", tile=tile)
    if coarse not in COARSE_VALUES:
        why = ("COARSE = 1 is the tiled kernel itself: each thread computes one output"
               if coarse == 1 else f"COARSE = {coarse} is not a coarsening factor of TILE = "
               f"{tile}")
        return fail(f"{why}. Choose COARSE from {', '.join(map(str, COARSE_VALUES))} (it must "
                    f"divide TILE: the block is TILE x TILE/COARSE threads)", tile=tile)
    block = (tile, tile // coarse, 1)
    draw = draw if draw is not None else active_draw()
    if seed is None:
        seed = draw.seed if draw is not None else _seed_of(source, options)
    # Each thread does COARSE threads' work: the draw's cost is that of TILE² threads.
    cases = graded_cases(tile, draw)
    record_shapes(kernel_name, tile, cases)
    runner = _Runner(f, tile, block, lambda M, N, K, t: _default_grid(M, N, K, t),
                     int(seed), deadline, step_scale=1 + coarse // 8)
    checks: list[Check] = [Check("compiles and launches", 0, 0, True,
                                 f"ok, {template_notes[0]}" if template_notes else "ok")]
    long_k = measured = None
    measured_ok = False
    for case in cases:
        check = _correctness(runner, case)
        checks.append(check)
        if case.name == "long K":
            long_k = case.shapes[0]
        if case.name == "square, multiple of TILE":
            measured, measured_ok = case.shapes[0], check.passed
    g_check, s_check, notes = _traffic(runner, coarse, measured, measured_ok)
    checks += [g_check, s_check,
               _repoint(_synchronisation(runner, long_k), _SYNC, dict(A4_CHECKS)[_SYNC]),
               _repoint(_index_width(graded_source, options, graded_kernel), INDEX,
                        dict(A4_CHECKS)[INDEX]),
               _accumulators(runner, graded_source, options, graded_kernel)]
    checks = _weigh(checks, gate=GLOBAL, gate_why=_GATE_WHY)
    notes.insert(0, f"COARSE = {coarse}: block {block}, grid (ceil(N/{tile}), ceil(M/{tile}))")
    return GradeReport(kernel_name, tuple(checks), tile, block, time.perf_counter() - t0,
                       tuple(notes))


_check = functools.partial(_contained, fail_all=_fail_all)(_grade)


def check_coarsened(source: str, kernel_name: str = COARSE_KERNEL, *,
                    options: Sequence[str] | None = None, seed: int | None = None,
                    time_limit: float | None = None, draw: Draw | None = None) -> GradeReport:
    """Grade a coarsened tiled SGEMM, ``C = A·B`` for any M, N, K (Assignment 4).

    `source` (str, CUDA C) defines ``__global__ void sgemmCoarse(int M, int N, int K, const
    float* A, const float* B, float* C)`` (A M x K, B K x N, C M x N, row-major float32),
    ``#define TILE 32`` and ``#define COARSE c`` with c in 2, 4, 8, 16, 32. It is launched
    on the CPU emulator with ``block = (TILE, TILE / COARSE, 1)`` and ``grid = (ceil(N /
    TILE), ceil(M / TILE))``: one TILE x TILE tile of C per block, COARSE outputs per thread.

    Checks (100 points). Correctness (30): check_sgemm's seven kinds of shape at TILE = 32
    (1x1x1, 64 cubed, 33/31, primes, 1000x3x5 and 3x1000x7, a long K, 67x69x71), NaN-filled
    C, random data seeded from the source (`seed` overrides), every access bounds-checked,
    a right C from fewer than M·N·K multiply-adds failing its case; `draw` (default: that of
    an enclosing `secret.drawing` block, as the command grades) seeds the data instead and
    adds its shapes to each case.
    Then: global loads at most 8/TILE = 0.25 bytes per FMA at M = N = K = 64, on every
    shape at most what staging whole tiles costs, and on every run with the right C the
    inputs read, stored in shared memory and feeding the multiply-adds
    (`evidence.staging_shortfall`) (20, the gate: a kernel failing it keeps only its
    correctness points); shared loads at most 4 + 4/COARSE bytes per FMA at 64 cubed, at
    most TILE·(1 + COARSE) per thread per tile on every shape, with the loads spread over
    the warps' lanes (25); no race, partial barrier or read of unwritten shared
    memory (15); 64-bit index products (5, read from the source) and initialised accumulators
    (5: local scalars from the source, local array elements such as ``acc[COARSE]`` from the
    emulator's report of reads before writes). Bytes are those the threads request (the emulator's counters), per FMA of the
    product (M·N·K, not the FMAs the kernel executes). Every check after correctness counts
    in proportion to the correctness points earned.

    A kernel template (``template <int TILE, int COARSE>``, or ``template <int COARSE>``
    beside ``#define TILE 32``) is graded as its instantiation: the source's own, else TILE =
    32 and the source's macros (tilinglib/grading/templates.py; the message of "compiles
    and launches" says which ran).

    A source that does not compile, the wrong signature, TILE other than 32 or a COARSE not
    in the list scores 0 with the reason; grading stops after `time_limit` seconds (as
    check_sgemm's: 60, or the command's limit inside its `secret.drawing` block).
    Returns a `GradeReport` (its `notes` give the measured bytes per FMA); raises nothing
    for any source string (TypeError for arguments of the wrong type).
    """
    if not isinstance(kernel_name, str):
        raise TypeError(f"kernel_name must be a str, not {type(kernel_name).__name__}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _check(source, kernel_name, options=options, seed=seed, time_limit=time_limit,
                      draw=draw)
