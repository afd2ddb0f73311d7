"""Checks of lesson 02's exercises (the naive kernel): an index expression, a grid, a rate.

Every kernel a check runs goes through the CPU emulator (`tilinglib.toolchain.backends.emulator`, through
`tilinglib.exercises.common`), whatever the notebook's backend.
"""

from __future__ import annotations

import numpy as np

from . import Wrong, exercise
from .common import (as_tuple, at_each_size, emulate, first_wrong, launch_dims, one_line,
                     only_at_one_size, require_number, require_whole, substitute)
from ..gpu import WARP_SIZE, ceil_div

NAIVE_LOOP_LINE = "sum += A[row * N + k] * B[k * N + col];"
#: The sizes 02.1 runs the student's indices at (the message quotes the first).
SIZES_02_1 = (20, 24)


def which_product(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> str | None:
    """Name of the product C equals ("A·B", "Aᵀ·B", ...), or None."""
    candidates = {"A·B": A @ B, "Aᵀ·B": A.T @ B, "A·Bᵀ": A @ B.T, "Aᵀ·Bᵀ": A.T @ B.T,
                  "B·A": B @ A, "(A·B)ᵀ": (A @ B).T}
    for name, value in candidates.items():
        if first_wrong(C, value.astype(np.float32)) is None:
            return name
    return None


# -- the exercises --------------------------------------------------------------------------

_NAIVE_PRODUCT_HINTS = {
    "Aᵀ·B": "your A index walks down a column of A; row `row` of A is "
            "A[row * N + 0], A[row * N + 1], ... (one step of k moves one float).",
    "A·Bᵀ": "your B index walks along a row of B; column `col` of B is "
            "B[0 * N + col], B[1 * N + col], ... (one step of k moves a whole row, N floats).",
    "Aᵀ·Bᵀ": "both indices are transposed: A's must walk along row `row`, B's down column `col`.",
    "B·A": "the two indices are swapped: A's belongs to B and B's to A.",
    "(A·B)ᵀ": "thread (row, col) computed C's element (col, row): swap row and col.",
}


@exercise("02.1", "the naive kernel's loads: A[...] and B[...] in the dot product")
def index_expressions(answer):
    from .. import kernels
    from ..sgemm import reference_product

    a_index, b_index = as_tuple(answer, 2, "two index expressions, (a_index, b_index)")
    a_index = one_line(a_index, "a_index")
    b_index = one_line(b_index, "b_index")
    if ";" in a_index + b_index or a_index.startswith("A[") or b_index.startswith("B["):
        raise Wrong("give only what goes inside the brackets: for A[row * N + k], the str "
                    "\"row * N + k\" (no A[...], no ';').")
    source = substitute(kernels.load("sgemm_naive"), NAIVE_LOOP_LINE,
                        f"sum += A[{a_index}] * B[{b_index}];")
    # Two sizes: an index with N written as a number works at one of them only.
    def run(N):
        f, A, B, C = emulate(source, "sgemmNaive", N, block=(8, 8, 1),
                             grid=(ceil_div(N, 8), ceil_div(N, 8)))
        expected = reference_product(A, B).astype(np.float32)
        return N, f.last_report, A, B, C, expected, first_wrong(C, expected)

    runs = at_each_size(run, SIZES_02_1)
    passed = [N for N, r in zip(SIZES_02_1, runs) if not isinstance(r, Wrong) and r[-1] is None]
    if len(passed) == 1:
        raise Wrong(only_at_one_size(f"N = {passed[0]}", [f"N = {n}" for n in SIZES_02_1], "N"))
    if isinstance(runs[0], Wrong):
        raise runs[0]
    N, report, A, B, C, expected, wrong = runs[0]
    if wrong is not None:
        name = which_product(C, A, B)
        if name in _NAIVE_PRODUCT_HINTS:
            raise Wrong(f"C came out as {name}, not A·B: {_NAIVE_PRODUCT_HINTS[name]}")
        r, c = wrong
        raise Wrong(f"C[{r}][{c}] is {C[r, c]:.4g}, NumPy says {expected[r, c]:.4g} (N = {N}). "
                    f"Thread (row, col) = ({r}, {c}) must add A[{r}][k] × B[k][{c}] for "
                    f"k = 0 … N-1; element (i, j) of a row-major N × N matrix is at i * N + j.")
    r = report
    return (f"C matches NumPy. The emulator counted {r.flops:,} FLOPs and {r.global_load_bytes_requested:,} "
            f"bytes requested at N = {N}: {r.global_load_bytes_requested / (r.flops / 2):g} bytes per FMA, "
            f"lesson 01's count.")


def _as_grid(grid) -> tuple[int, int]:
    if not isinstance(grid, (tuple, list)) or len(grid) not in (2, 3):
        raise Wrong(f"a grid is a tuple (blocks along x, blocks along y), got {grid!r}.")
    grid = launch_dims(grid, "the grid")
    if len(grid) == 3 and grid[2] != 1:
        raise Wrong("the grid's z must be 1: C is two-dimensional.")
    if any(g < 1 for g in grid):
        raise Wrong(f"each entry of the grid must be a whole number >= 1, got {tuple(grid)}.")
    return grid[0], grid[1]


@exercise("02.2", "a grid for N that is not a multiple of the block")
def grid_for_odd_n(answer, *, N=100, block=(32, 8, 1)):
    from .. import kernels

    gx, gy = _as_grid(answer)
    bx, by = int(block[0]), int(block[1])
    need_x, need_y = ceil_div(N, bx), ceil_div(N, by)
    if (gx, gy) == (need_y, need_x) and need_x != need_y:
        raise Wrong(f"x and y are swapped: x runs along the columns (col = blockIdx.x * "
                    f"blockDim.x + threadIdx.x), in blocks of {bx}; y along the rows, in "
                    f"blocks of {by}.")
    if gx > need_x or gy > need_y:
        raise Wrong(f"grid ({gx}, {gy}) covers C, but launches {gx * bx} × {gy * by} threads "
                    f"where ({need_x}, {need_y}) blocks, {need_x * bx} × {need_y * by} threads, "
                    f"already cover {N} × {N}: round N / block up, not further.")
    source = kernels.load("sgemm_naive")
    f, A, B, C = emulate(source, "sgemmNaive", N, block=block, grid=(gx, gy))
    unwritten = int(np.isnan(C).sum())
    if unwritten:
        raise Wrong(f"grid ({gx}, {gy}) × block ({bx}, {by}) gives {gx * bx} × {gy * by} threads "
                    f"for a {N} × {N} C: {unwritten:,} elements were never written (the "
                    f"emulator's Out array still holds NaN there). Round up: "
                    f"N / {bx} = {N / bx:g} needs {need_x} blocks.")
    return (f"({gx}, {gy}) = (ceil({N}/{bx}), ceil({N}/{by})): {f.last_report.threads:,} threads "
            f"for {N * N:,} elements; the guard `if (row < N && col < N)` idles the "
            f"{f.last_report.threads - N * N:,} extra ones. tl.grid_for does this division.")


@exercise("02.3", "GFLOP/s from a kernel's time")
def gflops_from_time(answer, *, N=4096, median_ms=22.782):
    answer = require_number(answer, "gflops (GFLOP/s)")
    expected = 2 * N ** 3 / (median_ms * 1e-3) / 1e9
    ratio = answer / expected
    hints = [(0.5, "half the rate: count 2 FLOPs per multiply-add, 2·N³ in all."),
             (1e3, "1,000 times too big: median_ms is in milliseconds; divide by "
                   "median_ms × 1e-3 seconds."),
             # TFLOP/s and a time left in ms give the same number: name both.
             (1e-3, "1,000 times too small: that is TFLOP/s (× 1e-12), or FLOPs divided by "
                    "the time still in ms; GFLOP/s is FLOPs / (median_ms × 1e-3 s) × 1e-9."),
             (1e-6, "a million times too small: that is TFLOP/s (× 1e-12) with the time "
                    "still in ms; GFLOP/s is FLOPs / (median_ms × 1e-3 s) × 1e-9."),
             (1e9, "1e9 times too big: that is FLOP/s, the rate before the × 1e-9 that "
                   "makes it GFLOP/s."),
             (1e6, "a million times too big: convert ms to s (× 1e-3) and FLOP/s to GFLOP/s "
                   "(× 1e-9)."),
             (1 / N, "N times too small: the kernel does 2·N³ FLOPs (N² outputs, 2N each)."),
             (2, "twice the rate: 2·N³ FLOPs already counts the multiply and the add.")]
    if abs(ratio - 1) > 1e-3:
        for value, hint in hints:
            if abs(ratio / value - 1) < 1e-2:
                raise Wrong(f"{answer:,.4g} GFLOP/s is {hint}")
        raise Wrong(f"{answer:,.4g} GFLOP/s is not it: rate = FLOPs / seconds, "
                    f"with 2·N³ FLOPs and median_ms × 1e-3 seconds, then × 1e-9 for GFLOP/s.")
    return (f"{expected:,.0f} GFLOP/s: 2·{N}³ = {2 * N ** 3:,} FLOPs in {median_ms} ms, as "
            f"tl.gflops(2 * N**3, median_ms) computes.")


@exercise("02.4", "requests and sectors of the naive kernel with 16 x 16 blocks")
def half_row_warps(answer, *, N=64):
    from ..sgemm import count_naive

    requests, sectors = as_tuple(answer, 2, "two numbers, (requests, sectors)")
    requests, sectors = require_whole(requests, "requests"), require_whole(sectors, "sectors")
    report, _ = count_naive(N, block=(16, 16, 1))
    steps = f"N²/32 = {N * N // WARP_SIZE} warps × N = {N} steps"
    if ((sectors, requests) == (report.global_load_requests, report.global_load_sectors)
            and requests != sectors):
        raise Wrong(f"the two numbers are swapped: {sectors:,} is the requests and "
                    f"{requests:,} the sectors; give (requests, sectors). A request can need "
                    f"several sectors, never the other way round.")
    if requests != report.global_load_requests:
        raise Wrong(f"requests: not {requests:,}. A warp is still 32 threads issuing one "
                    f"request per load, two loads per step, and there are {steps}.")
    if sectors == 5 * N ** 3 // WARP_SIZE:
        raise Wrong("sectors: that is the 32 × 32 count. A warp now covers two rows of 16 "
                    "threads: what does A[row * N + k] need when the warp has two rows?")
    if sectors == 6 * N ** 3 // WARP_SIZE:
        raise Wrong("sectors: A needs 2 sectors per step now (two rows, two addresses), right; "
                    "but both half warps read the same 16 columns of row k of B: 64 bytes, "
                    "2 sectors, not 4.")
    if sectors != report.global_load_sectors:
        raise Wrong(f"sectors: not {sectors:,}. Per warp and step: how many distinct "
                    f"32-byte sectors does each of the two loads touch, with two rows of 16?")
    return (f"{requests:,} requests and {sectors:,} sectors = 4·N³/32: per warp and step A "
            f"needs 2 sectors (two rows) and B 2 (16 floats, read by both half warps).")


@exercise("02.5", "threads that do nothing at N = 100")
def idle_threads(answer, *, N=100, block=(32, 32, 1)):
    from ..launch import grid_for

    answer = require_whole(answer, "idle_threads")
    grid = grid_for((N, N), block)
    launched = grid[0] * grid[1] * block[0] * block[1]
    expected = launched - N * N
    if answer == expected:
        return (f"{launched:,} threads launched ({grid[0]} × {grid[1]} blocks of "
                f"{block[0] * block[1]:,}) for {N * N:,} elements: {expected:,} fail the guard.")
    if answer == grid[0] * block[0] - N:
        raise Wrong(f"{answer} is the overhang of one row of threads; the grid is "
                    f"{grid[0] * block[0]} × {grid[1] * block[1]} threads in all.")
    raise Wrong(f"not {answer:,}: tl.grid_for((N, N), block) = {grid}, so count the threads "
                f"launched and subtract the N × N that have an element of C.")
