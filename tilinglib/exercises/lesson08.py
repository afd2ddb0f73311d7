"""Checks of lesson 08's exercises (to cuBLAS): the float4 read of the transposed A tile, the
shared bytes per FMA of warp tiling (per lane and per warp), and the block tile at which
global traffic stops bounding FP32 SGEMM.

Kernels run on the CPU emulator whatever the notebook's backend; the per-warp figures are
checked against the Nsight Compute counters the course read on the H200
(`tilinglib.reference`, the ladder's run), the peaks against `tilinglib.roofline.GPUS`.
"""

from __future__ import annotations

from functools import lru_cache

from ..toolchain.measure import metrics as ncu_names
from . import Wrong, blanks, exercise
from .common import as_tuple, close, first_wrong, one_line, require_number, require_whole, \
    run_step, substitute

VEC4_A_READ = "float4 v = *(const float4*)&As[k][tRow * TM + i];"
blanks("08.1", "sgemm_vec4", (VEC4_A_READ, "float4 v = ...;   // exercise 08.1: the line you write"))

#: (M, N, K, params) 08.1 runs the vec4 kernel at: TM != TN and two block shapes, edges cut.
VEC4_RUNS = ((40, 72, 24, {"BM": 32, "BN": 64, "BK": 8, "TM": 8, "TN": 4}),
             (70, 40, 20, {"BM": 64, "BN": 32, "BK": 4, "TM": 4, "TN": 8}))


def _run_vec4(source: str, M: int, N: int, K: int, params: dict):
    """`common.run_step` of the vec4 step on lesson 08's inputs (seed 8)."""
    return run_step(source, "vec4", M, N, K, params, seed=8)


def _shape(params: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in params.items())


# --- 08.1 ------------------------------------------------------------------------------------

@exercise("08.1", "the float4 read of the transposed A tile")
def vec4_a_read(answer):
    line = one_line(answer, "a_read")
    if not line.startswith("float4 v ="):
        raise Wrong("keep the form float4 v = ...; : the line reads four floats of the A tile "
                    "at once into v, which the next line spreads into a[i .. i + 3].")
    if "float4" not in line.split("=", 1)[1]:
        raise Wrong("the right-hand side must be one float4 load, *(const float4*)&As[..][..]: "
                    "reading As[..][..] alone gives one float, not four.")
    from .. import kernels

    source = substitute(kernels.load("sgemm_vec4"), VEC4_A_READ, line)
    for M, N, K, params in VEC4_RUNS:
        f, C, expected = _run_vec4(source, M, N, K, params)
        bad = first_wrong(C, expected)
        if bad is not None:
            r, c = bad
            raise Wrong(f"C does not match NumPy at {_shape(params)} (M = {M}, N = {N}, "
                        f"K = {K}): C[{r}][{c}] is {C[r, c]:.4g}, NumPy gives "
                        f"{expected[r, c]:.4g}. The tile is stored transposed, As[k][m] = "
                        f"A[m][k]: the thread's TM rows tRow * TM .. are consecutive in As[k], "
                        f"and i steps through them four at a time.")
        report = f.last_report
        if report.shared_load_bank_conflicts:
            raise Wrong(f"C matches NumPy, but the emulator counts "
                        f"{report.shared_load_bank_conflicts:,} shared-load bank conflicts at "
                        f"{_shape(params)}: the lanes of a warp should read a few adjacent "
                        f"float4 of one row As[k], not a column.")
    return ("C matches NumPy at both tile shapes, with no bank conflict: each lane reads its TM "
            "rows of column k as TM / 4 float4 of the row As[k], and the lanes of a thread row "
            "read the same address (a broadcast).")


# --- 08.2 ------------------------------------------------------------------------------------

#: Warp-tile shapes 08.2 evaluates the student's formula at (all valid; RM != RN somewhere).
WARP_SHAPES = ({"BM": 32, "BN": 32, "BK": 8, "WM": 32, "WN": 16, "WMITER": 1, "WNITER": 1,
                "TM": 4, "TN": 4, "APAD": 4},
               {"BM": 64, "BN": 32, "BK": 8, "WM": 64, "WN": 32, "WMITER": 2, "WNITER": 2,
                "TM": 4, "TN": 4, "APAD": 4},
               {"BM": 32, "BN": 64, "BK": 8, "WM": 32, "WN": 64, "WMITER": 1, "WNITER": 4,
                "TM": 4, "TN": 4, "APAD": 4},
               {"BM": 64, "BN": 64, "BK": 4, "WM": 64, "WN": 32, "WMITER": 2, "WNITER": 1,
                "TM": 8, "TN": 4, "APAD": 4})
_WARP_ARGS = ("WM", "WN", "WMITER", "WNITER", "TM", "TN")


@lru_cache(maxsize=None)
def _warp_counted(items: tuple) -> float:
    """Shared bytes requested per FMA of the warptile kernel at this shape (emulator)."""
    from .. import ladder

    p = dict(items)
    report = ladder.count("warptile", p["BM"], p["BN"], 2 * p["BK"], p)
    return ladder.measured_bytes_per_fma(report, shared_bytes_per_load=16)[1]


def _values(answer, keys, what: str) -> dict:
    """The dict the cell builds, {arguments: value}, checked to have exactly `keys`."""
    if not isinstance(answer, dict):
        raise Wrong(f"the answer is the dict the cell builds, {{arguments: {what}(*arguments)}}; "
                    f"got {type(answer).__name__}.")
    if set(answer) != set(keys):
        raise Wrong(f"keep the cell's last line as it is: it evaluates {what} at "
                    f"{', '.join(map(str, keys))}.")
    return {k: require_number(answer[k], f"{what}{k}") for k in keys}


@exercise("08.2", "shared bytes per FMA of warp tiling, per lane")
def warp_lane_bytes(answer):
    keys = [tuple(p[k] for k in _WARP_ARGS) for p in WARP_SHAPES]
    got_all = _values(answer, keys, "shared_bytes")
    for p, args in zip(WARP_SHAPES, keys):
        got = got_all[args]
        want = _warp_counted(tuple(p.items()))
        if not close(got, want, 1e-9):
            rm, rn = p["WMITER"] * p["TM"], p["WNITER"] * p["TN"]
            if close(got, 4 * (p["TM"] + p["TN"]) / (p["TM"] * p["TN"]), 1e-9) and (rm, rn) != (
                    p["TM"], p["TN"]):
                hint = ("that is the TM x TN piece of one warp step; a lane holds the pieces of "
                        "all WMITER x WNITER steps and reads all their A and B values per k.")
            elif close(got, (rm + rn) / (rm * rn), 1e-9):
                hint = ("that counts floats, not bytes: a float is 4 bytes. Per k a lane reads "
                        f"WMITER x TM = {rm} floats of A and WNITER x TN = {rn} of B for "
                        f"{rm} x {rn} FMAs.")
            elif close(got, 4 * (p["WM"] + p["WN"]) / (p["WM"] * p["WN"]), 1e-9):
                hint = ("that is the warp's whole tile (exercise 08.3's question); here count "
                        "what each lane requests, broadcasts included.")
            else:
                hint = (f"per k a lane reads WMITER x TM = {rm} floats of A and WNITER x TN = "
                        f"{rn} of B (4 bytes each) for {rm} x {rn} FMAs.")
            raise Wrong(f"at {_shape({k: p[k] for k in _WARP_ARGS})} your shared_bytes gives "
                        f"{got:.6g}; the emulator counts {want:.6g} shared bytes requested per "
                        f"FMA: {hint}")
    return ("equal to the emulator's counts at four warp shapes: 4 (RM + RN) / (RM RN) with "
            "RM = WMITER x TM and RN = WNITER x TN, the rows and columns of C a lane holds. "
            "WM and WN do not appear: per lane, warp tiling is 2-D register blocking.")


# --- 08.3 ------------------------------------------------------------------------------------

#: The C area one warp covers, (rows, columns), in the ladder's default shapes: regtile2d's
#: 16 x 8 threads of 8 x 8 (a warp: 2 thread rows of 16); vec4's 16 threads across of 8 x 4
#: (a warp: one thread row of 32); warptile's WM x WN.
WARP_AREAS = {"regtile2d": (16, 128), "vec4": (8, 128), "warptile": (64, 32)}


def _ncu_bank_bytes(name: str) -> float | None:
    """Shared bytes read from the banks per FFMA, from the H200 counters of the ladder's run."""
    from .. import ladder, reference

    try:
        m = reference.load("h200").step_counters(name, 1024, ladder.get(name).resolve()).metrics
        return m[ncu_names.SASS_SHARED_LOAD_BYTES] / m[ncu_names.FFMA_THREAD_INSTRUCTIONS]
    except (KeyError, ZeroDivisionError):
        return None


@exercise("08.3", "shared bytes per FMA of a warp, as Nsight Compute counts them")
def warp_bank_bytes(answer):
    got_all = _values(answer, list(WARP_AREAS.values()), "warp_bytes")
    for name, (wm, wn) in WARP_AREAS.items():
        got = got_all[(wm, wn)]
        want = 4 * (wm + wn) / (wm * wn)
        if not close(got, want, 1e-9):
            ncu = _ncu_bank_bytes(name)
            seen = (f"Nsight Compute read {ncu:.6g} on the H200 for {name}" if ncu is not None
                    else f"the count is {want:.6g} for {name}")
            hint = ("Per k the warp's lanes touch WM distinct floats of A (a column of its "
                    "sub-tile, As[k][..]) and WN of B, 4 bytes each, whatever the number of "
                    "lanes asking for each; the warp does WM x WN FMAs with them.")
            if close(got, 4 * (wm + wn), 1e-9):
                hint = "That is bytes per k for the warp: divide by the WM x WN FMAs it feeds."
            elif close(got, (wm + wn) / (wm * wn), 1e-9):
                hint = ("That counts floats, not bytes: a float is 4 bytes. The WM + WN floats "
                        "the warp reads per k feed its WM x WN FMAs.")
            elif close(got, 4 * (wm + wn) / (wm * wn) / 32, 1e-9):
                hint = ("Do not divide among the 32 lanes: the WM x WN FMAs are already all "
                        "the warp's FMAs (each lane does WM x WN / 32 of them).")
            raise Wrong(f"warp_bytes({wm}, {wn}) gives {got:.6g}; {seen}. {hint}")
    ncu = {n: _ncu_bank_bytes(n) for n in WARP_AREAS}
    shown = ", ".join(f"{n} {v:.4g}" for n, v in ncu.items() if v is not None)
    return ("4 (WM + WN) / (WM WN): the bytes that leave the shared-memory banks, once per warp "
            "whatever the broadcasts. " + (f"Nsight Compute on the H200: {shown} B/FMA, equal."
                                           if shown else ""))


# --- 08.4 ------------------------------------------------------------------------------------

@exercise("08.4", "the block tile at which FP32 SGEMM stops being memory-bound")
def memory_bound_tile(answer):
    from ..roofline import GPUS

    h200 = GPUS["H200 SXM"]
    limit, tile = as_tuple(answer, 2, "(bytes_per_fma_limit, smallest_tile)")
    limit = require_number(limit, "bytes_per_fma_limit")
    tile = require_whole(tile, "smallest_tile")
    want = 2 * h200.dram_bandwidth / h200.fp32_flops
    if not close(limit, want, 1e-6):
        if close(limit, h200.dram_bandwidth / h200.fp32_flops, 1e-6):
            raise Wrong(f"bytes_per_fma_limit = {limit:.4g}: that is bytes per FLOP; an FMA is "
                        f"2 FLOPs, so at the FP32 peak the GPU does {h200.fp32_flops / 2:.3g} "
                        f"FMAs per second.")
        if close(limit, h200.fp32_flops / h200.dram_bandwidth, 1e-6):
            raise Wrong(f"bytes_per_fma_limit = {limit:.4g}: that is FLOPs per byte, the ridge "
                        f"point of lesson 01, upside down. The limit is bytes per FMA: DRAM's "
                        f"{h200.dram_bandwidth:.3g} B/s over the {h200.fp32_flops / 2:.3g} FMAs "
                        f"per second of the FP32 peak.")
        if close(limit, want, 0.05):
            raise Wrong(f"bytes_per_fma_limit = {limit:.4g} is near the limit, rounded: "
                        f"compute it from h200.dram_bandwidth and h200.fp32_flops rather than "
                        f"typing a rounded figure (the check compares to 6 digits).")
        raise Wrong(f"bytes_per_fma_limit = {limit:.4g}: at the FP32 peak the H200 does "
                    f"{h200.fp32_flops / 2:.3g} FMAs per second and DRAM delivers "
                    f"{h200.dram_bandwidth:.3g} B/s; the limit is their ratio, in bytes per FMA.")
    best = next(t for t in (2 ** e for e in range(1, 12)) if 8 / t <= want)
    if tile != best:
        raise Wrong(f"smallest_tile = {tile}: a square block tile T x T requests 4 (T + T) / T^2 "
                    f"= 8 / T bytes per FMA; {tile} gives {8 / tile:.4g}, the limit is "
                    f"{want:.4g}. Find the smallest power of two T with 8 / T at or under it.")
    return (f"{want:.4g} bytes per FMA: from T = {best} (8 / T = {8 / best:.4g}) even a kernel "
            f"whose every request went to DRAM could run at the FP32 peak. The ladder's block "
            f"tiles, from lesson 07's coarse kernel (64 x 64, 0.125) to 128 x 256, are all "
            f"past it: global memory is not what stops them.")


# --- 08.5 ------------------------------------------------------------------------------------

#: The steps 08.5 compares at N = 1024, at their default tile shapes.
WAVE_STEPS = ("vec4", "warptile", "warptile_db")
WAVE_N = 1024


def wave_shapes() -> dict:
    """{step: ((BM, BN), blocks per SM on the H200)} for 08.5: the default block tiles and
    `tile_choice.blocks_per_sm` (the H200's register counts, `tilinglib.occupancy`)."""
    from .. import ladder, tile_choice

    out = {}
    for name in WAVE_STEPS:
        p = ladder.get(name).resolve()
        out[name] = ((p["BM"], p["BN"]), tile_choice.blocks_per_sm(name)[0])
    return out


@exercise("08.5", "waves at N = 1024: which tile shape wins")
def waves_at_1024(answer):
    from .. import reference, tile_choice

    table, winner = as_tuple(answer, 2, "(a dict {step: wave(1024, tile, blocks_per_sm)}, winner)")
    if not isinstance(table, dict) or set(table) != set(WAVE_STEPS):
        raise Wrong(f"the first part is a dict with one entry per step, {', '.join(WAVE_STEPS)}, "
                    f"as the cell builds it from `shapes`.")
    shapes = wave_shapes()
    for name in WAVE_STEPS:
        (BM, BN), per_sm = shapes[name]
        w = tile_choice.waves(WAVE_N, WAVE_N, (BM, BN), per_sm)
        got = as_tuple(table[name], 3, f"wave(...) for {name}: (blocks, per_wave, busy)")
        blocks = require_whole(got[0], f"blocks ({name})")
        per_wave = require_whole(got[1], f"per_wave ({name})")
        busy = require_number(got[2], f"busy ({name})")
        if blocks != w.blocks:
            raise Wrong(f"{name}: blocks = {blocks}; a {WAVE_N} x {WAVE_N} result in {BM} x {BN} "
                        f"tiles is ({WAVE_N} / {BN}) x ({WAVE_N} / {BM}) blocks.")
        if per_wave != w.per_wave:
            hint = (f" That is one block per SM; the H200 holds {per_sm} of {name}'s blocks "
                    f"on each." if per_wave == tile_choice.SMS and per_sm != 1 else "")
            raise Wrong(f"{name}: per_wave = {per_wave}; the GPU runs SMs x blocks per SM "
                        f"blocks at once.{hint}")
        if not close(busy, w.efficiency, 1e-6):
            if close(busy, blocks / per_wave, 1e-6) and blocks > per_wave:
                why = " Over one wave, count the waves: ceil(blocks / per_wave)."
            elif busy > 1:
                why = " A fraction is at most 1."
            else:
                why = ""
            raise Wrong(f"{name}: busy = {busy:.4g}; the slots the grid fills over its waves are "
                        f"blocks / (waves x per_wave) = {w.blocks} / ({w.waves} x "
                        f"{w.per_wave}).{why}")
    fill = {n: tile_choice.waves(WAVE_N, WAVE_N, *shapes[n]).efficiency for n in WAVE_STEPS}
    best = max(WAVE_STEPS, key=lambda n: fill[n])
    if winner not in WAVE_STEPS:
        raise Wrong(f"winner = {winner!r}: name one of {', '.join(WAVE_STEPS)}.")
    if winner != best:
        raise Wrong(f"winner = {winner!r}: its grid keeps {100 * fill[winner]:.0f}% of the slots "
                    f"busy, {best}'s {100 * fill[best]:.0f}%. At N = 4096 all three fill the "
                    f"GPU, and the bigger tiles win; here the fuller grid does.")
    ref = reference.load("h200")
    measured = {n: ref.step(n, WAVE_N).gflops for n in WAVE_STEPS}
    fastest = max(WAVE_STEPS, key=lambda n: measured[n])
    said = ", ".join(f"{n} {measured[n]:,.0f}" for n in WAVE_STEPS)
    verdict = ("the H200 agrees" if fastest == best else
               f"the H200 does not: {fastest} was faster")
    return (f"{best}: {100 * fill[best]:.0f}% of the slots busy at N = {WAVE_N}, against "
            + ", ".join(f"{100 * fill[n]:.0f}% ({n})" for n in WAVE_STEPS if n != best)
            + f"; {verdict} ({said} GFLOP/s, reference data).")


# --- 08.6 ------------------------------------------------------------------------------------

#: The tuned kernels 08.6 predicts, each against cuBLAS (`tile_choice.load_issue_profiles`).
ISSUE_KERNELS = ("base", "fast", "best4096")


def _issue_ratio(q, ref) -> float:
    """The time of profile `q` over `ref`'s if each scheduler issued `issue_busy_pct` of its
    cycles at the same clock: instructions / issue rate, over the same for `ref`."""
    return (q.instructions / q.issue_busy_pct) / (ref.instructions / ref.issue_busy_pct)


@exercise("08.6", "time from instructions and issue rate, against cuBLAS")
def issue_time_ratio(answer):
    from .. import tile_choice

    profiles = tile_choice.load_issue_profiles()
    if not profiles:
        raise Wrong("the course's data has no Nsight Compute profile (tilinglib/data/"
                    f"{tile_choice.NCU_FILE}); this exercise needs it.")
    if not isinstance(answer, dict) or set(answer) != set(ISSUE_KERNELS):
        raise Wrong(f"answer with a dict of one ratio per kernel, {', '.join(ISSUE_KERNELS)}, as "
                    f"the cell's last line builds it.")
    ref = profiles["cuBLAS"]
    for name in ISSUE_KERNELS:
        q = profiles[name]
        got = require_number(answer[name], f"the ratio for {name}")
        want = _issue_ratio(q, ref)
        if close(got, want, 1e-6):
            continue
        if close(got, 1 / want, 1e-6):
            why = "that is cuBLAS's time over the kernel's: put the kernel's on top."
        elif close(got, q.instructions / ref.instructions, 1e-6):
            why = ("instructions alone: a scheduler that issues in fewer of its cycles takes "
                   "longer for the same instructions; divide each by its issue busy fraction.")
        elif close(got, ref.issue_busy_pct / q.issue_busy_pct, 1e-6):
            why = "issue rate alone: each kernel's time also grows with its instruction count."
        elif close(got, (q.instructions * q.issue_busy_pct) / (ref.instructions * ref.issue_busy_pct), 1e-6):
            why = ("the issue busy fraction multiplies the rate, not the time: time = "
                   "instructions / (instructions issued per cycle).")
        elif close(got, q.duration_ms / ref.duration_ms, 1e-3):
            why = ("that is the measured ratio of the durations; the exercise predicts it from "
                   "instructions and issue busy alone, to see how much of it they explain.")
        else:
            why = ("time = instructions / (issue busy x the schedulers' cycles per second); the "
                   "clock and the schedulers are the same for both, so they cancel.")
        raise Wrong(f"{name}: {got:.4g}, where the instructions and issue rates give "
                    f"{want:.4g}: {why}")
    worst = max(abs(_issue_ratio(profiles[n], ref) / (profiles[n].duration_ms / ref.duration_ms) - 1)
                for n in ISSUE_KERNELS)
    said = "; ".join(f"{n} {_issue_ratio(profiles[n], ref):.3f} predicted, "
                     f"{profiles[n].duration_ms / ref.duration_ms:.3f} measured"
                     for n in ISSUE_KERNELS)
    return (f"{said} (durations under Nsight Compute). Instructions and issue rate explain the "
            f"times to within {100 * worst:.1f}%: what is left between these kernels and cuBLAS "
            f"is how many instructions they issue and how often their schedulers can.")
