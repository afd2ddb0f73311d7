"""Checks of lesson 01's exercises (the reuse argument): FLOPs, bytes and intensity as
formulas. A formula is a Python function; the checks compare it with what the CPU emulator
counts when it runs the course's kernels (`tl.sgemm.count_naive`, `count_tiled`) and with the
hand derivation at sizes too large to run.
"""

from __future__ import annotations

import math
from functools import lru_cache

from . import Wrong, exercise
from .common import as_tuple, require_number, require_whole


def _sentence(hint: str) -> str:
    """`hint` with its first letter capitalised ("" stays "")."""
    return hint[:1].upper() + hint[1:]

_RUN_N = 32                      # run on the emulator at this N (the counts are exact)
_LARGE_N = (1000, 4096)          # and check the derivation at sizes too big to run


@lru_cache(maxsize=None)
def _naive_per_output(N: int) -> tuple[float, float]:
    from ..sgemm import count_naive

    report, _ = count_naive(N, block=(16, 16, 1))
    return report.flops / N ** 2, report.global_load_bytes_requested / N ** 2


@lru_cache(maxsize=None)
def _tiled_per_output(N: int, tile: int) -> tuple[float, float]:
    from ..sgemm import count_tiled

    report, _ = count_tiled(N, tile, hazards="ignore")
    return report.flops / N ** 2, report.global_load_bytes_requested / N ** 2


def _function(answer, name: str, args: str):
    if not callable(answer):
        raise Wrong(f"{name} must be a function of {args} (lambda {args}: ...), not "
                    f"{answer!r}: the formula has to hold for every {args}.")
    return answer


def _same(a, b) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    except (TypeError, ValueError):
        raise Wrong(f"your formula gave {a!r}, not a number.") from None


@exercise("01.1", "FLOPs and bytes requested per output element of naive SGEMM")
def naive_counts(answer):
    answer = as_tuple(answer, 2, "two functions, (flops_per_output, bytes_per_output)")
    flops, nbytes = (_function(a, n, "N") for a, n in
                     zip(answer, ("flops_per_output", "bytes_per_output")))
    N = _RUN_N
    counted_flops, counted_bytes = _naive_per_output(N)
    yours = flops(N)
    if not _same(yours, counted_flops):
        hint = {N: "that counts the multiplies only; each of the N terms is a multiply and an "
                   "add (one FMA, 2 FLOPs).",
                N * N: "that is N², the number of outputs, not the work of one."}.get(yours, "")
        raise Wrong(f"FLOPs: for N = {N} your formula gives {yours:g}; the emulator counted "
                    f"{counted_flops:g} per output element (its FLOP count / N²). {_sentence(hint)}")
    yours = nbytes(N)
    if not _same(yours, counted_bytes):
        hint = {2 * N: "2N is the number of floats; each float is 4 bytes.",
                4 * N: "that is the row of A only; the thread also reads a column of B.",
                8 * N + 4: "that adds the 4-byte store of C; count the loads only, as "
                           "section 3 does.",
                N: "a row of A and a column of B are 2N floats, 4 bytes each."}.get(yours, "")
        raise Wrong(f"bytes: for N = {N} your formula gives {yours:g}; the emulator counted "
                    f"{counted_bytes:g} bytes requested per output element (global-load "
                    f"bytes / N²). {_sentence(hint)}")
    for big in _LARGE_N:
        if not (_same(flops(big), 2 * big) and _same(nbytes(big), 8 * big)):
            raise Wrong(f"right at N = {N}, but at N = {big} your formulas give "
                        f"{flops(big):g} FLOPs and {nbytes(big):g} bytes: write them in N.")
    return (f"2N FLOPs and 8N bytes: at N = {N} the emulator counted {counted_flops:g} FLOPs "
            f"and {counted_bytes:g} bytes per output, 8 bytes per FMA; 0.25 FLOP/B for any N.")


@exercise("01.2", "bytes per output and intensity of the tiled kernel")
def tiled_counts(answer):
    answer = as_tuple(answer, 2, "two functions, (bytes_per_output, intensity)")
    nbytes = _function(answer[0], "bytes_per_output", "N, TILE")
    intensity = _function(answer[1], "intensity", "TILE")
    N = _RUN_N
    for tile in (2, 4, 8):
        _, counted = _tiled_per_output(N, tile)
        yours = nbytes(N, tile)
        if not _same(yours, counted):
            hint = {8 * N: "that is the naive kernel's count: each float fetched now feeds "
                           "TILE FMAs.",
                    8 * N / tile ** 2: "that divides by TILE twice: a thread loads 2 floats "
                                       "per step, and there are N / TILE steps.",
                    8 * tile ** 2: "that is what a whole block loads in one step, not one "
                                   "output over all steps."}.get(yours, "")
            raise Wrong(f"bytes: at N = {N}, TILE = {tile} your formula gives {yours:g}; the "
                        f"emulator counted {counted:g} bytes requested per output element. "
                        f"{_sentence(hint)}")
    for tile in (1, 2, 4, 8, 16, 32):
        yours = intensity(tile)
        if not _same(yours, tile / 4):
            hint = {tile / 8: "an FMA is 2 FLOPs: 2·TILE³ FLOPs for 8·TILE² bytes per step.",
                    4 / tile: "upside down: intensity is FLOPs per byte.",
                    4 * tile: "bytes per float are 4, so divide by it.",
                    0.25: "0.25 is the naive kernel's; each float now feeds TILE FMAs."
                    }.get(yours, "")
            raise Wrong(f"intensity: at TILE = {tile} your formula gives {yours:g} FLOP/B; 2N "
                        f"FLOPs over {8 * N // tile:,} bytes per output (N = {N}) is "
                        f"{tile / 4:g}. {_sentence(hint)}")
    for big in _LARGE_N:
        if not _same(nbytes(big, 32), 8 * big / 32):
            raise Wrong(f"right at N = {N}, but at N = {big}, TILE = 32 your formula gives "
                        f"{nbytes(big, 32):g} bytes: write it in N and TILE.")
    _, b8 = _tiled_per_output(N, 8)
    return (f"8N / TILE bytes and TILE / 4 FLOP/B: at N = {N}, TILE = 8 the emulator counted "
            f"{b8:g} bytes per output against {8 * N} for the naive kernel, 1 byte per FMA.")


@exercise("01.3", "the naive and tiled intensity in double precision")
def double_precision(answer):
    naive, tile = as_tuple(answer, 2, "two numbers, (naive_intensity_fp64, "
                                      "tile_for_8_flop_per_byte)")
    naive = require_number(naive, "naive_intensity_fp64")
    tile = require_whole(tile, "tile_for_8_flop_per_byte")
    if not _same(naive, 2 / 16):
        hint = {0.25: "that is FP32's; an FP64 element is 8 bytes, so 2N elements are 16N "
                      "bytes.",
                0.5: "the bytes double, so the intensity halves."}.get(naive, "")
        raise Wrong(f"naive: {naive:g} FLOP/B is not it: 2N FLOPs per output against 2N "
                    f"elements of 8 bytes. {_sentence(hint)}")
    if not _same(tile, 64):
        raise Wrong(f"TILE = {tile:g} gives {tile * 0.125:g} FLOP/B in FP64 (TILE × 0.125); "
                    f"FP32 at TILE = 32 has 8 FLOP/B.")
    return ("0.125 FLOP/B, and TILE = 64 for 8 FLOP/B: 4,096 threads per block with one thread "
            "per element, more than the 1,024 a block may hold.")


@exercise("01.4", "the smallest N whose ideal intensity N/6 is above the H200's ridge")
def smallest_n(answer):
    from ..roofline import GPUS

    ridge = GPUS["H200 SXM"].ridge_point
    answer = require_whole(answer, "N")
    if answer / 6 <= ridge:
        hint = (" That is the ridge itself; the ideal intensity is N / 6 FLOP/B."
                if answer == round(ridge) else "")
        raise Wrong(f"N = {answer}: N / 6 = {answer / 6:.2f} FLOP/B, not above the ridge "
                    f"{ridge:.2f}.{_sentence(hint)}")
    if (answer - 1) / 6 > ridge:
        raise Wrong(f"N = {answer - 1} is above the ridge already ({(answer - 1) / 6:.2f} "
                    f"FLOP/B): find the smallest.")
    return (f"N = {answer}: {answer / 6:.2f} FLOP/B > {ridge:.2f}. Below that even perfect "
            f"reuse leaves SGEMM memory-bound on the H200; small matrices cannot fill it.")
