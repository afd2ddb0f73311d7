"""The SGEMM ladder of lessons 07 and 08: from the tiled kernel towards cuBLAS, one step each.

Introduced in lesson 07 (register tiling). Each rung is a `Step` (a `tilinglib.recipes.Recipe`,
where each kernel's facts are written once): a kernel file of
`tilinglib.kernels`, its tile-shape parameters (``-D`` macros) with defaults, the launch it
needs, the shapes it refuses (`Step.valid`, with the reason) and the bytes per FMA it asks
memory for, as formulas of the tile shape::

    from tilinglib import ladder
    step = ladder.get("regtile2d")
    p = step.resolve({"TM": 4})       # {'BM': 128, 'BN': 128, 'BK': 8, 'TM': 4, 'TN': 8}
    step.valid(p)                                 # None: it can launch
    step.global_bytes_per_fma(p)                  # 4 (BM + BN) / (BM BN) = 0.0625
    step.shared_bytes_per_fma(p)                  # 4 (TM + TN) / (TM TN) = 1.5
    C = ladder.run(step, A, B, p)                 # on the notebook's backend (GPU or emulator)
    report = ladder.count(step, 256, 256, 256, p) # always the emulator: a LaunchReport
    ladder.measured_bytes_per_fma(report)         # (global, shared): the same two numbers

Every kernel of the ladder except the first computes C (M x N) = A (M x K) · B (K x N) for
row-major float32 matrices of any shape, with the signature
``(int M, int N, int K, const float* A, const float* B, float* C)``. The first rung,
``tiled``, is lesson 03's kernel unchanged: it takes N only (square matrices) and needs
N % TILE == 0; `Step.shape_error` says so for other shapes.

What the byte formulas count: bytes *requested* by load instructions (lanes x bytes per lane,
as `LaunchReport.global_load_bytes_requested`), divided by the FMAs executed (`LaunchReport.flops` / 2),
at a shape where M, N and K are multiples of the block tile (then no guard skips a load).
Stores of C are not counted (one per output, whatever the tiling). Caches sit between the
requests and DRAM, so DRAM traffic is smaller; shared-memory bytes requested include
broadcasts (32 lanes reading one word count 128 bytes, though it is one wavefront).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .errors import ArgumentError
from .gpu import MAX_THREADS_PER_BLOCK, SECTOR_BYTES, WARP_SIZE  # noqa: F401
from .recipes import (FLOAT, MAX_REGISTERS, MAX_STATIC_SHARED,  # noqa: F401
                      REGISTERS_PER_SM, WARP_LAYOUT, Joint, Recipe, _shape_text)
from .toolchain.measure import metrics as ncu_names
from .recipes import (COARSE, REGTILE2D, TILED, TUNED, VEC4, WARPTILE,  # noqa: F401
                      WARPTILE_DB)

__all__ = ["Step", "Joint", "STEPS", "TUNING", "TUNED", "names", "get", "launch", "run", "count", "measure",
           "one_block_represents", "tile_loop_k",
           "StepMeasurement",
           "measured_bytes_per_fma", "reference_run", "reference_counters", "ncu_bytes_per_fma",
           "compiled_registers", "ptxas_registers",
           "choices", "MAX_THREADS_PER_BLOCK", "MAX_STATIC_SHARED", "MAX_REGISTERS", "WARP_SIZE"]

Params = Mapping[str, int]

#: A rung of the ladder is a `tilinglib.recipes.Recipe` (kernel, tile-shape parameters with
#: defaults, launch, `valid`, byte formulas): the ladder's facts are written there, once.
Step = Recipe

#: The ladder in order: lesson 07's rungs, then lesson 08's (float4 loads with a transposed A
#: tile, warp tiling, double buffering).
STEPS: list[Step] = [TILED, COARSE, REGTILE2D, VEC4, WARPTILE, WARPTILE_DB]

#: Lesson 08's last step, beyond the ladder's table: the best kernel tuned per size
#: (`tilinglib.tile_choice`), measured at N = 1024 ... 8192 by ``bench/ladder_sizes.py``.
#: Kept out of `STEPS`, every one of which the reference data's ladder run measured.
TUNING: list[Step] = [TUNED]


def names() -> list[str]:
    """The names of the `STEPS`, in ladder order (`TUNING`'s are apart)."""
    return [s.name for s in STEPS]


def get(step: Step | str) -> Step:
    """The `Step` called `step` (a Step is returned as it is).

    Raises ArgumentError listing the names when there is none."""
    if isinstance(step, Recipe):
        return step
    for s in STEPS + TUNING:
        if s.name == step:
            return s
    every = names() + [s.name for s in TUNING]
    raise ArgumentError(f"no ladder step {step!r}; the steps are {', '.join(every)}")


def choices(step: Step | str, name: str, candidates, params: Params | None = None) -> list[int]:
    """The values of parameter `name`, among `candidates`, that `valid` accepts with the other
    parameters as in `params` (defaults for the rest): what a slider over `name` may offer.

    Sorted, each once. Raises ArgumentError for a parameter the step does not have."""
    s = get(step)
    base = s.resolve(params)
    if name not in base:
        raise ArgumentError(f"{s.name!r} has no parameter {name!r}; its parameters are "
                            f"{', '.join(s.defaults)}")
    return sorted({int(v) for v in candidates if s.valid({**base, name: int(v)}) is None})


def _checked(step: Step | str, M: int, N: int, K: int, params: Params | None):
    s = get(step)
    return s, s.checked(M, N, K, params)


def launch(step: Step | str, M: int, N: int, K: int,
           params: Params | None = None) -> tuple[tuple[int, int, int], tuple[int, int]]:
    """(block, grid) for C (M x N) = A (M x K) · B (K x N) with this step and tile shape.

    Raises ArgumentError when the tile shape is not `valid` or the step cannot take the
    matrix shape (the reason is in the message)."""
    s, p = _checked(step, M, N, K, params)
    return s.block(p), s.grid(M, N, p)


@functools.lru_cache(maxsize=64)
def _function(backend_name: str, kernel: str, function: str, defines: tuple[str, ...]):
    from . import kernels
    from .backend import get_backend

    if backend_name == "emulator-always":
        from .toolchain.backends.emulator import SourceModule
    else:
        SourceModule = get_backend().SourceModule
    return SourceModule(kernels.load(kernel), options=list(defines)).get_function(function)


def _matrices(A, B) -> tuple[np.ndarray, np.ndarray]:
    for what, X in (("A", A), ("B", B)):
        if not isinstance(X, np.ndarray) or X.ndim != 2:
            dims = f" with {X.ndim} dimensions" if hasattr(X, "ndim") else ""
            raise ArgumentError(f"{what} must be a 2-D NumPy array (rows x columns), not a "
                                f"{type(X).__name__}{dims}")
        if X.dtype != np.float32:
            raise ArgumentError(f"{what} has dtype {X.dtype}: the SGEMM kernels take float32; "
                                f"pass {what}.astype(np.float32)")
    if A.shape[1] != B.shape[0]:
        raise ArgumentError(f"A is {A.shape[0]}x{A.shape[1]} and B is {B.shape[0]}x{B.shape[1]}: "
                            f"A's columns must equal B's rows")
    return np.ascontiguousarray(A), np.ascontiguousarray(B)


def _call(f, s: Step, p: dict, A, B, C, In, Out, grid=None, **kw):
    M, K = A.shape
    N = B.shape[1]
    block, grid = s.block(p), grid or s.grid(M, N, p)
    if s.square_only:
        f(np.int32(N), In(A), In(B), Out(C), block=block, grid=grid, **kw)
    else:
        f(np.int32(M), np.int32(N), np.int32(K), In(A), In(B), Out(C), block=block, grid=grid,
          **kw)


def run(step: Step | str, A: np.ndarray, B: np.ndarray, params: Params | None = None) -> np.ndarray:
    """C = A · B by this step's kernel on the notebook's backend (`tl.SourceModule`).

    `A`: (M, K) float32, `B`: (K, N) float32. Returns C, (M, N) float32. Compiled modules are
    cached per tile shape. On the emulator, C is a pure function of the kernel's text, the
    tile shape and the inputs, and is kept in the disk cache (`toolchain.disk_cache`) under
    them, unless its launch warned (the warning is shown again on every run then). Raises
    ArgumentError for arrays of the wrong kind, a tile shape that is not `valid`, or a matrix
    shape the step cannot take."""
    import hashlib
    import warnings

    from . import kernels
    from .backend import get_backend
    from .toolchain import disk_cache

    A, B = _matrices(A, B)
    s, p = _checked(step, A.shape[0], B.shape[1], A.shape[1], params)
    backend = get_backend()
    disk_key = None
    if backend.name == "emulator":
        disk_key = disk_cache.key_of(
            "run", s.name, s.kernel, s.function, kernels.load(s.kernel), tuple(s.defines(p)),
            A.shape, B.shape, hashlib.sha256(np.ascontiguousarray(A).tobytes()).hexdigest(),
            hashlib.sha256(np.ascontiguousarray(B).tobytes()).hexdigest())
        stored = disk_cache.get("ladder_runs", disk_key)
        if isinstance(stored, np.ndarray) and stored.shape == (A.shape[0], B.shape[1]):
            return stored
    f = _function(backend.name, s.kernel, s.function, tuple(s.defines(p)))
    C = np.zeros((A.shape[0], B.shape[1]), dtype=np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # (split-K adds into C: the zeros must reach the GPU, so InOut)
        _call(f, s, p, A, B, C, backend.In, backend.InOut if s.adds_into_c(p) else backend.Out)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if disk_key is not None and not caught:
        disk_cache.put("ladder_runs", disk_key, C)
    return C


def one_block_represents(step: Step | str, M: int, N: int, K: int,
                         params: Params | None = None) -> bool:
    """True when the counters of block (0, 0) alone, times the number of blocks, are those
    of the whole launch of this step for C (M x N) = A (M x K) · B (K x N); `count` then runs
    that one block.

    Why it holds, and when: the ladder's kernels branch only on thread and block indices and
    on M, N, K, never on the data, and a block's shared memory is its own. Block (bx, by)
    makes block (0, 0)'s accesses with every global address moved by a constant: A by
    by·BM·K floats, B by bx·BN, C by by·BM·N + bx·BN. The counters are then equal when

    - every block is full (M % BM == 0 and N % BN == 0; for ``tiled``, N % TILE == 0), so the
      guards against the matrix edges decide the same in every block (K's guard depends on
      k0 only, the same in all blocks);
    - each of those moves is a whole number of 32-byte sectors (BN, BM·K and BM·N multiples
      of 8 floats), so every warp's request touches as many sectors as block (0, 0)'s:
      requests, sectors and bytes are equal, and shared memory (wavefronts, bank conflicts,
      barriers, FLOPs) is the same per block whatever the addresses.

    With one block there is nothing to gain, and False is returned; so it is with split-K
    (``tuned`` at SPLITK > 1), whose blocks take different K chunks, the last one shorter
    (with TAILWAVE, a 1-D grid of whole tiles and chunks).
    `tests/test_ladder.py` checks the equality against full runs for every step."""
    s, p = _checked(step, M, N, K, params)
    grid = s.grid(M, N, p)
    if len(grid) != 2 or grid[0] * grid[1] < 2:
        return False
    bm, bn = (p["TILE"], p["TILE"]) if s.square_only else (p["BM"], p["BN"])
    if M % bm or N % bn:
        return False
    sector_floats = SECTOR_BYTES // FLOAT
    return bn % sector_floats == 0 and (bm * K) % sector_floats == 0 \
        and (bm * N) % sector_floats == 0


def tile_loop_k(step: Step | str, N: int, params: Params | None = None) -> int:
    """The K at which the emulator counts the N x N product for `measure`: whole periods of
    the tile loop, at least two steps, instead of all N / BK steps; N for ``tiled`` (it
    takes square matrices only) and where the period does not divide N.

    Why the bytes per FMA are those of K = N: every step of a ladder kernel's tile loop
    loads a BM x BK tile of A and a BK x BN tile of B and does BM·BN·BK FMAs; step s reads
    the same addresses as step 0 moved by s·BK floats in A's rows and s·BK rows of B. B's
    rows are N floats (whole sectors when N % 8 == 0); A's move of s·BK floats is whole
    sectors when s·BK is a multiple of 8, so the sector pattern repeats every
    8 / gcd(BK, 8) steps: the period. Over whole periods the requests, sectors, bytes,
    wavefronts and FMAs per step are the same, and so are their ratios (the
    double-buffered kernels load the same K / BK tiles, in the prologue and the loop)."""
    import math

    s = get(step)
    p = s.resolve(params)
    if s.square_only or "BK" not in p or N % 8:
        return int(N)
    period = 8 // math.gcd(p["BK"], 8)
    k = p["BK"] * period * (2 if period == 1 else 1)
    # (K % 4 as N's: the float4 kernels choose their loads of A by it)
    return k if k <= N and N % k == 0 and k % 4 == N % 4 else int(N)


def _scaled(report, blocks: int, grid):
    """The report of one block's launch as the launch of `blocks` alike on `grid`."""
    import dataclasses

    skip = {"kernel", "grid", "block", "shared_bytes", "hazards"}
    scaled = {f.name: getattr(report, f.name) * blocks for f in dataclasses.fields(report)
              if f.name not in skip}
    grid = tuple(grid) + (1,) * (3 - len(grid))
    return dataclasses.replace(report, grid=grid, **scaled)


#: count's results, by step, shape, tile shape, seed and hazard mode: a launch on the
#: emulator is deterministic, so a tile shape seen before (a slider moved back) costs nothing.
#: Launches that warned are not kept (their warnings are shown again when run again).
_COUNTS: dict = {}
_COUNTS_MAX = 512


def _counted(s: Step, p: dict, M: int, N: int, K: int, seed: int, hazards: str):
    """(LaunchReport, relative error of what was computed) of the step on the emulator,
    one block when `one_block_represents`, the whole launch otherwise; cached."""
    import warnings

    from . import kernels
    from .sgemm import random_inputs, relative_error
    from .toolchain import disk_cache
    from .toolchain.backends.emulator import In, InOut, Out

    key = (s.name, tuple(sorted(p.items())), int(M), int(N), int(K), seed, hazards)
    if key in _COUNTS:
        return _COUNTS[key]
    # (the disk cache, across processes: keyed by the kernel's text too, for an edited file)
    disk_key = disk_cache.key_of(key, s.kernel, s.function, kernels.load(s.kernel),
                                 tuple(s.defines(p)))
    stored = disk_cache.get("ladder_counts", disk_key)
    if isinstance(stored, tuple) and len(stored) == 2:
        _COUNTS[key] = stored
        return stored
    A, B = random_inputs(M, N, K, seed)
    C = np.zeros((int(M), int(N)), dtype=np.float32)
    f = _function("emulator-always", s.kernel, s.function, tuple(s.defines(p)))
    grid = s.grid(M, N, p)
    one = one_block_represents(s, M, N, K, p)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # (one block writes its tile of C only: InOut, so that the rest is not reported as
        # never written)
        # (split-K adds into C: InOut, so that its zeros are there to add to)
        _call(f, s, p, A, B, C, In, InOut if one or s.adds_into_c(p) else Out,
              hazards=hazards, grid=(1, 1) if one else None)
        report = f.last_report
        if one and report.hazards:
            one = False           # the whole launch, so that the hazards are all its own
            del caught[:]
            C[...] = 0
            _call(f, s, p, A, B, C, In, InOut if s.adds_into_c(p) else Out, hazards=hazards)
            report = f.last_report
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if one:
        bm, bn = (p["TILE"], p["TILE"]) if s.square_only else (p["BM"], p["BN"])
        report = _scaled(report, int(np.prod(grid)), grid)
        err = relative_error(C[:bm, :bn], A[:bm], B[:, :bn])
    else:
        err = relative_error(C, A, B)
    if not caught:
        if len(_COUNTS) >= _COUNTS_MAX:
            _COUNTS.pop(next(iter(_COUNTS)))
        _COUNTS[key] = (report, err)
        disk_cache.put("ladder_counts", disk_key, (report, err))
    return report, err


def count(step: Step | str, M: int, N: int, K: int, params: Params | None = None, *,
          seed: int = 0, hazards: str = "warn"):
    """Run the step on the CPU emulator for seeded random (M x K) · (K x N) inputs.

    Always the emulator, GPU or not: its counters are exact and the same on every machine.
    Returns the `LaunchReport` of the whole launch. Where `one_block_represents` says the
    blocks are alike, one block runs and its counters are multiplied by the number of
    blocks (the report says the full grid; the relative error below is that block's).
    Results are cached per shape. Raises ArgumentError as `launch` does, and
    `KernelRuntimeError` if the kernel computes a wrong product (relative error over 1e-4),
    which no ladder kernel should."""
    from .errors import KernelRuntimeError

    s, p = _checked(step, M, N, K, params)
    report, err = _counted(s, p, M, N, K, seed, hazards)
    if not err < 1e-4:
        raise KernelRuntimeError(f"{s.name} with {_shape_text(p)} computed a wrong product at "
                                 f"M={M}, N={N}, K={K} (relative error {err:.2g})",
                                 kernel=s.function)
    return report


def measured_bytes_per_fma(report, *, shared_bytes_per_load: int = FLOAT) -> tuple[float, float]:
    """(global, shared) load bytes requested per FMA, from an emulator `LaunchReport`.

    Global: ``global_load_bytes_requested / (flops / 2)``. Shared: the report counts shared load
    *requests* (warp instructions, ncu's ``smsp__inst_executed_op_shared_ld.sum``); each is
    32 lanes x `shared_bytes_per_load` bytes when every warp is full, as `Step.valid` makes
    it for the ladder's kernels (4 for a float, 16 for a float4). Raises ArgumentError for a
    launch with no FMAs."""
    fmas = report.flops / 2
    if fmas <= 0:
        raise ArgumentError("the launch did no FMAs, so there are no bytes per FMA to give")
    return (report.global_load_bytes_requested / fmas,
            report.shared_load_instructions * WARP_SIZE * shared_bytes_per_load / fmas)


@dataclass(frozen=True)
class StepMeasurement:
    """What `measure` found for one step and tile shape at size N (None where the backend
    cannot say).

    `formula_*_bytes_per_fma`: the step's formulas; `counted_*_bytes_per_fma`: the
    emulator's counters (emulator only; equal to the formulas when N is a multiple of the
    block tile); `counted_shape`: the (M, N, K) the emulator ran (None on a GPU).
    `registers` and `local_bytes` (spills) are ptxas's: read through PyCUDA on a
    GPU, else from the sm_90 table of `ptxas_registers` when it has the shape (None
    otherwise); `registers_source` says which. `occupancy` uses them when known. `gflops`
    and `median_ms`: GPU only."""

    step: str
    params: Mapping[str, int]
    N: int
    backend: str
    relative_error: float
    threads: int
    static_shared_bytes: int
    formula_global_bytes_per_fma: float
    formula_shared_bytes_per_fma: float
    counted_global_bytes_per_fma: float | None
    counted_shared_bytes_per_fma: float | None
    registers: int | None
    local_bytes: int | None
    registers_source: str | None
    occupancy: object
    median_ms: float | None
    gflops: float | None
    counted_shape: tuple | None = None


def measure(step: Step | str, N: int, params: Params | None = None, *, seed: int = 0,
            repeat: int = 10) -> StepMeasurement:
    """Compile the step with this tile shape, run it on the notebook's backend at N x N, check
    it against NumPy, and say what it cost.

    On a GPU: timed with `tl.time_kernel` (CUDA events, median of `repeat`), registers per
    thread and spill bytes from PyCUDA (``num_regs``, ``local_size_bytes``). On the emulator:
    its counters, as bytes per FMA. Both: the formulas and `tilinglib.occupancy` (with the
    registers when known). On the emulator the launch is `count`'s (one block where
    `one_block_represents`, cached per shape) over `tile_loop_k` of the tile loop's steps
    (every step alike: the bytes per FMA are those of K = N), and `relative_error` is of
    what it computed. Raises ArgumentError as `launch` does."""
    from .backend import get_backend
    from .occupancy import occupancy
    from .sgemm import random_matrices, relative_error
    from .timing import time_kernel

    s, p = _checked(step, N, N, N, params)
    backend = get_backend()
    if backend.name == "emulator":
        # Counted, as `count` does (one block where all blocks are alike), and cached:
        # the emulator has no time to give, and the same shape counts the same.
        K = tile_loop_k(s, N, p)
        report, error = _counted(s, p, N, N, K, seed, "warn")
        f, median_ms, gflops = None, None, None
        counted_shape = (int(N), int(N), K)
    else:
        A, B = random_matrices(int(N), seed)
        C = np.zeros_like(A)
        f = _function(backend.name, s.kernel, s.function, tuple(s.defines(p)))
        block, grid = s.block(p), s.grid(N, N, p)
        sizes = (np.int32(N),) if s.square_only else (np.int32(N),) * 3
        if s.adds_into_c(p):
            # split-K adds into C: checked on one launch into zeros; the timed launches
            # (which add up) write a scratch C
            _call(f, s, p, A, B, C, backend.In, backend.InOut)
            error = relative_error(C, A, B)
            t = time_kernel(f, *sizes, backend.In(A), backend.In(B),
                            backend.InOut(np.zeros_like(A)), block=block, grid=grid,
                            flops=2 * int(N) ** 3, repeat=repeat)
        else:
            t = time_kernel(f, *sizes, backend.In(A), backend.In(B), backend.Out(C),
                            block=block, grid=grid, flops=2 * int(N) ** 3, repeat=repeat)
            error = relative_error(C, A, B)
        report = t.report
        median_ms, gflops = t.median_ms, t.gflops
        counted_shape = None
    counted = (None, None) if report is None else measured_bytes_per_fma(
        report, shared_bytes_per_load=s.shared_load_width)   # 16 for the float4 kernels
    regs = getattr(f, "num_regs", None)
    local = getattr(f, "local_size_bytes", None) if regs is not None else None
    source = None if regs is None else "ptxas on this GPU (PyCUDA num_regs)"
    table = ptxas_registers(s, p) if regs is None else None
    if table is not None:
        regs, local, source = table["registers"], table["spill_store_bytes"], table["label"]
    occ = occupancy(s.threads(p), registers_per_thread=regs, static_shared=s.shared_bytes(p))
    return StepMeasurement(
        step=s.name, params=dict(p), N=int(N), backend=backend.name,
        relative_error=error, threads=s.threads(p),
        static_shared_bytes=s.shared_bytes(p),
        formula_global_bytes_per_fma=s.global_bytes_per_fma(p),
        formula_shared_bytes_per_fma=s.shared_bytes_per_fma(p),
        counted_global_bytes_per_fma=counted[0], counted_shared_bytes_per_fma=counted[1],
        registers=None if regs is None else int(regs),
        local_bytes=None if local is None else int(local), registers_source=source,
        occupancy=occ,
        median_ms=median_ms, gflops=gflops, counted_shape=counted_shape)


# -- the H200's figures for the ladder (filled by `python -m tilinglib.devtools.bench`, lesson 08) --

def _params_of(item) -> dict | None:
    extra = getattr(item, "extra", None) or {}
    p = extra.get("params", getattr(item, "params", None))
    return None if p is None else {str(k): int(v) for k, v in dict(p).items()}


def reference_run(step: Step | str, params: Params | None = None, N: int = 4096, *,
                  ref=None):
    """The reference data's timed run of this step and tile shape at N, or None when the
    data has none yet ("not measured yet": never a made-up figure).

    `ref`: a `tilinglib.reference.Reference` (default: ``reference.load("h200")``). For
    ``tiled``: the lesson-03 entry with the same TILE and no padding. For the other steps:
    a run whose ``kernel`` is the step's kernel file and whose extra key ``params`` equals
    the resolved tile shape (the form `python -m tilinglib.devtools.bench` writes them in). Its
    ``gflops``; ``registers`` and ``local_bytes`` in `Run.extra` when the bench read them."""
    from . import reference

    s = get(step)
    p = s.resolve(params)
    ref = reference.load("h200") if ref is None else ref
    for run in tuple(ref.runs) + tuple(ref.ladder_runs):     # the ladder's own run: ladder_runs
        if run.kernel != s.kernel or run.N != N:
            continue
        if s.square_only:
            if run.tile == p["TILE"] and run.pad in (0, None):
                return run
        elif _params_of(run) == p:
            return run
    return None


def reference_counters(step: Step | str, params: Params | None = None, N: int = 1024, *,
                       ref=None):
    """The reference data's Nsight Compute counters for this step and tile shape at N, or
    None when there are none yet. Matched as `reference_run` matches runs (a counter set
    carries the tile shape as ``params``)."""
    from . import reference

    s = get(step)
    p = s.resolve(params)
    ref = reference.load("h200") if ref is None else ref
    for c in tuple(ref.counter_sets) + tuple(ref.ladder_counter_sets):
        if c.kernel != s.kernel or c.N != N:
            continue
        if s.square_only:
            if c.tile == p["TILE"] and c.pad in (0, None):
                return c
        elif _params_of(c) == p:
            return c
    return None


def ncu_bytes_per_fma(counters, *, shared_bytes_per_load: int = FLOAT
                      ) -> tuple[float, float] | None:
    """(global, shared) load bytes requested per FMA from Nsight Compute counters, or None.

    Global: ``l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum`` (the bytes of the 32-byte
    sectors the loads touch: equal to the bytes requested when every sector is used whole, as
    in the ladder's kernels at their default shapes except ``warptile_db``, whose BK = 12
    cuts A's rows into 48-byte pieces that straddle sectors: 12% more) when the counters have
    it, else
    ``l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum`` x 128 B (a full warp of 4-byte loads
    per request) / FMAs; shared: ``smsp__inst_executed_op_shared_ld.sum`` x 32 lanes x
    `shared_bytes_per_load` (`Step.shared_load_width`: 4, or 16 for the float4 kernels of
    lesson 08) / FMAs, with FMAs ``smsp__sass_thread_inst_executed_op_ffma_pred_on.sum``.
    The shared figure counts instructions, so where nvcc merged four loads into one LDS.128
    it is lower than the source's (lesson 03)."""
    if counters is None:
        return None
    m = counters.metrics
    try:
        fmas = float(m[ncu_names.FFMA_THREAD_INSTRUCTIONS])
        if ncu_names.GLOBAL_LOAD_BYTES in m:
            g = float(m[ncu_names.GLOBAL_LOAD_BYTES])
        else:
            g = float(m[ncu_names.REPORT_METRICS["global_load_requests"]]) * WARP_SIZE * FLOAT
        sh = (float(m[ncu_names.REPORT_METRICS["shared_load_instructions"]]) * WARP_SIZE
              * shared_bytes_per_load)
    except (KeyError, TypeError):
        return None
    return (g / fmas, sh / fmas) if fmas else None


def compiled_registers(step: Step | str, params: Params | None = None):
    """(registers per thread, local bytes per thread) that ptxas gave this step and tile
    shape, compiled on this machine's GPU through PyCUDA; None on the emulator (it has no
    registers: use `reference_run(...).extra`, or `Step.registers_estimate`)."""
    from .backend import get_backend

    s = get(step)
    p = s.resolve(params)
    why = s.valid(p)
    if why:
        raise ArgumentError(f"{s.name} with {_shape_text(p)} cannot launch: {why}")
    backend = get_backend()
    if backend.name != "pycuda":
        return None
    f = _function(backend.name, s.kernel, s.function, tuple(s.defines(p)))
    return int(f.num_regs), int(f.local_size_bytes)


@functools.lru_cache(maxsize=None)
def _ptxas_table() -> dict:
    import json
    from importlib import resources

    path = resources.files("tilinglib") / "data" / "ptxas_sm90.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {"nvcc": data.get("nvcc", ""), "arch": data.get("arch", ""),
            # keyed by the resolved params: a switch added since the table was made is
            # at its default (which keeps the code the table compiled)
            "rows": {(r["step"], tuple(sorted(get(r["step"]).resolve(r["params"]).items()))): r
                     for r in data["shapes"]}}


def ptxas_registers(step: Step | str, params: Params | None = None) -> dict | None:
    """What ptxas reported for this step and tile shape, compiled for sm_90 (the H200) by
    ``bench/ptxas_registers.py`` without a GPU, or None for a shape it did not compile.

    A dict: ``registers`` (per thread, what PyCUDA's ``num_regs`` gives), ``spill_store_bytes``,
    ``spill_load_bytes``, ``stack_frame_bytes``, ``shared_bytes``, and ``label`` (the
    compiler and architecture, for a caption)."""
    s = get(step)
    table = _ptxas_table()
    row = table.get("rows", {}).get((s.name, tuple(sorted(s.resolve(params).items()))))
    if row is None:
        return None
    label = f"ptxas for {table['arch']} ({table['nvcc']}), compiled without a GPU"
    return {k: row[k] for k in ("registers", "spill_store_bytes", "spill_load_bytes",
                                "stack_frame_bytes", "shared_bytes")} | {"label": label}
