"""Checks of lesson 03's exercises (the tiled kernel): the tile loads, the launch, the
barriers, and two counts. Kernels run on the CPU emulator whatever the notebook's backend.
"""

from __future__ import annotations

import numpy as np

from ..recipes import TILED, options
from ..sgemm import reference_product
from . import Wrong, blanks, exercise
from .common import (as_tuple, at_each_size, cuda_line, emulate, first_wrong, launch_dims, one_line,
                     only_at_one_size, require_whole, substitute)
from ..gpu import MAX_THREADS_PER_BLOCK, WARP_SIZE

A_LOAD = "As[ty][tx] = A[row * N + (t * TILE + tx)];"
B_LOAD = "Bs[ty][tx] = B[(t * TILE + ty) * N + col];"
MULTIPLY = "sum += As[ty][k] * Bs[k][tx];"
BARRIER = "__syncthreads();"
blanks("03.1", "sgemm_tiled", ("A[row * N + (t * TILE + tx)]", "A[ ? ]"),
       ("B[(t * TILE + ty) * N + col]", "B[ ? ]"))
blanks("03.2", "sgemm_tiled", (MULTIPLY, "sum += ?;"))
#: The (N, TILE) sizes 03.1 and 03.2 run the student's lines at (the messages quote the first):
#: an index with N or TILE written as a number is right at one of them only.
SIZES_03 = ((16, 4), (32, 8))

# A probe with the student's two loads: after each step's loads, every thread copies
# As[ty][tx] and Bs[ty][tx] out, so the check can say which element of A landed where.
_PROBE = """
__global__ void probe(int N, const float* A, const float* B, float* outA, float* outB)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    for (int t = 0; t < N / TILE; ++t) {
        %s
        %s
        __syncthreads();
        int at = ((t * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) * TILE * TILE
                 + ty * TILE + tx;
        outA[at] = As[ty][tx];
        outB[at] = Bs[ty][tx];
        __syncthreads();
    }
}
"""


def _tiled_source():
    from .. import kernels

    return kernels.load("sgemm_tiled")


def _probe_tiles(a_load: str, b_load: str, N: int, tile: int):
    """What the loads put in As and Bs: arrays [t, block y, block x, ty, tx] of the flat
    index into A and B of each element copied (-1 where nothing sensible was copied)."""
    from ..toolchain.backends.emulator import In, Out, SourceModule

    A = np.arange(N * N, dtype=np.float32).reshape(N, N)
    steps, blocks = N // tile, N // tile
    shape = (steps, blocks, blocks, tile, tile)
    outA = np.zeros(int(np.prod(shape)), np.float32)
    outB = np.zeros_like(outA)
    f = SourceModule(_PROBE % (a_load, b_load),
                     options=options({"TILE": tile})).get_function("probe")
    f(np.int32(N), In(A), In(A.copy()), Out(outA), Out(outB), block=(tile, tile, 1),
      grid=(blocks, blocks), hazards="ignore")
    return outA.reshape(shape), outB.reshape(shape)


def _describe_tile_mistake(got, which: str, N: int, tile: int) -> str | None:
    """The first element of `which` ("As" or "Bs") that holds the wrong element, in words."""
    steps, blocks = N // tile, N // tile
    for t in range(steps):
        for by in range(blocks):
            for bx in range(blocks):
                for ty in range(tile):
                    for tx in range(tile):
                        row, col = by * tile + ty, bx * tile + tx
                        if which == "As":
                            want = (row, t * tile + tx)
                            rule = f"A[row][t·TILE + tx] = A[{row}][{t}·{tile} + {tx}]"
                        else:
                            want = (t * tile + ty, col)
                            rule = f"B[t·TILE + ty][col] = B[{t}·{tile} + {ty}][{col}]"
                        value = got[t, by, bx, ty, tx]
                        if value == want[0] * N + want[1]:
                            continue
                        if np.isfinite(value) and 0 <= value < N * N and value == int(value):
                            held = f"{which[0]}[{int(value) // N}][{int(value) % N}]"
                        else:
                            held = "no element of " + which[0]
                        return (f"at step t = {t}, {which}[{ty}][{tx}] of block ({bx}, {by}, 0) "
                                f"holds {held}; it should hold {rule} (N = {N}, TILE = {tile}).")
    return None


@exercise("03.1", "the two tile loads of the tiled kernel")
def tile_loads(answer):
    a_load, b_load = as_tuple(answer, 2, "the two lines, (a_load, b_load)")
    a_load = one_line(a_load, "a_load")
    b_load = one_line(b_load, "b_load")
    if not a_load.startswith("As[ty][tx]") or not b_load.startswith("Bs[ty][tx]"):
        raise Wrong("keep the left-hand sides: thread (tx, ty) stores As[ty][tx] and "
                    "Bs[ty][tx]; your part is the element of A and of B on the right.")
    source = substitute(substitute(_tiled_source(), A_LOAD, a_load), B_LOAD, b_load)
    runs = _run_at_sizes(source)
    (N, tile), (f, C, expected) = SIZES_03[0], runs[0]
    if first_wrong(C, expected) is not None:
        gotA, gotB = _probe_tiles(a_load, b_load, N, tile)
        for which, got in (("As", gotA), ("Bs", gotB)):
            mistake = _describe_tile_mistake(got, which, N, tile)
            if mistake:
                raise Wrong(f"C does not match NumPy: {mistake}")
        raise Wrong("C does not match NumPy, though the tiles hold the right elements: did "
                    "you change anything else?")
    r = f.last_report
    return (f"C matches NumPy. At TILE = {tile} the emulator counted "
            f"{r.global_load_bytes_requested / (r.flops / 2):g} bytes requested per FMA (8 / TILE): each "
            f"element a thread copies is used by TILE threads of its block.")


def _run_tiled(source: str, N: int, tile: int):
    """Run the tiled kernel `source` at N, TILE; returns (function, C, NumPy's A·B)."""
    f, A, B, C = emulate(source, TILED.function, N, block=(tile, tile, 1),
                         grid=(N // tile, N // tile), options=options({"TILE": tile}))
    return f, C, reference_product(A, B).astype(np.float32)


def _run_at_sizes(source: str) -> list:
    """`_run_tiled` at each of SIZES_03; `Wrong` when the kernel is right at one of them
    only (N or TILE written as a number), or when it fails at the first."""
    runs = at_each_size(lambda size: _run_tiled(source, *size), SIZES_03)
    passed = [size for size, run in zip(SIZES_03, runs)
              if not isinstance(run, Wrong) and first_wrong(run[1], run[2]) is None]
    if len(passed) == 1:
        names = [f"N = {n}, TILE = {t}" for n, t in SIZES_03]
        raise Wrong(only_at_one_size(names[SIZES_03.index(passed[0])], names, "N and TILE"))
    if isinstance(runs[0], Wrong):
        raise runs[0]
    return runs


@exercise("03.2", "the multiply of the tiled kernel, from shared memory")
def tile_multiply(answer):
    line = one_line(answer, "multiply")
    if not line.startswith("sum +="):
        raise Wrong("keep the form sum += ...; : the line adds one product to the thread's "
                    "running sum.")
    source = substitute(_tiled_source(), MULTIPLY, line)
    runs = _run_at_sizes(source)
    (N, tile), (f, C, expected) = SIZES_03[0], runs[0]
    r = f.last_report
    wrong = first_wrong(C, expected)
    if wrong is not None:
        i, j = wrong
        raise Wrong(f"C[{i}][{j}] is {C[i, j]:.4g}, NumPy says {expected[i, j]:.4g}. "
                    + _which_operand(line, N, tile, j % tile, i % tile))
    per_fma = r.global_load_bytes_requested / (r.flops / 2)
    if r.shared_load_instructions == 0 or per_fma > 8 / tile:
        raise Wrong(f"C is right, but your kernel still requests {per_fma:g} bytes per FMA "
                    f"({8 / tile:g} with the tiles, at TILE = {tile}): your multiply reads A and "
                    f"B from global memory, so no element of the tiles is reused. Read As and "
                    f"Bs instead.")
    return (f"C matches NumPy, with {per_fma:g} bytes requested per FMA at TILE = {tile} and "
            f"{r.shared_load_instructions:,} shared-memory load requests: two per FMA per warp, "
            f"from the tiles.")


def _factors(expr: str) -> list[str]:
    """`expr` split at its top-level `*` (not inside brackets or parentheses), stripped."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(expr):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "*" and depth == 0:
            out.append(expr[start:i].strip())
            start = i + 1
    return out + [expr[start:].strip()]


_NEED_A = "the k-th element of row ty of the A tile (the tile row holding A's row `row`)"
_NEED_B = "the k-th element of column tx of the B tile (the tile column holding B's column `col`)"
_DECLARED = "As[i][j] and Bs[i][j] are row i, column j, as declared"


def _which_operand(line: str, N: int, tile: int, tx: int, ty: int) -> str:
    """Which of the two operands of a wrong `sum += x * y;` is wrong, found by running the
    kernel with each of the student's operands beside the other's right one (the message
    names the student's own operands only)."""
    expr = line[len("sum +="):].strip().rstrip(";").strip()
    parts = _factors(expr)
    a_op = [p for p in parts if "As[" in p and "Bs[" not in p]
    b_op = [p for p in parts if "Bs[" in p and "As[" not in p]
    right_a, right_b = (p.strip() for p in MULTIPLY[len("sum +="):].rstrip(";").split("*"))
    who = (f"Thread (tx, ty) = ({tx}, {ty}) computes the element of C in row ty, column tx of "
           f"its block's patch: for each k it needs")
    if len(parts) != 2 or len(a_op) != 1 or len(b_op) != 1:
        return (f"Your line adds {expr}: it should add one product, an element of As times "
                f"one of Bs. {who} {_NEED_A} times {_NEED_B} ({_DECLARED}).")

    def right_with(a, b) -> bool:
        try:
            f, C, expected = _run_tiled(substitute(_tiled_source(), MULTIPLY,
                                                   f"sum += {a} * {b};"), N, tile)
        except Wrong:
            return False
        return first_wrong(C, expected) is None

    a_right, b_right = right_with(a_op[0], right_b), right_with(right_a, b_op[0])
    if a_right and not b_right:
        return (f"Your A operand, {a_op[0]}, is right; your B operand, {b_op[0]}, reads the "
                f"wrong element of the B tile. {who} {_NEED_B} ({_DECLARED}).")
    if b_right and not a_right:
        return (f"Your B operand, {b_op[0]}, is right; your A operand, {a_op[0]}, reads the "
                f"wrong element of the A tile. {who} {_NEED_A} ({_DECLARED}).")
    return (f"Both operands read the wrong element: {a_op[0]} of the A tile and {b_op[0]} of "
            f"the B tile. {who} {_NEED_A}, and {_NEED_B} ({_DECLARED}).")


@exercise("03.3", "the tiled kernel's launch: block and grid")
def tiled_launch(answer, *, N=64, TILE=16):
    block, grid = as_tuple(answer, 2, "(block, grid)")
    if not isinstance(block, (tuple, list)) or len(block) != 3:
        raise Wrong(f"a block is three numbers (x, y, z), as PyCUDA takes it; got {block!r}.")
    if not isinstance(grid, (tuple, list)) or len(grid) not in (2, 3):
        raise Wrong(f"a grid is a tuple (blocks along x, blocks along y); got {grid!r}.")
    block, grid = launch_dims(block, "the block"), launch_dims(grid, "the grid")
    if block[:2] != (TILE, TILE) or block[2] != 1:
        if block[0] * block[1] * block[2] > MAX_THREADS_PER_BLOCK:
            raise Wrong(f"block {block} has {block[0] * block[1] * block[2]:,} threads; a "
                        f"block may hold 1,024. The kernel needs one thread per tile element.")
        raise Wrong(f"block {block}: each thread (tx, ty) copies As[ty][tx] and Bs[ty][tx], "
                    f"so tx and ty must each run over 0 … TILE-1 = {TILE - 1}: one thread per "
                    f"element of a {TILE} × {TILE} tile.")
    need = N // TILE
    if grid[:2] != (need, need) or (len(grid) == 3 and grid[2] != 1):
        gx, gy = grid[0], grid[1]
        if gx * TILE < N or gy * TILE < N:
            raise Wrong(f"grid {grid} × {TILE} threads covers {gx * TILE} × {gy * TILE} of the "
                        f"{N} × {N} C: each block computes a TILE × TILE patch, so N / TILE = "
                        f"{need} blocks each way.")
        # Run it (with one block too many at most, which already faults): the kernel has no
        # guard, so a block past N / TILE reads and writes outside the matrices.
        intro = (f"grid {grid} launches more blocks than the {need} × {need} patches of C, "
                 f"and the kernel has no guard")
        try:
            emulate(_tiled_source(), TILED.function, N, block=block,
                    grid=(min(gx, need + 1), min(gy, need + 1)), options=options({"TILE": TILE}),
                    hazards="ignore")
        except Wrong as exc:
            raise Wrong(f"{intro}: the first block past N / TILE = {need} faults.\n{exc}") from None
        raise Wrong(f"{intro}.")
    f, A, B, C = emulate(_tiled_source(), TILED.function, N, block=block, grid=grid,
                         options=options({"TILE": TILE}))
    return (f"block ({TILE}, {TILE}, 1), grid ({need}, {need}): {need * need} blocks, one per "
            f"{TILE} × {TILE} patch of C, as tl.sgemm.tiled_launch({N}, {TILE}) gives.")


_HAZARD_ADVICE = {
    "read-after-write": "a thread reads the tile before every thread has stored its element: "
                        "a barrier must come between the loads and the multiply.",
    "write-after-read": "the next step's loads overwrite the tile while other threads may "
                        "still read it: a barrier must come after the multiply, before the "
                        "next loads.",
    "write-after-write": "two threads store the same element with no barrier between.",
    "uninitialized-read": "a thread reads shared memory that nobody has stored yet.",
}


@exercise("03.4", "where the two __syncthreads() go")
def barrier_lines(answer):
    if isinstance(answer, (int, np.integer)):
        answer = (answer,)
    if not isinstance(answer, (tuple, list)) or not answer:
        raise Wrong(f"give kernel.cu line numbers, e.g. (26, 31); got {answer!r}.")
    answer = tuple(require_whole(a, "a line number") for a in answer)
    source = _tiled_source()
    lines = source.replace(BARRIER, "").splitlines()
    first, last = 23, 37                       # float sum ...; to the loop's closing brace
    for n in answer:
        if not first <= n <= last:
            raise Wrong(f"line {n} is outside the kernel's work: put the barriers between "
                        f"line {first} and line {last}.")
    for n in sorted(set(answer)):
        lines[n] = BARRIER + " " + lines[n]    # at the start of line n + 1: "after line n"
    edited = "\n".join(lines) + "\n"
    N, tile = 16, 8
    f, A, B, C = emulate(edited, TILED.function, N, block=(tile, tile, 1), grid=(2, 2),
                         options=options({"TILE": tile}))
    r = f.last_report
    races = [h for h in r.hazards if h.kind != "barrier-after-exit"]
    if races:
        h = races[0]
        quoted = "".join(f"\n  kernel.cu:{n}: {cuda_line(edited, n)}"
                         for n in sorted({h.other_line, h.line} - {None}))
        # what the race does to C when the warps run in another order a GPU may produce
        from ..sgemm import race_failure
        failure = race_failure(edited, N, tile, seeds=4)
        wrong = f"\n{failure.summary()}" if failure.found else ""
        raise Wrong(f"with barriers after line(s) {', '.join(map(str, sorted(set(answer))))} "
                    f"the emulator reports:\n{h}{quoted}\nThat is, "
                    f"{_HAZARD_ADVICE.get(h.kind, 'a race.')}{wrong}")
    per_block = r.barriers // (r.grid[0] * r.grid[1])
    steps = N // tile
    if per_block > 2 * steps:
        k_loop = _k_loop_lines(source)
        inside = sorted(n for n in set(answer) if n in k_loop)
        if inside:
            raise Wrong(f"no race, but each block waited at {per_block} barriers where 2 per "
                        f"step, {2 * steps}, are enough (the emulator's barrier count): the "
                        f"barrier after line {inside[0]} is inside the k loop (lines "
                        f"{min(k_loop)}–{max(k_loop) + 1}), so it runs TILE = {tile} times "
                        f"per step.")
        extra = per_block // steps - 2
        raise Wrong(f"no race, but each block waited at {per_block} barriers where 2 per "
                    f"step, {2 * steps}, are enough (the emulator's barrier count): "
                    f"{'one barrier' if extra == 1 else f'{extra} barriers'} more than needed. "
                    f"Keep the one between the loads and the multiply, and the one between "
                    f"the multiply and the next step's loads.")
    return (f"race-free: the emulator reports no hazard, and each block passed "
            f"{per_block} barriers, 2 per step of the tile loop.")


def _k_loop_lines(source: str) -> set[int]:
    """The answers n (a barrier "after line n") that put the barrier inside the k loop:
    from the loop's first line up to the line before its closing brace."""
    lines = source.splitlines()
    start = next(i for i, text in enumerate(lines, 1) if "for (int k" in text)
    end = next(i for i, text in enumerate(lines[start:], start + 1) if text.strip() == "}")
    return set(range(start, end))


@exercise("03.5", "global load requests at TILE = 4")
def half_warp_requests(answer, *, N=64, TILE=4):
    from ..sgemm import count_tiled

    answer = require_whole(answer, "requests")
    report, _ = count_tiled(N, TILE, hazards="ignore")
    blocks, steps = (N // TILE) ** 2, N // TILE
    if answer == report.global_load_requests:
        return (f"{answer:,}: {blocks} blocks × {steps} steps × 2 loads, one request each, "
                f"because a block of {TILE * TILE} threads is one (part-empty) warp.")
    if answer == 2 * N ** 3 // (WARP_SIZE * TILE):
        raise Wrong(f"2N³/(32·TILE) assumes full warps of 32 threads; a {TILE} × {TILE} block "
                    f"has {TILE * TILE} threads, and it still takes a whole warp.")
    raise Wrong(f"not {answer:,}. Count per warp: how many warps has a {TILE} × {TILE} block "
                f"(a warp is 32 threads, but a block never shares one), how many blocks and "
                f"steps, and how many loads per step?")


@exercise("03.6", "how often each element of A is loaded")
def loads_per_element(answer, *, N=64, TILE=16):
    from ..sgemm import count_naive, count_tiled

    naive, tiled = as_tuple(answer, 2, "two numbers, (naive, tiled)")
    naive, tiled = require_whole(naive, "naive"), require_whole(tiled, "tiled")
    n_report, _ = count_naive(N)
    t_report, _ = count_tiled(N, TILE, hazards="ignore")
    # Half of the bytes are A's (the kernels read A and B alike), 4 bytes per element.
    got_naive = n_report.global_load_bytes_requested // 2 // (4 * N * N)
    got_tiled = t_report.global_load_bytes_requested // 2 // (4 * N * N)
    if (tiled, naive) == (got_naive, got_tiled) and naive != tiled:
        raise Wrong(f"the two numbers are swapped: give (naive, tiled). The naive kernel loads "
                    f"each element of A {got_naive} times, the tiled one fewer.")
    if naive != got_naive:
        raise Wrong(f"naive: the emulator counted {n_report.global_load_bytes_requested:,} bytes "
                    f"requested at N = {N}, half of them A's, 4 bytes per element. Every "
                    f"thread of a row of C reads the whole row of A.")
    if tiled == TILE:
        raise Wrong("tiled: TILE is how many FMAs each loaded value feeds; how many blocks "
                    "load a given element of A?")
    if tiled != got_tiled:
        raise Wrong(f"tiled: the emulator counted {t_report.global_load_bytes_requested:,} bytes "
                    f"requested at N = {N}, TILE = {TILE}, half of them A's. Which blocks load "
                    f"A's tile at block position (blockIdx.y, t)?")
    return (f"{naive} and {tiled}: N loads of each element for the naive kernel, N / TILE for "
            f"the tiled one (one per block of the block row), TILE times fewer.")
