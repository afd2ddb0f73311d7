"""Checks of lesson 07's exercises (register tiling): the 1-D blocked multiply, the 2-D
register loads, the bytes-per-FMA formulas, TM x TN under a register budget, occupancy.

Kernels run on the CPU emulator whatever the notebook's backend; the counts come from
`tilinglib.ladder` (which the tests hold equal to the emulator's counters) and
`tilinglib.occupancy`.
"""

from __future__ import annotations

from functools import lru_cache

from . import Wrong, blanks, exercise
from .common import (as_tuple, close, first_wrong, one_line, require_number, require_whole,
                     run_step, substitute)

COARSE_FMA = "acc[m] += As[row0 + m][k] * b;"
REG_A = "a[m] = As[row0 + m][k];"
REG_B = "b[n] = Bs[k][col0 + n];"
blanks("07.1", "sgemm_coarse", (COARSE_FMA, "acc[m] += ?;"))
blanks("07.2", "sgemm_regtile2d", (REG_A, "a[m] = ?;"), (REG_B, "b[n] = ?;"))

#: (M, N, K, params) the kernel checks run at: two tile shapes, so that a number written
#: where TM, TN or BK belongs is caught, and sizes that are not tile multiples.
COARSE_RUNS = ((40, 64, 24, {"BM": 32, "BN": 32, "BK": 8, "TM": 4}),
               (48, 32, 20, {"BM": 16, "BN": 32, "BK": 4, "TM": 8}))
REGTILE_RUNS = ((40, 48, 24, {"BM": 32, "BN": 32, "BK": 8, "TM": 8, "TN": 2}),
                (33, 40, 20, {"BM": 16, "BN": 64, "BK": 4, "TM": 2, "TN": 4}))


def _run_step(source: str, step_name: str, M: int, N: int, K: int, params: dict):
    """`common.run_step` on lesson 07's inputs (seed 7)."""
    return run_step(source, step_name, M, N, K, params, seed=7)


def _shape(params: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in params.items())


def _check_runs(source: str, step_name: str, runs, hint: str):
    """Run at each of `runs`; Wrong naming the first wrong element and `hint`."""
    out = []
    for M, N, K, params in runs:
        f, C, expected = _run_step(source, step_name, M, N, K, params)
        bad = first_wrong(C, expected)
        if bad is not None:
            r, c = bad
            raise Wrong(f"C does not match NumPy at {_shape(params)} (M = {M}, N = {N}, "
                        f"K = {K}): C[{r}][{c}] is {C[r, c]:.4g}, NumPy gives "
                        f"{expected[r, c]:.4g}. {hint}")
        out.append((f, params))
    return out


def _bytes_per_fma_at_tile_multiple(source: str, step_name: str, params: dict):
    """(global, shared) bytes per FMA of `source` at a tile-multiple shape, from the emulator."""
    from .. import ladder

    M, N, K = 2 * params["BM"], params["BN"], 2 * params["BK"]
    f, C, expected = _run_step(source, step_name, M, N, K, params)
    return ladder.measured_bytes_per_fma(f.last_report)


# --- 07.1 ------------------------------------------------------------------------------------

@exercise("07.1", "the multiply of the 1-D register-blocked (coarsened) kernel")
def coarse_multiply(answer):
    from .. import kernels, ladder

    line = one_line(answer, "multiply")
    if not line.startswith("acc[m] +="):
        raise Wrong("keep the form acc[m] += ...; : the line adds one product to the thread's "
                    "m-th running sum, for its output row row0 + m.")
    source = substitute(kernels.load("sgemm_coarse"), COARSE_FMA, line)
    _check_runs(source, "coarse", COARSE_RUNS,
                "Row row0 + m of the A tile, at column k, times the B value of column col "
                "at row k.")
    params = COARSE_RUNS[0][3]
    _, shared = _bytes_per_fma_at_tile_multiple(source, "coarse", params)
    want = ladder.get("coarse").shared_bytes_per_fma(params)
    if shared > want + 1e-9:
        raise Wrong(f"C matches NumPy, but the emulator counts {shared:g} shared bytes per FMA "
                    f"at TM = {params['TM']}, not (TM + 1) / TM x 4 = {want:g}: your line reads "
                    f"shared memory that is already in a register. The loop put Bs[k][col] in "
                    f"b for all TM rows; use it.")
    return (f"C matches NumPy. The emulator counts {shared:g} shared bytes per FMA at TM = "
            f"{params['TM']} ((TM + 1) loads of 4 bytes for TM FMAs), down from the tiled "
            f"kernel's 8.")


# --- 07.2 ------------------------------------------------------------------------------------

@exercise("07.2", "the register loads of the 2-D register-blocked kernel")
def regtile_loads(answer):
    from .. import kernels, ladder

    a_load, b_load = as_tuple(answer, 2, "the two lines, (a_load, b_load)")
    a_load, b_load = one_line(a_load, "a_load"), one_line(b_load, "b_load")
    if not a_load.startswith("a[m] =") or not b_load.startswith("b[n] ="):
        raise Wrong("keep the left-hand sides: a[m] = ...; fills the column of A values and "
                    "b[n] = ...; the row of B values; your part is the shared element on the "
                    "right.")
    source = substitute(substitute(kernels.load("sgemm_regtile2d"), REG_A, a_load), REG_B,
                        b_load)
    _check_runs(source, "regtile2d", REGTILE_RUNS,
                "a[m] is the A tile's row row0 + m at column k; b[n] the B tile's row k at "
                "column col0 + n (k runs over the BK columns of the tile, not over K).")
    params = REGTILE_RUNS[0][3]
    _, shared = _bytes_per_fma_at_tile_multiple(source, "regtile2d", params)
    want = ladder.get("regtile2d").shared_bytes_per_fma(params)
    return (f"C matches NumPy. At TM = {params['TM']}, TN = {params['TN']} the emulator counts "
            f"{shared:g} shared bytes per FMA: TM + TN = {params['TM'] + params['TN']} loads "
            f"for TM x TN = {params['TM'] * params['TN']} FMAs, 4 (TM + TN) / (TM TN) = "
            f"{want:g}.")


# --- 07.3 ------------------------------------------------------------------------------------

#: The tile shapes 07.3 evaluates the student's formulas at (all valid; BM and BN, TM and TN
#: differ somewhere, so a formula that swaps them is caught). The lesson's cell lists the same
#: shapes as (BM, BN, BK, TM, TN) tuples.
FORMULA_SHAPES = ({"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4},
                  {"BM": 64, "BN": 32, "BK": 4, "TM": 8, "TN": 2},
                  {"BM": 32, "BN": 64, "BK": 8, "TM": 2, "TN": 8},
                  {"BM": 64, "BN": 64, "BK": 16, "TM": 8, "TN": 4})


@lru_cache(maxsize=None)
def _counted(shape: tuple) -> tuple[float, float]:
    """The emulator's (global, shared) bytes per FMA for the 2-D kernel at `shape`."""
    from .. import ladder

    params = dict(shape)
    report = ladder.count("regtile2d", 2 * params["BM"], params["BN"], 2 * params["BK"], params)
    return ladder.measured_bytes_per_fma(report)


#: Formulas students write instead, each with what to say when the answer follows it at
#: every shape: (kind, formula of the parameters, explanation).
_MISTAKES = (
    ("global", lambda p: (p["BM"] + p["BN"]) / (p["BM"] * p["BN"]),
     "that counts floats, not bytes: a float is 4 bytes."),
    ("global", lambda p: 4 * (p["BM"] + p["BN"]) / (p["BM"] * p["BN"] * p["BK"]),
     "BK cancels: one step of the k loop copies BK (BM + BN) floats and does BM BN BK FMAs; "
     "your formula divides by BK once more."),
    ("global", lambda p: 8 / p["BM"],
     "that is the tiled kernel's 8 / TILE, right only when BM = BN: each A value serves BN "
     "FMAs, each B value BM."),
    ("global", lambda p: 8 / p["BN"],
     "that is the tiled kernel's 8 / TILE, right only when BM = BN: each A value serves BN "
     "FMAs, each B value BM."),
    ("shared", lambda p: (p["TM"] + p["TN"]) / (p["TM"] * p["TN"]),
     "that counts floats, not bytes: a float is 4 bytes."),
    ("shared", lambda p: 8 / (p["TM"] * p["TN"]),
     "one k step does not load 2 values per thread: it loads TM values of A and TN of B into "
     "registers, for TM x TN FMAs."),
    ("shared", lambda p: 8.0,
     "that is the tiled kernel's two loads per FMA; here each register is reused."),
    ("global", lambda p: 4 * (p["BM"] + p["BN"]) / p["BM"] * p["BN"],
     "check the parentheses: 4 * (BM + BN) / BM * BN divides by BM and then multiplies by "
     "BN; the denominator is (BM * BN)."),
    ("shared", lambda p: 4 * (p["TM"] + p["TN"]) / p["TM"] * p["TN"],
     "check the parentheses: 4 * (TM + TN) / TM * TN divides by TM and then multiplies by "
     "TN; the denominator is (TM * TN)."),
)


def _formula_hint(kind: str, got: dict) -> str:
    for k, formula, why in _MISTAKES:
        if k == kind and all(close(got[i], formula(p), 1e-9)
                             for i, p in enumerate(FORMULA_SHAPES)):
            return why[0].upper() + why[1:]
    if kind == "global":
        return ("Count one step of the k loop for one block: the floats it copies from A and "
                "from B, and the FMAs its BM x BN outputs do.")
    return ("Count one k step for one thread: the shared loads into a[] and b[], and the "
            "FMAs of the outer product.")


@exercise("07.3", "bytes per FMA of 2-D register blocking, as formulas")
def bytes_formulas(answer):
    if not isinstance(answer, dict):
        raise Wrong("the answer is the dict the cell builds: {(kind, shape): bytes per FMA}, "
                    "kind 'global' or 'shared'; keep the cell's last line as it is.")
    counted = [_counted(tuple(p.items())) for p in FORMULA_SHAPES]
    for index, kind in enumerate(("global", "shared")):
        got = {}
        for i, p in enumerate(FORMULA_SHAPES):
            shape = (p["BM"], p["BN"], p["BK"], p["TM"], p["TN"])
            if (kind, shape) not in answer:
                raise Wrong(f"the dict has no entry for ({kind!r}, {shape}); keep the cell's "
                            f"last line as it is.")
            got[i] = require_number(answer[kind, shape], f"{kind}_bytes{shape}")
        for i, p in enumerate(FORMULA_SHAPES):
            want = counted[i][index]
            if not close(got[i], want, 1e-9):
                raise Wrong(f"at {_shape(p)} your {kind}_bytes gives {got[i]:.6g}; the emulator "
                            f"counts {want:.6g} {kind} bytes requested per FMA. "
                            f"{_formula_hint(kind, got)}")
    return ("both equal the emulator's counts at four tile shapes: global 4 (BM + BN) / (BM BN) "
            "bytes per FMA (BK cancels), shared 4 (TM + TN) / (TM TN).")


# --- 07.4 ------------------------------------------------------------------------------------

BUDGET = {"BM": 128, "BN": 128, "BK": 8, "registers": 128}
POWERS = (1, 2, 4, 8, 16, 32)


@exercise("07.4", "TM x TN under a register budget")
def register_budget(answer):
    from .. import ladder

    TM, TN = as_tuple(answer, 2, "two whole numbers, (TM, TN)")
    TM, TN = require_whole(TM, "TM"), require_whole(TN, "TN")
    step = ladder.get("regtile2d")
    base = {k: BUDGET[k] for k in ("BM", "BN", "BK")}
    p = {**base, "TM": TM, "TN": TN}
    why = step.valid(p)
    if why:
        raise Wrong(f"TM = {TM}, TN = {TN} cannot launch: {why}.")
    regs = step.registers_estimate(p)
    if regs > BUDGET["registers"]:
        raise Wrong(f"TM = {TM}, TN = {TN} needs about TM TN + TM + TN + 30 = {regs} "
                    f"registers per thread, over the budget of {BUDGET['registers']}: the "
                    f"{TM * TN} accumulators alone take {TM * TN}.")
    fits = {(m, n): step.shared_bytes_per_fma({**base, "TM": m, "TN": n})
            for m in POWERS for n in POWERS
            if step.valid({**base, "TM": m, "TN": n}) is None
            and step.registers_estimate({**base, "TM": m, "TN": n}) <= BUDGET["registers"]}
    best = min(fits.values())
    mine = step.shared_bytes_per_fma(p)
    if mine > best:
        best_outputs = max(m * n for m, n in fits if fits[m, n] == best)
        if TM * TN >= best_outputs and TM != TN:
            hint = "for the same TM x TN outputs, TM + TN is smallest when TM = TN."
        else:
            hint = "more outputs per thread (a larger TM x TN) still fit the budget."
        raise Wrong(f"TM = {TM}, TN = {TN} fits (about {regs} registers), but asks "
                    f"4 (TM + TN) / (TM TN) = {mine:g} shared bytes per FMA; another shape "
                    f"within {BUDGET['registers']} registers asks {best:g}: {hint}")
    return (f"TM = {TM}, TN = {TN}: about {regs} registers per thread, "
            f"{step.threads(p)} threads per block, {mine:g} shared bytes per FMA, the fewest "
            f"of any power-of-two shape within {BUDGET['registers']} registers.")


# --- 07.5 ------------------------------------------------------------------------------------

#: The default 2-D shape, with the registers ptxas gives it for sm_90 (CUDA 13.0, the
#: course's table tilinglib/data/ptxas_sm90.json; the lesson's cell says so).
OCCUPANCY_CASE = {"params": {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8}, "registers": 113}


@exercise("07.5", "occupancy of the 2-D register-blocked kernel")
def regtile_occupancy(answer):
    from .. import ladder
    from ..occupancy import occupancy

    blocks, percent = as_tuple(answer, 2, "two numbers, (blocks_per_sm, occupancy_percent)")
    blocks = require_whole(blocks, "blocks_per_sm")
    percent = require_number(percent, "occupancy_percent")
    step = ladder.get("regtile2d")
    p = OCCUPANCY_CASE["params"]
    regs = OCCUPANCY_CASE["registers"]
    threads = step.threads(p)
    occ = occupancy(threads, registers_per_thread=regs, static_shared=step.shared_bytes(p))
    free = occupancy(threads, static_shared=step.shared_bytes(p))
    if blocks != occ.active_blocks:
        if blocks == free.active_blocks:
            raise Wrong(f"{blocks} blocks is what warps allow ({free.blocks_by_warps} blocks of "
                        f"{occ.warps_per_block} warps) and shared memory allows more, but "
                        f"registers bind first: {regs} registers x 32 lanes, rounded up to "
                        f"the allocation unit of 256, x {occ.warps_per_block} warps = "
                        f"{occ.registers_per_block:,} per block, of the SM's 65,536.")
        raise Wrong(f"blocks_per_sm = {blocks}; tl.occupancy gives {occ.active_blocks} "
                    f"(warps allow {occ.blocks_by_warps}, registers {occ.blocks_by_registers}, "
                    f"shared memory {occ.blocks_by_shared}): the smallest of the caps.")
    if not close(percent, occ.percent, 1e-3):
        if close(percent, occ.occupancy, 1e-3):
            raise Wrong(f"occupancy_percent = {percent:g} is a fraction; give a percentage "
                        f"(x 100).")
        raise Wrong(f"occupancy_percent = {percent:g}; {blocks} blocks x "
                    f"{occ.warps_per_block} warps = {occ.active_warps} of the SM's "
                    f"{occ.max_warps} warps.")
    return (f"{occ}. Fewer warps than the tiled kernel's 100%, yet each thread does "
            f"TM x TN = {p['TM'] * p['TN']} independent FMAs for every TM + TN = "
            f"{p['TM'] + p['TN']} shared loads: register tiling trades occupancy for work per "
            f"thread.")
