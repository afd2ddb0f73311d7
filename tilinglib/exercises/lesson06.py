"""Exercises of lesson 06 (what tiling does not fix): intensity, the roofline, double buffering.

Counts come from the emulator (`tilinglib.toolchain.backends.emulator`: FLOPs, global bytes, barriers, hazards),
rates from the H200's datasheet (`tilinglib.roofline.GPUS`) and the course's reference run;
nothing here needs a GPU, so the output is the same everywhere.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np

from .. import recipes
from . import Wrong, exercise
from .common import as_tuple, close, require_number


def _h200():
    from ..roofline import GPUS
    return GPUS["H200 SXM"]


@lru_cache(maxsize=None)
def _saxpy_counts(n: int = 1024):
    """(FLOPs, load bytes, store bytes) of the course's SAXPY over n elements, on the emulator."""
    from .. import kernels
    from ..toolchain.backends.emulator import In, InOut, SourceModule

    x = np.ones(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    f = SourceModule(kernels.load("saxpy")).get_function("saxpy")
    f(np.int32(n), np.float32(2), In(x), InOut(y), block=(256, 1, 1), grid=(n // 256, 1))
    r = f.last_report
    return r.flops, r.global_load_bytes_requested, r.global_store_bytes


def _pair(answer, names):
    answer = as_tuple(answer, len(names), f"a tuple: ({', '.join(names)})")
    return tuple(require_number(v, n) for v, n in zip(answer, names))


# --- 06.1 ------------------------------------------------------------------------------------

@exercise("06.1", "SAXPY's FLOPs and bytes per element")
def _saxpy(answer):
    flops, loads, stores = (v / 1024 for v in _saxpy_counts())
    got_flops, got_bytes = _pair(answer, ("flops_per_element", "bytes_per_element"))
    if got_flops != flops:
        raise Wrong(f"flops_per_element = {got_flops:g}; the emulator counts {flops:g} FLOPs per "
                    f"element: a * x[i] + y[i] is a multiply and an add (the emulator does not "
                    f"contract them into one FMA; an FMA counts as 2 FLOPs anyway).")
    if got_bytes != loads + stores:
        if got_bytes == loads:
            hint = (f"that is the loads only ({loads:g} B: x[i] and y[i]); the kernel also "
                    f"writes y[i], {stores:g} B more.")
        elif got_bytes == 3:
            hint = "that counts floats: each is 4 bytes."
        else:
            hint = (f"the emulator counts {loads:g} B of loads (x[i], y[i]) and {stores:g} B "
                    f"of stores (y[i]).")
        raise Wrong(f"bytes_per_element = {got_bytes:g}: {hint}")
    return (f"{flops:g} FLOP for {loads + stores:g} B: {flops / (loads + stores):.3f} FLOP/B, "
            f"and no byte is used twice.")


# --- 06.2 ------------------------------------------------------------------------------------

_INTENSITIES = (1 / 6, 0.25, 1.0, 4.0, 8.0, 32.0, 128.0)


@exercise("06.2", "Attainable GFLOP/s from the roofline")
def _attainable(answer):
    from ..roofline import attainable

    if not isinstance(answer, dict):
        raise Wrong("the answer is the dict the cell builds: "
                    "{intensity: attainable_gflops(intensity)}.")
    spec = _h200()
    for intensity in _INTENSITIES:
        if intensity not in answer:
            raise Wrong("keep the cell's last line as it is: it tries several intensities.")
        got = require_number(answer[intensity], f"attainable_gflops({intensity:.3g})")
        want = attainable(intensity, spec) / 1e9
        if close(got, want, 1e-6):
            continue
        where = (f"at {intensity:.3g} FLOP/B your formula gives {got:,.6g} GFLOP/s; the roof is "
                 f"{want:,.6g}")
        memory = intensity * spec.dram_bandwidth / 1e9
        if close(got, memory) and got > want:
            raise Wrong(f"{where}. Past the ridge ({spec.ridge_point:.1f} FLOP/B) the compute "
                        f"roof binds: no kernel beats {spec.fp32_flops / 1e9:,.0f} GFLOP/s. "
                        f"Take the smaller of the two roofs.")
        if close(got, max(spec.fp32_flops, intensity * spec.dram_bandwidth) / 1e9):
            raise Wrong(f"{where}. The attainable rate is the smaller of the two roofs, not the "
                        f"larger: a kernel is held back by whichever runs out first.")
        for factor, unit in ((1e3, "1 TFLOP/s is 1,000 GFLOP/s"),
                             (1e-3, "GFLOP/s are 1e9 FLOP/s, not 1e6"),
                             (1e9, "divide the FLOP/s by 1e9 once, not twice"),
                             (1e-9, "the peak is in FLOP/s, the bandwidth in B/s: divide by 1e9")):
            if close(got * factor, want):
                size = f"{factor:,.0f} times too small" if factor > 1 else \
                    f"{1 / factor:,.0f} times too large"
                raise Wrong(f"{where}: {size} ({unit}).")
        raise Wrong(f"{where} = min({spec.fp32_flops / 1e9:,.0f}, {intensity:.3g} x "
                    f"{spec.dram_bandwidth / 1e9:,.0f}) GFLOP/s.")
    return (f"min(peak, intensity x bandwidth): {attainable(1 / 6, spec) / 1e9:,.0f} GFLOP/s for "
            f"SAXPY, {attainable(8, spec) / 1e9:,.0f} for TILE = 32, the peak from "
            f"{spec.ridge_point:.1f} FLOP/B on.")


# --- 06.3 ------------------------------------------------------------------------------------

_CUR_LINE = "        int cur = t & 1;"


@exercise("06.3", "The double-buffered kernel's buffer index")
def _buffer_index(answer):
    from .. import kernels
    from ..toolchain.backends.emulator import In, Out
    from ..sgemm import random_matrices, relative_error

    if not isinstance(answer, str) or not answer.strip():
        raise Wrong(f"cur should be a CUDA C expression as a str, such as \"t / 2\", "
                    f"not {answer!r}.")
    src = kernels.load("sgemm_tiled_db")
    assert _CUR_LINE in src, "sgemm_tiled_db.cu changed: update tilinglib.exercises.lesson06"
    src = src.replace(_CUR_LINE, f"        int cur = {answer.strip().rstrip(';')};")
    n, tile = 64, 16
    A, B = random_matrices(n, seed=6)
    C = np.zeros((n, n), dtype=np.float32)
    f = recipes.get("tiled_db").compile({"TILE": tile}, source=src, emulator=True)
    from ..errors import MemoryAccessError
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # the hazards are read from the report below
            f(np.int32(n), In(A), In(B), Out(C), block=(tile, tile, 1), grid=(n // tile, n // tile))
    except MemoryAccessError as err:
        raise Wrong(f"int cur = {answer.strip()}: {str(err).splitlines()[0]}\n"
                    f"{str(err).splitlines()[1].strip()}: As and Bs hold 2 buffers, so cur must "
                    f"be 0 or 1 at every step.") from None
    hazards = f.last_report.hazards
    if hazards:
        raise Wrong(f"int cur = {answer.strip()}; the emulator reports {len(hazards)} hazard"
                    f"{'s' if len(hazards) != 1 else ''}, the first:\n{hazards[0]}\n"
                    f"Step t must read the buffer that the step before filled: tile 0 is in "
                    f"buffer 0, tile t + 1 goes into buffer cur ^ 1.")
    err = relative_error(C, A, B)
    if err > 1e-4:
        raise Wrong(f"int cur = {answer.strip()}: no race, but C is wrong (relative error "
                    f"{err:.1e}). With N = {n} and TILE = {tile} the loop has {n // tile} steps: "
                    f"step t must compute on tile t, which the step before stored in buffer "
                    f"cur ^ 1 of that step. Write out cur for t = 0, 1, 2, 3.")
    return (f"C correct (relative error {err:.1e}), no hazards, {f.last_report.barriers} block "
            f"barriers: buffers alternate 0, 1, 0, 1, so step t reads what step t - 1 stored.")


# --- 06.4 ------------------------------------------------------------------------------------

@exercise("06.4", "Intensity of z = a x + y and of a dot product")
def _other_intensities(answer):
    z, dot = _pair(answer, ("intensity_z", "intensity_dot"))
    if not close(z, 2 / 12, 0.03):          # 0.17 and 0.167 are fine
        hint = {round(2 / 8, 6): " x[i] and y[i] are read (8 B) and z[i] is written (4 B).",
                round(2 / 16, 6): " z is only written, not read: 12 B per element.",
                round(1 / 12, 6): " a multiply and an add: 2 FLOPs."}.get(round(z, 6), "")
        raise Wrong(f"intensity_z = {z:.4g}; per element z = a x + y does 2 FLOPs and moves "
                    f"12 B: {2 / 12:.4g} FLOP/B.{hint}")
    if not close(dot, 2 / 8, 0.03):
        hint = {round(2 / 12, 6): " Nothing is written per element: the sum stays in a "
                                  "register, and one value is written at the end.",
                round(1 / 8, 6): " Each element adds x_i y_i to the sum: a multiply and an add."
                }.get(round(dot, 6), "")
        raise Wrong(f"intensity_dot = {dot:.4g}; the dot product reads x_i and y_i (8 B) and does "
                    f"a multiply and an add: {2 / 8:.4g} FLOP/B.{hint}")
    return ("0.167 and 0.25 FLOP/B. Neither reuses an element, so tiling cannot help either: "
            "both stay on the memory roof.")


# --- 06.5 ------------------------------------------------------------------------------------

@exercise("06.5", "SAXPY in 16-bit floats")
def _half(answer):
    from ..reference import load

    run = load("h200").run("saxpy", 2**28)
    gbps = run.extra["gbps"]
    n = 2**28
    got = require_number(answer, "time_ms")
    want = 6 * n / (gbps * 1e9) * 1e3
    if close(got, want, 0.02):
        return (f"{want:.3f} ms, half of the measured {run.extra['median_ms']:.3f} ms: 6 bytes "
                f"per element instead of 12, at the same {gbps:,.0f} GB/s.")
    for scale, unit, fix in ((1e-3, "seconds", "multiply by 1e3"),
                             (1e3, "microseconds", "divide by 1e3")):
        for b in (6, 12, 8, 10):
            if close(got, b * n / (gbps * 1e9) * 1e3 * scale, 0.02):
                right = " (and the right bytes)" if b == 6 else ""
                raise Wrong(f"time_ms = {got:.4g} is a time in {unit}{right}: time_ms is in "
                            f"milliseconds, so {fix} (bytes / (GB/s x 1e9) gives seconds).")
    for b, hint in ((12, "that is the 32-bit time: every byte is halved"),
                    (8, "y is written in 16 bits too: 2 + 2 + 2 bytes"),
                    (10, "y is written in 16 bits too: 2 + 2 + 2 bytes")):
        if close(got, b * n / (gbps * 1e9) * 1e3, 0.02):
            raise Wrong(f"time_ms = {got:.4g}: {b} bytes per element; {hint}.")
    raise Wrong(f"time_ms = {got:.4g}; at {gbps:,.0f} GB/s, 2^28 elements of 2 + 2 + 2 bytes take "
                f"6 x 2^28 / {gbps:,.0f}e9 s.")


# --- 06.6 ------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _barriers(recipe: str, n: int, tile: int) -> int:
    """Barriers the emulator counts for `recipe` ("tiled" or "tiled_db") at N = n, TILE."""
    from ..toolchain.backends.emulator import In, Out
    from ..sgemm import random_matrices

    A, B = random_matrices(n, seed=0)
    C = np.zeros((n, n), dtype=np.float32)
    f = recipes.get(recipe).compile({"TILE": tile}, emulator=True)
    f(np.int32(n), In(A), In(B), Out(C), block=(tile, tile, 1), grid=(n // tile, n // tile),
      hazards="ignore")
    return f.last_report.barriers


@exercise("06.6", "Counting the barriers")
def _barrier_count(answer):
    if not isinstance(answer, dict):
        raise Wrong("the answer is the dict the cell builds: {(kernel, N, tile): barriers}.")
    cases = sorted({(n, tile) for _, n, tile in answer})
    complete = all((k, n, t) in answer for n, t in cases for k in ("plain", "db"))
    if (4096, 32) not in cases or not complete:
        raise Wrong("keep the cell's last line as it is: both kernels at each (N, TILE), "
                    "N = 4096 and TILE = 32 among them.")
    for n, tile in cases:
        plain = require_number(answer["plain", n, tile], f"plain_barriers({n}, {tile})")
        db = require_number(answer["db", n, tile], f"db_barriers({n}, {tile})")
        blocks, steps = (n // tile) ** 2, n // tile
        if n <= 64:
            want_plain = _barriers("tiled", n, tile)
            want_db = _barriers("tiled_db", n, tile)
            source = "the emulator counts"
        else:
            want_plain, want_db = blocks * 2 * steps, blocks * (steps + 1)
            source = "it is"
        if plain != want_plain:
            hint = (" That is one block's; every block of the grid waits at its own barriers."
                    if plain == 2 * steps else "")
            raise Wrong(f"N = {n}, TILE = {tile}: plain_barriers gives {plain:,.0f}; {source} "
                        f"{want_plain:,} block barriers: {blocks:,} blocks x {steps} steps x 2 "
                        f"barriers per step.{hint}")
        if db != want_db:
            hint = (" Do not forget the barrier after the prologue, once per block."
                    if db == blocks * steps else "")
            raise Wrong(f"N = {n}, TILE = {tile}: db_barriers gives {db:,.0f}; {source} "
                        f"{want_db:,} block barriers: {blocks:,} blocks x ({steps} steps + 1)."
                        f"{hint}")
    return ("blocks x 2 x steps against blocks x (steps + 1): at N = 4096, TILE = 32, "
            "4,194,304 and 2,113,536, about half.")


# --- 06.7 ------------------------------------------------------------------------------------

@exercise("06.7", "Where the phases go")
def _phases(answer):
    from ..sgemm import count_tiled

    got_bytes, got_fmas, got_s = _pair(answer, ("bytes_per_step", "fmas_per_step", "load_seconds"))
    report, _ = count_tiled(64, 32, hazards="ignore")
    steps = (64 // 32) ** 2 * (64 // 32)                  # blocks x steps
    want_bytes = report.global_load_bytes_requested // steps
    if got_bytes != want_bytes:
        hint = (" That is one tile; a step loads a tile of A and a tile of B."
                if got_bytes == want_bytes / 2 else
                " That counts floats: 4 bytes each." if got_bytes == want_bytes / 4 else "")
        raise Wrong(f"bytes_per_step = {got_bytes:,.0f}; the emulator counts {want_bytes:,} B of "
                    f"global loads per block per step (2 tiles of 32 x 32 floats).{hint}")
    want_fmas = report.flops // 2 // steps
    if got_fmas != want_fmas:
        hint = (" That is one thread's share; the block has 1,024 threads."
                if got_fmas == 32 else "")
        raise Wrong(f"fmas_per_step = {got_fmas:,.0f}; the emulator counts {want_fmas:,} per block "
                    f"per step: 1,024 threads x TILE multiply-adds.{hint}")
    spec = _h200()
    want_s = spec.sms * 2 * want_bytes / spec.dram_bandwidth
    if not close(got_s, want_s, 0.02):
        hint = (" That is one block alone; all 264 resident blocks (132 SMs x 2) share the "
                "bandwidth." if close(got_s, want_bytes / spec.dram_bandwidth, 0.02) else
                " That looks like microseconds: give seconds." if close(got_s / 1e6, want_s, 0.02)
                else " Check the units: 4.8 TB/s is 4.8e12 B/s." if close(got_s * 1e6, want_s, 0.02)
                or close(got_s / 1e3, want_s, 0.02) else "")
        raise Wrong(f"load_seconds = {got_s:.3g}; 132 x 2 blocks x {want_bytes:,} B at 4.8e12 B/s "
                    f"take {want_s:.3g} s.{hint}")
    return (f"{want_bytes:,} B and {want_fmas:,} FMAs per step (4 FMAs per byte loaded); with "
            f"every block loading at once a step's loads take {want_s * 1e6:.2f} µs, time in "
            f"which the plain kernel's block does no multiply-add.")
