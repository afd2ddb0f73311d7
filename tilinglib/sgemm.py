"""Helpers the SGEMM lessons share: inputs, the NumPy check, launch shapes, counts, barriers.

Introduced in lessons 02 (inputs, `relative_error`, `count_naive`) and 03 (`tiled_launch`,
`valid_tiles`, `count_tiled`, `without_barrier`, `measure_tiled`). Every kernel here is a
source from `tilinglib.kernels`; the ``count_*`` helpers always run the CPU emulator (its
counters are exact and identical on every machine), while `measure_tiled` runs on the
notebook's backend (the GPU when there is one).

Bytes "requested" are what the threads ask global memory for (lanes x 4 bytes per load):
caches sit between the requests and DRAM, so the DRAM traffic is usually far smaller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import ArgumentError
from .gpu import MAX_THREADS_PER_BLOCK

__all__ = ["random_inputs", "reference_product", "random_matrices", "relative_error", "naive_launch", "tiled_launch", "valid_tiles",
           "requested_bytes_naive", "requested_bytes_tiled", "count_naive", "count_tiled",
           "without_barrier", "barrier_before_stores", "race_failure", "TiledMeasurement",
           "measure_tiled"]

MAX_TILE = math.isqrt(MAX_THREADS_PER_BLOCK)   # 32: TILE x TILE threads in one block
BARRIER = "__syncthreads();"


def random_inputs(M: int, N: int, K: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A (M x K) and B (K x N), float32 standard-normal numbers from ``default_rng(seed)``,
    A drawn first. The course's one source of seeded SGEMM inputs. `seed`: an int, or a
    sequence of ints (NumPy's seed entropy, e.g. ``[M, N, K]``).

    The same sizes and `seed` give the same matrices on every machine."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((int(M), int(K)), dtype=np.float32),
            rng.standard_normal((int(K), int(N)), dtype=np.float32))


def reference_product(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A·B computed by NumPy in float64 (the reference every check compares with), as float64."""
    return A.astype(np.float64) @ B.astype(np.float64)


def random_matrices(N: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two N x N float32 matrices of standard-normal numbers from generator `seed`
    (`random_inputs(N, N, N, seed)`)."""
    return random_inputs(N, N, N, seed)


def relative_error(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    """max |C - A·B| / max |A·B|, with A·B from `reference_product` (float64).

    The float64 product is the reference; dividing by its largest entry gives an error
    relative to the size of the answer (an element-wise relative error blows up on entries
    that happen to be near zero)."""
    ref = reference_product(A, B)
    scale = float(np.abs(ref).max()) or 1.0
    return float(np.abs(C.astype(np.float64) - ref).max()) / scale


def naive_launch(N: int, block=(16, 16, 1)) -> tuple[tuple, tuple]:
    """(block, grid) for the naive kernel: one thread per element of the N x N result."""
    from .launch import grid_for

    block = tuple(int(b) for b in block)
    return block, grid_for((N, N), block)


def valid_tiles(N: int, max_tile: int = MAX_TILE) -> list[int]:
    """The TILE values the tiled kernel accepts for size `N`: divisors of N up to `max_tile`.

    The kernel has no boundary handling (N % TILE must be 0) and launches TILE x TILE
    threads per block (at most 1,024, so TILE <= 32)."""
    return [t for t in range(1, min(N, max_tile) + 1) if N % t == 0]


def _check_tile(N: int, tile: int) -> None:
    if int(tile) != tile or not 1 <= tile <= MAX_TILE:
        raise ArgumentError(f"TILE={tile!r}: the tiled kernel needs a whole number from 1 to "
                         f"{MAX_TILE} (TILE x TILE threads per block, at most 1,024)")
    if N % tile:
        raise ArgumentError(f"TILE={tile} does not divide N={N}: the kernel has no boundary "
                         f"handling; valid tiles for N={N}: {valid_tiles(N)}")


def tiled_launch(N: int, tile: int) -> tuple[tuple, tuple]:
    """(block, grid) for the tiled kernel: block (TILE, TILE, 1), grid (N/TILE, N/TILE).

    Raises ValueError when TILE is not one of `valid_tiles(N)`."""
    _check_tile(N, tile)
    return (tile, tile, 1), (N // tile, N // tile)


def requested_bytes_naive(N: int) -> int:
    """Global-load bytes the naive kernel requests: N^2 threads x 2N floats x 4 B = 8 N^3."""
    return 8 * N ** 3


def requested_bytes_tiled(N: int, tile: int) -> int:
    """Global-load bytes the tiled kernel requests: 8 N^3 / TILE (each float serves TILE FMAs)."""
    _check_tile(N, tile)
    return 8 * N ** 3 // tile


def count_naive(N: int, block=(32, 32, 1), seed: int = 0):
    """Run the naive kernel on the CPU emulator; returns (LaunchReport, relative error)."""
    from . import recipes
    from .toolchain.backends.emulator import In, Out

    A, B = random_matrices(N, seed)
    C = np.zeros_like(A)
    block, grid = naive_launch(N, block)
    f = recipes.get("naive").compile(emulator=True)
    f(np.int32(N), In(A), In(B), Out(C), block=block, grid=grid)
    return f.last_report, relative_error(C, A, B)


def count_tiled(N: int, tile: int, *, pad: int = 0, source: str | None = None, seed: int = 0,
                hazards: str = "warn"):
    """Run the tiled kernel (or `source`, same signature) on the CPU emulator.

    Compiled with ``-DTILE=<tile> -DPAD=<pad>``; returns (LaunchReport, relative error).
    `hazards` is passed to the emulator ("warn", "raise" or "ignore")."""
    from . import recipes
    from .toolchain.backends.emulator import In, Out

    block, grid = tiled_launch(N, tile)
    A, B = random_matrices(N, seed)
    C = np.zeros_like(A)
    f = recipes.get("tiled").compile({"TILE": tile, "PAD": pad}, source=source, emulator=True)
    f(np.int32(N), In(A), In(B), Out(C), block=block, grid=grid, hazards=hazards)
    return f.last_report, relative_error(C, A, B)


def race_failure(source: str, N: int = 32, tile: int = 16, *, kernel: str | None = None,
                 seed: int = 0, seeds: int = 8):
    """What a race in a tiled kernel of sgemmTiled's signature (``int N, A, B, C``) does
    to its answer: `tilinglib.find_race_failure` on the CPU emulator, compiled with
    ``-DTILE=<tile>``, for N x N float32 matrices from `random_matrices(N, seed)`, block
    (tile, tile, 1), grid (N / tile, N / tile), trying `seeds` warp schedules.

    Returns the `RaceFailure` (print it for the wrong element, the two lines and the warps;
    `found` is False, with the reason, when there is no race or no seed changes C). Used by
    lessons 03 and 06 and exercise 03.4. `kernel`: the function's name (default: the tiled
    recipe's, sgemmTiled).

    The search is a pure function of these arguments, so its result is kept in the disk
    cache (`tilinglib.toolchain.disk_cache`, off in the grader's sandbox) when it finished
    well inside the search's time budget; a result read from there carries the `seconds` of
    the search that made it."""
    from . import recipes
    from .toolchain import disk_cache
    from .toolchain.backends.emulator import In, Out, SourceModule, find_race_failure
    from .toolchain.runtime.race_search import DEFAULT_SECONDS

    _check_tile(N, tile)
    block, grid = tiled_launch(N, tile)
    kernel = recipes.get("tiled").function if kernel is None else kernel
    key = disk_cache.key_of("race_failure", source, int(N), int(tile), kernel, int(seed),
                            seeds if isinstance(seeds, int) else tuple(seeds))
    stored = disk_cache.get("race_failures", key)
    if stored is not None:
        return stored
    A, B = random_matrices(N, seed)
    f = SourceModule(source, options=recipes.options({"TILE": tile})).get_function(kernel)
    failure = find_race_failure(f, np.int32(N), In(A), In(B), Out(np.zeros_like(A)),
                                block=block, grid=grid, seeds=seeds)
    if failure.seconds < DEFAULT_SECONDS / 4:        # the budget cut nothing short
        disk_cache.put("race_failures", key, failure)
    return failure


def barrier_before_stores(source: str) -> str:
    """The double-buffered kernel (`sgemm_tiled_db`) with its loop's one `__syncthreads()`
    moved up, from after the stores of tile t + 1 into the other buffer to before them
    (right after the multiply-add loop): a misplaced barrier, the line count kept. Raises
    ArgumentError when `source` does not have the double-buffered kernel's stores."""
    stores = ("        if (t + 1 < tiles) {\n"
              "            As[cur ^ 1][ty][tx] = a_next;\n"
              "            Bs[cur ^ 1][ty][tx] = b_next;\n"
              "        }\n")
    at = source.find(stores + "        " + BARRIER + "\n")
    if at < 0:
        raise ArgumentError("the source does not store tile t + 1 into As[cur ^ 1] and "
                            "Bs[cur ^ 1] just before its barrier, as sgemm_tiled_db does")
    end = at + len(stores) + len("        " + BARRIER + "\n")
    return source[:at] + "        " + BARRIER + "\n" + stores + source[end:]


def without_barrier(source: str, which: str = "first") -> str:
    """`source` with its first (or "second") ``__syncthreads();`` turned into a comment.

    Line numbers stay the same, so the emulator's reports point at the student's lines.
    Raises ValueError when there is no such barrier."""
    if which not in ("first", "second"):
        raise ArgumentError(f"which must be 'first' or 'second', not {which!r}")
    starts, i = [], source.find(BARRIER)
    while i >= 0:
        starts.append(i)
        i = source.find(BARRIER, i + 1)
    index = 0 if which == "first" else 1
    if len(starts) <= index:
        raise ArgumentError(f"the source has {len(starts)} {BARRIER} call(s), so no {which} one")
    at = starts[index]
    return source[:at] + "/* __syncthreads removed */" + source[at + len(BARRIER):]


@dataclass(frozen=True)
class TiledMeasurement:
    """What `measure_tiled` found for one TILE (None where the backend cannot say).

    `requested_bytes` and `bytes_per_fma` are counted by the emulator, or on a GPU taken
    from the formula 8 N^3 / TILE (which the emulator's counts confirm); `gflops` and
    `median_ms` exist only on a GPU."""

    N: int
    tile: int
    backend: str
    relative_error: float
    flops: int
    requested_bytes: int
    global_load_requests: int | None
    global_load_sectors: int | None
    shared_load_instructions: int | None
    median_ms: float | None
    gflops: float | None

    @property
    def bytes_per_fma(self) -> float:
        """Global-load bytes requested per multiply-add: 8 for the naive kernel, 8/TILE here."""
        return self.requested_bytes / (self.flops / 2)


def measure_tiled(N: int, tile: int, *, source: str | None = None, seed: int = 0,
                  repeat: int = 10) -> TiledMeasurement:
    """Compile the tiled kernel with TILE=`tile`, run it on the notebook's backend, check it.

    On a GPU: times it with `tl.time_kernel` (GFLOP/s, median ms). On the emulator: its
    counters. Raises what compiling or launching raises (e.g. `CompileError` for a broken
    `source`), and ValueError for a TILE the kernel cannot take."""
    from . import recipes
    from .backend import get_backend
    from .timing import time_kernel

    backend = get_backend()
    block, grid = tiled_launch(N, tile)
    A, B = random_matrices(N, seed)
    C = np.zeros_like(A)
    f = recipes.get("tiled").compile({"TILE": tile}, source=source)
    args = (np.int32(N), backend.In(A), backend.In(B), backend.Out(C))
    flops = 2 * N ** 3
    t = time_kernel(f, *args, block=block, grid=grid, flops=flops, repeat=repeat)
    err = relative_error(C, A, B)
    r = t.report
    if r is not None:
        return TiledMeasurement(N, tile, backend.name, err, r.flops, r.global_load_bytes_requested,
                                r.global_load_requests, r.global_load_sectors,
                                r.shared_load_instructions, None, None)
    return TiledMeasurement(N, tile, backend.name, err, flops, requested_bytes_tiled(N, tile),
                            None, None, None, t.median_ms, t.gflops)
