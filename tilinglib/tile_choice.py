"""A tile shape per problem size: wave quantisation, and the choice the course makes per N.

Introduced in lesson 08, section 8. A launch's blocks run in **waves**: an SM holds
`blocks_per_sm` blocks at once (`tilinglib.occupancy`), so the GPU runs
``SMs x blocks_per_sm`` blocks per wave, and a grid of B blocks takes ceil(B / per wave)
waves, the last one (the **tail**) partly empty. When every block takes the same time, the
fraction of the SM slots that work over those waves is ``B / (waves x per wave)``:
`Waves.efficiency`::

    from tilinglib import tile_choice
    w = tile_choice.waves(1024, 1024, (128, 256), blocks_per_sm=1)
    w.blocks, w.per_wave, w.waves, w.efficiency     # 32, 132, 1, 0.2424...

The choice per size (`pick_per_size`) comes from the H200's measurements when the course has
them (``ladder_sizes_h200.json`` in ``tilinglib/data``, written by ``bench/ladder_sizes.py``:
the fastest correct configuration without register spills at that size), and otherwise from
the wave model: each candidate's rate at N = 4096 in the reference data, scaled by its wave
efficiency at the size over its efficiency at 4096 (`model_gflops`). The model's limits, said with its
figures: it takes blocks as equally long, ignores that one block alone on an SM runs faster
than one of several sharing it, and charges split-K nothing for its atomic additions.

The data file's format (``"format": "tilinglib-ladder-sizes"``, version 1): ``device``
(``name``, ``sms``, ``compute_capability``), ``software``, ``date``, ``command``,
``settings``; ``sizes``: [[M, N, K], ...]; ``cublas``: one entry per timing of cuBLAS
(``M``, ``N``, ``K``, ``gflops``, ``median_ms``, ``when``); ``rows``: one per configuration
and size, with ``step``, ``kernel``, ``params``, ``M``, ``N``, ``K``, ``grid``, ``block``,
``registers``, ``spill_stores``, ``spill_loads``, ``local_bytes``, ``static_shared_bytes``,
``gflops``, ``median_ms``, ``q1_ms``, ``q3_ms``, ``max_relative_error`` (at the size),
``odd_shape_relative_error`` (at 1000 x 1003 x 999), ``correct`` (both under 1e-4), and
``cublas_gflops`` (the median of that size's cuBLAS timings in the same run, taken between the
kernels').

A file may hold several runs (``bench/ladder_sizes.py --merge-into``, `merge_sizes`): the
top-level ``date``, ``command``, ``settings`` and ``software`` are the first run's (run 0);
``runs``, where present, lists each later one (``run``: 1, 2, ...; its ``date``, ``command``,
``settings``, ``software``, ``device``), and each row and cuBLAS entry of a later run carries
its ``run`` (absent: run 0). A row is compared with cuBLAS of its own run only
(`SizesData.cublas` with ``run``, `SizesData.percent_of_cublas`); ``sizes`` is every run's.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Mapping

from . import ladder
from .errors import ArgumentError
from .gpu import ceil_div

__all__ = ["Waves", "waves", "registers", "blocks_per_sm", "shape_label", "SIZES", "SMS",
           "sweep_configurations", "second_sweep_configurations", "third_sweep_configurations",
           "fourth_sweep_configurations", "IssueProfile", "load_issue_profiles", "NCU_FILE",
           "SMALL_SIZES",
           "LARGE_SIZES",
           "SizesData", "load_sizes", "merge_sizes", "run_of", "model_gflops", "Choice",
           "pick_per_size",
           "candidates", "compare", "usable", "DATA_FILE", "MAX_RELATIVE_ERROR"]

SMS = 132                      # streaming multiprocessors of an H200 (reference data: device.sms)
#: The problem sizes (M, N, K) the bench measures: four squares and one that is neither square
#: nor a power of two (its grid of 128 x 256 tiles, 10 x 12 = 120 blocks, is under one wave).
SIZES = ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
         (1500, 2500, 3000))
DATA_FILE = "ladder_sizes_h200.json"
MAX_RELATIVE_ERROR = 1e-4      # a row is correct when both its errors are under this
NCU_FILE = "tuned_ncu_h200.json"   # Nsight Compute's issue figures (bench/tuned_variants.py --ncu)


@dataclass(frozen=True)
class Waves:
    """How a grid of `blocks` runs on `sms` SMs holding `blocks_per_sm` blocks each.

    `per_wave` = sms x blocks_per_sm; `waves` = ceil(blocks / per_wave); `tail_blocks`: the
    blocks of the last wave (per_wave when it is full); `efficiency`: blocks / (waves x
    per_wave), the busy fraction of the SM slots over the launch (1.0: no tail);
    `busy_sms_last_wave`: SMs with at least one block in the last wave (blocks spread one
    per SM first)."""

    blocks: int
    blocks_per_sm: int
    sms: int
    per_wave: int
    waves: int
    tail_blocks: int
    efficiency: float
    busy_sms_last_wave: int

    def __str__(self) -> str:
        return (f"{self.blocks:,} blocks, {self.per_wave:,} per wave ({self.sms} SMs x "
                f"{self.blocks_per_sm}): {self.waves} wave{'s' * (self.waves != 1)}, the last "
                f"with {self.tail_blocks:,}; {100 * self.efficiency:.0f}% of the slots busy")


def waves(M: int, N: int, tile, blocks_per_sm: int, sms: int = SMS, splitk: int = 1,
          tailwave: int = 0) -> Waves:
    """The waves of a launch that cuts an M x N result into `tile` = (BM, BN) blocks, times
    `splitk` K chunks, on `sms` SMs each holding `blocks_per_sm` blocks.

    Blocks: ceil(M / BM) x ceil(N / BN) x splitk. With `tailwave` = w (the tuned kernel's
    TAILWAVE) only the tiles past the last whole multiple W of w are split: W + (T - W) x
    splitk blocks for T tiles, of unequal work; `waves` counts W / per_wave waves of whole
    tiles and then the waves of chunks, and `efficiency` is weighted by work: T tiles over
    per_wave x (W / per_wave + waves of chunks / splitk) tile-times (for a uniform split it is
    blocks / (waves x per_wave), as without `tailwave`). Raises ArgumentError for sizes,
    tiles or counts below 1 (`tailwave` below 0)."""
    BM, BN = (int(v) for v in tile)
    for what, v in (("M", M), ("N", N), ("BM", BM), ("BN", BN), ("blocks_per_sm", blocks_per_sm),
                    ("sms", sms), ("splitk", splitk), ("tailwave", tailwave + 1)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ArgumentError(f"{what}={v!r}: must be a whole number >= 1"
                                if what != "tailwave" else
                                f"tailwave={tailwave!r}: must be a whole number >= 0")
    tiles = ceil_div(int(M), BM) * ceil_div(int(N), BN)
    per_wave = int(sms) * int(blocks_per_sm)
    if tailwave:
        whole = tiles // int(tailwave) * int(tailwave)
        chunks = (tiles - whole) * int(splitk)
        whole_waves, chunk_waves = ceil_div(whole, per_wave), ceil_div(chunks, per_wave)
        n = whole_waves + chunk_waves
        last = chunks if chunks else whole
        tail = last - (ceil_div(last, per_wave) - 1) * per_wave
        time = whole_waves + chunk_waves / int(splitk)
        return Waves(blocks=whole + chunks, blocks_per_sm=int(blocks_per_sm), sms=int(sms),
                     per_wave=per_wave, waves=n, tail_blocks=tail,
                     efficiency=tiles / (per_wave * time),
                     busy_sms_last_wave=min(tail, int(sms)))
    blocks = tiles * int(splitk)
    n = ceil_div(blocks, per_wave)
    tail = blocks - (n - 1) * per_wave
    return Waves(blocks=blocks, blocks_per_sm=int(blocks_per_sm), sms=int(sms),
                 per_wave=per_wave, waves=n, tail_blocks=tail,
                 efficiency=blocks / (n * per_wave), busy_sms_last_wave=min(tail, int(sms)))


def registers(step, params=None, *, data=None) -> tuple[int, str]:
    """(registers per thread, where the figure comes from) for a step and tile shape compiled
    for the H200: a row of the measured sizes `data` (ptxas on the GPU, any size); else the
    reference data's ladder run (PyCUDA's ``num_regs``); else the sm_90 table of
    `ladder.ptxas_registers` (ptxas without a GPU); else `Step.registers_estimate`, capped
    by MINB as ptxas caps it (``tuned``)."""
    s = ladder.get(step)
    p = s.resolve(params)
    if data is not None:
        for r in data.rows:
            if r["step"] == s.name and r.get("registers") is not None and \
                    s.resolve(r["params"]) == p:
                return int(r["registers"]), "ptxas on the H200 (the sizes data)"
    run = ladder.reference_run(s, p, 4096) if s in ladder.STEPS else None
    if run is not None and run.extra.get("registers") is not None:
        return int(run.extra["registers"]), "PyCUDA's num_regs on the H200 (reference data)"
    table = ladder.ptxas_registers(s, p)
    if table is not None:
        return int(table["registers"]), table["label"]
    r = s.registers_estimate(p)
    if p.get("MINB", 1) > 1:
        r = min(r, ladder.REGISTERS_PER_SM // (p["MINB"] * s.threads(p)))
    return min(r, ladder.MAX_REGISTERS), "estimated (Step.registers_estimate)"


def blocks_per_sm(step, params=None, registers_per_thread: int | None = None, *,
                  data=None) -> tuple[int, str]:
    """(blocks per SM, where the registers came from) for a step and tile shape on an H200:
    `tilinglib.occupancy` with the block's threads, its static shared memory and
    `registers_per_thread` (default: `registers`, with `data` passed on)."""
    from .occupancy import occupancy

    s = ladder.get(step)
    p = s.resolve(params)
    if registers_per_thread is None:
        registers_per_thread, source = registers(s, p, data=data)
    else:
        source = "given"
    occ = occupancy(s.threads(p), registers_per_thread=int(registers_per_thread),
                    static_shared=s.shared_bytes(p))
    return occ.active_blocks, source


# -- the configurations the bench sweeps -------------------------------------------------

def _warp_layouts(BM: int, BN: int):
    """Every valid warp layout of the warp-tiled kernels for a block tile: 128 or 256 threads,
    64 or 128 accumulators per lane."""
    out = []
    for WM in (16, 32, 64, 128):
        for WN in (16, 32, 64, 128):
            for WMITER in (1, 2, 4):
                for WNITER in (1, 2, 4):
                    for TM, TN in ((4, 4), (8, 4), (4, 8)):
                        q = dict(WM=WM, WN=WN, WMITER=WMITER, WNITER=WNITER, TM=TM, TN=TN)
                        p = dict(BM=BM, BN=BN, BK=8, APAD=4, **q)
                        if ladder.WARPTILE.valid(p) is not None:
                            continue
                        if ladder.WARPTILE.threads(p) not in (128, 256):
                            continue
                        if WMITER * TM * WNITER * TN not in (64, 128):
                            continue
                        out.append(q)
    return out


def _squarest(layouts, n: int):
    """The `n` layouts whose warp tile WM x WN is squarest (lesson 08: the banks deliver
    4 (WM + WN) / (WM WN) bytes per FMA), ties in listing order."""
    return sorted(layouts, key=lambda q: (abs(math.log2(q["WM"] / q["WN"])),
                                         -q["WMITER"] * q["TM"] * q["WNITER"] * q["TN"]))[:n]


@functools.lru_cache(maxsize=2)
def _configurations(quick: bool) -> tuple:
    configs: list[tuple[str, dict]] = []

    def add(name, extra):
        p = ladder.get(name).resolve(extra)
        if ladder.get(name).valid(p) is None and (name, p) not in configs:
            configs.append((name, p))

    # the defaults first: the lesson's ladder, then the tuned kernel's switches one by one
    for name in ("vec4", "warptile", "warptile_db", "tuned"):
        add(name, {})
    for sk in (2, 3, 4):
        add("tuned", {"SPLITK": sk})
    if quick:
        add("tuned", {"BK": 16, "APAD": 0, "SWIZZLE": 1})
        add("tuned", {"FRAGDB": 0})
        small = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "WMITER": 1, "WNITER": 4,
                 "TM": 4, "TN": 4, "APAD": 4}
        add("tuned", {**small, "FRAGDB": 0, "MINB": 2})
        return tuple(configs)
    db = ladder.WARPTILE_DB.resolve()
    for extra in ({"FRAGDB": 0}, {"GSWZ": 8}, {"BK": 8, "APAD": 0, "SWIZZLE": 1},
                  {"BK": 16, "APAD": 0, "SWIZZLE": 1}, {"BK": 16, "APAD": 0},
                  {"BK": 16, "APAD": 0, "SWIZZLE": 1, "GSWZ": 8},
                  {"BK": 8, "APAD": 0, "SWIZZLE": 1, "SPLITK": 2},
                  {"BK": 16, "APAD": 0, "SWIZZLE": 1, "SPLITK": 2},
                  {"BK": 16, "APAD": 0, "SWIZZLE": 1, "SPLITK": 4}):
        add("tuned", {**db, **extra})
    # lesson 08's kernels: float4 shapes, and the squarest warp layouts per block tile
    for BM in (64, 128):
        for BN in (64, 128):
            for BK in (8, 16):
                for TM, TN in ((4, 4), (8, 4), (4, 8), (8, 8)):
                    p = dict(BM=BM, BN=BN, BK=BK, TM=TM, TN=TN)
                    if 64 <= ladder.VEC4.threads(p) <= 256:
                        add("vec4", p)
    for BM, BN in ((64, 64), (64, 128), (128, 64), (128, 128), (128, 256), (256, 128)):
        for q in _squarest(_warp_layouts(BM, BN), 2):
            for BK in (8, 16):
                add("warptile", dict(BM=BM, BN=BN, BK=BK, APAD=4, **q))
                add("warptile_db", dict(BM=BM, BN=BN, BK=BK, APAD=4, **q))
                sw = dict(BM=BM, BN=BN, BK=BK, APAD=0, SWIZZLE=1, **q)
                add("tuned", sw)
                if BM * BN <= 128 * 128:       # small tiles: two blocks per SM, or split-K
                    add("tuned", {**sw, "MINB": 2})
                    add("tuned", {**sw, "FRAGDB": 0, "MINB": 2})
                    add("tuned", {**sw, "SPLITK": 2})
    return tuple(configs)


def sweep_configurations(quick: bool = False) -> list[tuple[str, dict]]:
    """[(step name, resolved params)]: what ``bench/ladder_sizes.py`` times at every size of
    `SIZES`, every one `valid`. First the default shapes of vec4, warptile, warptile_db and
    tuned, and tuned split 2, 3 and 4 ways; then (unless `quick`) the tuned kernel's switches
    one at a time at warptile_db's shape, lesson 08's kernels over block tiles from 64 x 64 to
    256 x 128 (the two squarest warp layouts of each, BK 8 and 16), and the tuned kernel at
    those tiles with the swizzle, two blocks per SM (MINB = 2) and split-K."""
    return [(name, dict(p)) for name, p in _configurations(bool(quick))]


# -- the second, targeted sweep --------------------------------------------------------------

#: The sizes of the second sweep's two families (lesson 08, section 8): the small tiles and
#: split-K where the grid of 128 x 256 tiles cannot fill the GPU, the 128 x 256 family where
#: it can (2048 in both: the crossing point in the first sweep).
SMALL_SIZES = ((1024, 1024, 1024), (2048, 2048, 2048))
LARGE_SIZES = ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (1500, 2500, 3000))


@functools.lru_cache(maxsize=1)
def _second_configurations() -> tuple:
    configs: list[tuple[str, dict, tuple]] = []

    def add(extra, sizes):
        p = ladder.TUNED.resolve(extra)
        if ladder.TUNED.valid(p) is None and all(p != q for _, q, _ in configs):
            configs.append(("tuned", p, tuple(sizes)))

    swz = {"APAD": 0, "SWIZZLE": 1}
    w32x64 = {"WM": 32, "WN": 64, "WMITER": 1, "WNITER": 2}            # the 1024 winner's warp
    t84, t48 = {"TM": 8, "TN": 4}, {"TM": 4, "TN": 8}
    # N = 1024: split-K 2, MINB=2 with FRAGDB=0, and the swizzle each helped the 64 x 128 x 16
    # tile (27,995 / 27,759 / 26,205 GFLOP/s); combined, with 3 and 4 K chunks, and BK 8
    # (MINB = 3 is left out: ptxas gives these tiles 167 registers with MINB = 2 already,
    # 3 blocks of 128 threads per SM)
    switches = ({"MINB": 1, "FRAGDB": 1}, {"MINB": 2, "FRAGDB": 0}, {"MINB": 2, "FRAGDB": 1},
                {"MINB": 1, "FRAGDB": 0})
    tile = {"BM": 64, "BN": 128, "BK": 16, **swz, **w32x64}
    for sk in (1, 2, 3, 4):
        for sw in switches:
            add({**tile, **t84, **sw, "SPLITK": sk}, SMALL_SIZES)
    for sk in (2, 3, 4):
        for sw in switches[:2]:
            add({**tile, "BK": 8, **t84, **sw, "SPLITK": sk}, SMALL_SIZES)
            add({**tile, **t48, **sw, "SPLITK": sk}, SMALL_SIZES)
            add({**tile, "BM": 128, "BN": 64, **t84, **sw, "SPLITK": sk}, SMALL_SIZES)
    add({**tile, **t48, "MINB": 1, "FRAGDB": 0}, SMALL_SIZES)
    # 64 x 64 tiles (not in the first sweep's tuned shapes): 256 blocks at N = 1024; the
    # winner's warp tile in 2 warps (64 threads), and 32 x 32 warp tiles in 4
    for sk in (1, 2, 3):
        for sw in switches[:3]:
            add({**tile, "BN": 64, **t84, **sw, "SPLITK": sk}, SMALL_SIZES)
        add({**tile, "BN": 64, "BK": 8, **t84, "SPLITK": sk}, SMALL_SIZES)
    for sk in (1, 2):
        add({**tile, "BN": 64, "WM": 32, "WN": 32, "WNITER": 1, **t84, "SPLITK": sk},
            SMALL_SIZES)
        add({**tile, "BN": 64, "WM": 32, "WN": 32, "WNITER": 1, **t84, "MINB": 2, "FRAGDB": 0,
             "SPLITK": sk}, SMALL_SIZES)
    # split into one wave: 128 x 128 (64 blocks, 25,525 split 2 ways), 128 x 256 (32 blocks,
    # 26,689 split 4 ways); FRAGDB=0 at 128 x 128 x 16 is left out: ptxas spills it (48 B)
    w64x64 = {"WM": 64, "WN": 64, "WMITER": 1, "WNITER": 4}
    add({"BM": 128, "BN": 128, "BK": 8, **swz, **w64x64, **t84, "FRAGDB": 0, "SPLITK": 2},
        SMALL_SIZES)
    add({"BK": 16, **swz, "SPLITK": 2, **w64x64, "BM": 128, "BN": 128, **t84}, SMALL_SIZES)
    add({"SPLITK": 4, "FRAGDB": 0}, SMALL_SIZES)
    add({"SPLITK": 4, "BK": 8, **swz}, SMALL_SIZES)
    # N = 4096 and 8192: the 128 x 256 x 12 family (43,031 with GSWZ=8): the grouped order's
    # width, the fragments' double buffer, the thread tile 4 x 8, the 64 x 64 warp tile, BK 8
    # and 16 swizzled with the grouped order, and split-K 2 and 3 with it (8192: 44,426 split
    # 3 ways unordered)
    for g in (2, 4, 8, 16, 32):
        for fd in (1, 0):
            add({"GSWZ": g, "FRAGDB": fd}, LARGE_SIZES)
    for g in (1, 8):
        add({**t48, "GSWZ": g}, LARGE_SIZES)
        add({**w64x64, "GSWZ": g}, LARGE_SIZES)
        add({"BM": 256, "BN": 128, "GSWZ": g}, LARGE_SIZES)
    add({**t48, "GSWZ": 8, "FRAGDB": 0}, LARGE_SIZES)
    for bk in (8, 16):
        add({**w64x64, "BK": bk, **swz, "GSWZ": 8}, LARGE_SIZES)
        add({**w64x64, **t48, "BK": bk, **swz, "GSWZ": 8}, LARGE_SIZES)
        add({"BM": 256, "BN": 128, **w64x64, "BK": bk, **swz, "GSWZ": 8}, LARGE_SIZES)
    for g in (4, 8, 16):
        add({"BK": 8, **swz, "GSWZ": g}, LARGE_SIZES)
    add({"BK": 16, "GSWZ": 8}, LARGE_SIZES)
    add({"BK": 8, "GSWZ": 8}, LARGE_SIZES)
    for sk in (2, 3):
        for g in (4, 8, 16):
            add({"SPLITK": sk, "GSWZ": g}, LARGE_SIZES[1:3])
        add({"SPLITK": sk, "GSWZ": 8, "FRAGDB": 0}, LARGE_SIZES[1:3])
    return tuple(configs)


def second_sweep_configurations() -> list[tuple[str, dict, tuple]]:
    """[(step name, resolved params, sizes)]: what ``bench/ladder_sizes.py --configs second``
    times, each configuration `valid` and only at its `sizes` ((M, N, K) tuples of `SIZES`),
    chosen from the first sweep's H200 log (which the bench writes into ``bench/results``).

    `SMALL_SIZES` (N = 1024, 2048): the tuned kernel at the N = 1024 winner's tiles (64 x 128
    and 128 x 64 x 16 swizzled, warp 32 x 64 in 1 x 2) with split-K 1 to 4 crossed with MINB
    and FRAGDB, BK 8, thread 4 x 8; 64 x 64 tiles (64 and 128 threads); 128 x 128 and
    128 x 256 split into about one wave. `LARGE_SIZES` (2048, 4096, 8192, 1500 x 2500 x 3000):
    the 128 x 256 x 12 family with GSWZ 2 to 32 and FRAGDB on and off, thread 4 x 8, warp
    64 x 64 in 1 x 4, 256 x 128, BK 8 and 16 swizzled with GSWZ = 8, and at 4096 and 8192
    split-K 2 and 3 with GSWZ. (MINB = 2 is not valid for this family's 256-thread blocks:
    128 registers per thread would spill its 128 accumulators.) Also a few of the first sweep's
    rows again, so that the two runs can be compared on the same kernels."""
    return [(name, dict(p), sizes) for name, p, sizes in _second_configurations()]


def third_sweep_configurations() -> list[tuple[str, dict, tuple]]:
    """[(step name, resolved params, sizes)]: what ``bench/ladder_sizes.py --configs third``
    times (run 2 of the H200's sizes data), each configuration `valid`.

    The question of that run: do 128 x 128 tiles of 256 threads (8 warps, one per 32 x 64 or
    64 x 32 warp tile) beat the 128 x 256 family, now that each block asks for fewer
    registers? At N = 2048, 4096, 8192 and 1500 x 2500 x 3000: warp 32 x 64 in 1 x 2, 64 x 32
    in 2 x 1 and 32 x 64 in 2 x 1, each with BK 8 and 16 swizzled or 12 padded, GSWZ 1 and 8;
    at N = 1024 the same tiles with split-K 1 to 3. MINB = 2 is tried and kept out where
    `valid` refuses it (about 150 registers per thread needed, 128 given). The current winners
    at each size are timed again in the same run, for the comparison."""
    configs: list[tuple[str, dict, tuple]] = []

    def add(extra, sizes):
        p = ladder.TUNED.resolve(extra)
        if ladder.TUNED.valid(p) is None and all(p != q for _, q, _ in configs):
            configs.append(("tuned", dict(p), tuple(sizes)))

    swz = {"APAD": 0, "SWIZZLE": 1}
    s1024, large = SIZES[0], SIZES[1:]
    for warp in ({"WM": 32, "WN": 64, "WMITER": 1, "WNITER": 2},
                 {"WM": 64, "WN": 32, "WMITER": 2, "WNITER": 1},
                 {"WM": 32, "WN": 64, "WMITER": 2, "WNITER": 1}):
        for bk in ({"BK": 8, **swz}, {"BK": 16, **swz}, {"BK": 12, "APAD": 4, "SWIZZLE": 0}):
            for minb in (1, 2):
                tile = {"BM": 128, "BN": 128, **warp, **bk, "TM": 8, "TN": 4, "MINB": minb,
                        "FRAGDB": 1}
                for g in (1, 8):
                    add({**tile, "GSWZ": g}, large)
                for sk in (1, 2, 3):
                    add({**tile, "SPLITK": sk}, (s1024,))
    add({"BM": 128, "BN": 256, "BK": 12, "WM": 32, "WN": 128, "WMITER": 2, "WNITER": 2, "TM": 8,
         "TN": 4, "APAD": 4, "SWIZZLE": 0, "FRAGDB": 1, "GSWZ": 4}, large)
    add({"BM": 64, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "WMITER": 1, "WNITER": 2, "TM": 8,
         "TN": 4, **swz, "FRAGDB": 1, "SPLITK": 3, "MINB": 2}, (s1024,))
    return configs


def fourth_sweep_configurations() -> list[tuple[str, dict, tuple]]:
    """[(step name, resolved params, sizes)]: what ``bench/ladder_sizes.py --configs fourth``
    times (run 3 of the H200's sizes data), each configuration `valid`.

    The question of that run: what do the tuned kernel's FAST (inside blocks fetch without
    edge tests), PINGPONG (two tiles a loop iteration, constant shared addresses) and
    TAILWAVE (split-K for the last wave's tiles only) switches buy at each size, alone and
    together, at the shapes that won runs 0 to 2 and with BK = 16 swizzled (whose extra
    instructions per tile FAST removes)? At every size of `SIZES`: the 128 x 256 tile
    (BK 12 padded and BK 16 swizzled) with FAST, PINGPONG, both, GSWZ 1, 4 and 16, and the
    tail split 3 and 9 ways past waves of 132 (one block per SM on 132 SMs); at N = 1024 also
    run 2's 128 x 128 winner with the switches and split-K 2 to 4. Each switch alone at the
    kernel's default shape at N = 4096 (lesson 08's table of what each bought)."""
    configs: list[tuple[str, dict, tuple]] = []

    def add(extra, sizes):
        p = ladder.TUNED.resolve(extra)
        if ladder.TUNED.valid(p) is None and all(p != q for _, q, _ in configs):
            configs.append(("tuned", dict(p), tuple(sizes)))

    s4096 = (SIZES[2],)
    swz16 = {"BK": 16, "APAD": 0, "SWIZZLE": 1}
    for extra in ({}, {"FAST": 1}, {"PINGPONG": 1}, {"FAST": 1, "PINGPONG": 1}):
        add(extra, s4096)                                # the default shape, one switch at a time
        add({**extra, **swz16}, s4096)
    for bk in ({}, swz16):
        for switches in ({"FAST": 1}, {"FAST": 1, "PINGPONG": 1}):
            for g in (1, 4, 16):
                add({**bk, **switches, "GSWZ": g}, SIZES)
            for split in (3, 9):
                add({**bk, **switches, "GSWZ": 4, "SPLITK": split, "TAILWAVE": 132}, SIZES)
    small = {"BM": 128, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "WMITER": 1, "WNITER": 2,
             "TM": 8, "TN": 4, **swz16}
    for switches in ({}, {"FAST": 1}, {"FAST": 1, "PINGPONG": 1}):
        for split in (2, 3, 4):
            add({**small, **switches, "SPLITK": split}, SIZES[:1])
    for split in (2, 4):
        add({**swz16, "FAST": 1, "PINGPONG": 1, "SPLITK": split}, SIZES[:1])
    return configs


# -- the measured data --------------------------------------------------------------------

def run_of(entry: Mapping) -> int:
    """The run a row or cuBLAS entry of a sizes file belongs to: its ``run``, else 0 (the
    file's first run)."""
    return int(entry.get("run", 0))


@dataclass(frozen=True)
class SizesData:
    """The contents of a ``ladder_sizes`` data file (format in the module docstring).

    `rows`, `cublas_runs`: the file's lists of dicts (``rows`` and ``cublas``); `device`,
    `software`, `settings`, `date`, `command`: the first run's; `runs`: one dict per run
    (``run``, ``date``, ``command``, ``settings``), the first run's from the top level;
    `label`: a caption (device, dates, commands)."""

    device: Mapping
    software: Mapping
    settings: Mapping
    date: str
    command: str
    sizes: tuple
    rows: tuple
    cublas_runs: tuple
    label: str
    runs: tuple = ()

    def rows_at(self, M: int, N: int, K: int, *, usable_only: bool = True) -> list[dict]:
        """The configurations timed at M x N x K (every run's), fastest first; unless
        `usable_only` is False, only the usable ones (`usable`)."""
        out = [r for r in self.rows if (r.get("M"), r.get("N"), r.get("K")) == (M, N, K)
               and "gflops" in r and (usable(r) or not usable_only)]
        return sorted(out, key=lambda r: -r["gflops"])

    def cublas(self, M: int, N: int, K: int, run: int | None = None) -> float | None:
        """The median of cuBLAS's GFLOP/s at M x N x K over run `run`'s timings (None: over
        every run's), or None when that run did not time cuBLAS there. A row's own figure:
        `percent_of_cublas`."""
        import statistics

        g = [c["gflops"] for c in self.cublas_runs if (c["M"], c["N"], c["K"]) == (M, N, K)
             and (run is None or run_of(c) == run)]
        return statistics.median(g) if g else None

    def percent_of_cublas(self, row: Mapping) -> float | None:
        """100 x the row's GFLOP/s / cuBLAS's at its size in the row's own run (`run_of`), or
        None when that run has no cuBLAS timing there."""
        cub = self.cublas(row["M"], row["N"], row["K"], run=run_of(row))
        return None if not cub else 100.0 * row["gflops"] / cub

    def best(self, M: int, N: int, K: int, step: str | None = None) -> dict | None:
        """The fastest usable row at M x N x K (of `step` only, when given), any run's, or
        None."""
        rows = [r for r in self.rows_at(M, N, K) if step is None or r["step"] == step]
        return rows[0] if rows else None

    def row(self, step: str, params, M: int, N: int, K: int,
            run: int | None = None) -> dict | None:
        """The row of one configuration at M x N x K in run `run` (None: the fastest of the
        runs that timed it, as `best` would rank them), or None when it was not timed."""
        p = ladder.get(step).resolve(params)
        found = [r for r in self.rows
                 if (r["step"], r.get("M"), r.get("N"), r.get("K")) == (step, M, N, K)
                 and (run is None or run_of(r) == run)
                 and ladder.get(step).resolve(r["params"]) == p]
        timed = [r for r in found if "gflops" in r]
        if timed:
            return max(timed, key=lambda r: r["gflops"])
        return found[0] if found else None


def usable(row: Mapping) -> bool:
    """True for a measured row the course may choose: correct (both errors under
    `MAX_RELATIVE_ERROR`) and without register spills (ptxas's spill stores and loads 0)."""
    return bool(row.get("correct")) and not (row.get("spill_stores") or 0) \
        and not (row.get("spill_loads") or 0)


def _data_path(path) -> Path | None:
    if path is not None:
        return Path(path)
    p = resources.files("tilinglib") / "data" / DATA_FILE
    return Path(str(p)) if p.is_file() else None


def _check_format(data: Mapping, where) -> None:
    if data.get("format") != "tilinglib-ladder-sizes" or data.get("format_version") != 1:
        raise ValueError(f"{where}: not a tilinglib-ladder-sizes file of format version 1")


@dataclass(frozen=True)
class IssueProfile:
    """Where one kernel's issue slots went at N = 4096 on the H200, as Nsight Compute read
    it (``ncu --clock-control none``, one launch; `NCU_FILE`, written by
    ``bench/tuned_variants.py --ncu``).

    `kernel`: ``cuBLAS`` or the tuned variant's name (its switches in `changed`);
    `duration_ms`: the launch under the profiler, ms; `issue_busy_pct`: percent of the
    schedulers' cycles that issued an instruction (smsp__issue_active); `fma_pipe_pct`:
    percent of cycles the FMA pipe was busy; `instructions`: warp instructions executed;
    `ffma`: warp FFMA instructions executed (thread FFMAs / 32); `cycles_per_issue`: warp
    cycles per issued instruction (2 warps per scheduler: 2.0 would issue every cycle);
    `stalls`: {reason: cycles per issued instruction} of WarpStateStats ("Not Selected",
    "Wait", "Dispatch Stall", ...); `registers`: per thread."""

    kernel: str
    changed: Mapping[str, int]
    duration_ms: float
    issue_busy_pct: float
    fma_pipe_pct: float
    instructions: float
    ffma: float
    cycles_per_issue: float
    stalls: Mapping[str, float]
    registers: int

    @property
    def other_per_ffma(self) -> float:
        """Instructions that are not FFMA, per FFMA."""
        return (self.instructions - self.ffma) / self.ffma


def load_issue_profiles(path=None) -> dict[str, IssueProfile]:
    """{``cuBLAS`` or a tuned variant's name: its `IssueProfile`} from `NCU_FILE` in
    ``tilinglib/data`` (or the file at `path`); {} when there is none.

    Raises ValueError for a file of another format."""
    from .toolchain.measure import metrics

    p = Path(path) if path is not None else Path(__file__).resolve().parent / "data" / NCU_FILE
    if not p.is_file():
        return {}
    doc = json.loads(p.read_text(encoding="utf-8"))
    if doc.get("format") != "tilinglib-ncu-kernels":
        raise ValueError(f"{p}: not a tilinglib-ncu-kernels file")
    out = {}
    for label, m in doc["kernels"].items():
        name = label.split(" ", 1)[1] if label.startswith("sgemmTuned ") else "cuBLAS"
        v = lambda key: m[key][0]                                   # noqa: E731
        out[name] = IssueProfile(
            kernel=name, changed=dict(doc["variants"].get(name, {})),
            duration_ms=v(metrics.DURATION) / 1e6,
            issue_busy_pct=v(metrics.ISSUE_ACTIVE_PCT),
            fma_pipe_pct=v(metrics.FMA_PIPE_ACTIVE_PCT),
            instructions=v(metrics.WARP_INSTRUCTIONS),
            ffma=v(metrics.FFMA_THREAD_INSTRUCTIONS_SM) / 32,
            cycles_per_issue=v("Warp Cycles Per Issued Instruction"),
            stalls={k[len("Stall "):]: val[0] for k, val in m.items()
                    if k.startswith("Stall ") and isinstance(val[0], float)},
            registers=int(v("Registers Per Thread")))
    return out


def load_sizes(path=None) -> SizesData | None:
    """The measured sizes data (`DATA_FILE` in ``tilinglib/data``, or the file at `path`), or
    None when the course has none yet (then the lesson uses the wave model).

    Raises ValueError for a file that is not of this format."""
    p = _data_path(path)
    if p is None or not p.is_file():
        return None
    data = json.loads(p.read_text(encoding="utf-8"))
    _check_format(data, p)
    dev = data["device"]
    runs = ({"run": 0, "date": data["date"], "command": data["command"],
             "settings": data.get("settings", {})},) + tuple(data.get("runs", ()))
    label = (f"measured on an {dev['name']} ({dev.get('sms', '?')} SMs), {data['date']}, "
             f"by {data['command']}")
    for r in runs[1:]:
        label += f";\nthen {r['date']}, by {r['command']}"      # a line per run
    return SizesData(device=dev, software=data.get("software", {}),
                     settings=data.get("settings", {}), date=data["date"],
                     command=data["command"], sizes=tuple(tuple(s) for s in data["sizes"]),
                     rows=tuple(data["rows"]), cublas_runs=tuple(data["cublas"]), label=label,
                     runs=runs)


def merge_sizes(base: Mapping, new: Mapping) -> dict:
    """A sizes file's contents (dicts as `json.load` gives them) with the run `new` (one run's
    file, as ``bench/ladder_sizes.py`` writes it) appended to `base`'s: `new`'s rows and
    cuBLAS entries marked with the next run number (``run``), its date, command, settings,
    software and device listed in ``runs``, its sizes added to ``sizes``; `base`'s own
    entries unchanged. Neither argument is modified.

    Raises ValueError when either is not of this format, `new` already holds several runs,
    or the two were measured on different GPUs (device name or SM count): a row is only
    ever compared with its own run's cuBLAS, but the choice ranks rows of every run."""
    _check_format(base, "the file merged into")
    _check_format(new, "the run merged")
    if new.get("runs") or any("run" in e for e in list(new["rows"]) + list(new["cublas"])):
        raise ValueError("the run merged holds several runs already: merge one run at a time")
    a, b = base["device"], new["device"]
    if (a.get("name"), a.get("sms")) != (b.get("name"), b.get("sms")):
        raise ValueError(f"cannot merge a run on {b.get('name')} ({b.get('sms')} SMs) into "
                         f"data measured on {a.get('name')} ({a.get('sms')} SMs): one GPU "
                         f"per file; write the run to a file of its own (--out)")
    used = [0] + [int(r["run"]) for r in base.get("runs", ())]
    run = max(used) + 1
    out = dict(base)
    out["runs"] = list(base.get("runs", ())) + [
        {"run": run, "date": new["date"], "command": new["command"],
         "settings": new.get("settings", {}), "software": new.get("software", {}),
         "device": new["device"]}]
    out["rows"] = list(base["rows"]) + [dict(r, run=run) for r in new["rows"]]
    out["cublas"] = list(base["cublas"]) + [dict(c, run=run) for c in new["cublas"]]
    sizes = [list(s) for s in base["sizes"]]
    out["sizes"] = sizes + [list(s) for s in new["sizes"] if list(s) not in sizes]
    return out


# -- the choice -----------------------------------------------------------------------------

def candidates() -> list[tuple[str, dict]]:
    """What the wave model chooses among: the default shapes of vec4, warptile and
    warptile_db (whose rates at N = 4096 the reference data has), and warptile_db's shape in
    the tuned kernel split 2, 3, 4, 6 and 8 ways. (The tuned kernel unsplit is left out: the
    model, knowing no rate of its own for it, could not tell it from warptile_db.)"""
    out = [(n, ladder.get(n).resolve()) for n in ("vec4", "warptile", "warptile_db")]
    out += [("tuned", ladder.TUNED.resolve({"SPLITK": s})) for s in (2, 3, 4, 6, 8)]
    return out


#: Within this fraction of the best prediction, the wave model takes the fewest K chunks:
#: it does not charge split-K for its atomic additions and shorter K loops.
SPLIT_GAIN = 0.01


def _rate_4096(step: str, params, ref) -> tuple[float, str]:
    """(GFLOP/s at N = 4096, which run) for the model: the reference data's run of the step
    at its default shape (split-K aside: the unsplit kernel's); for tuned, while the
    reference ladder run has none of it, warptile_db's (the kernel it extends)."""
    s = ladder.get(step)
    base = s.name
    if s.name == "tuned":
        try:
            run = ref.step("tuned", 4096, ladder.TUNED.resolve())
            return float(run.gflops), "tuned"
        except KeyError:
            base = "warptile_db"
    run = ref.step(base, 4096, ladder.get(base).resolve())
    return float(run.gflops), base


def model_gflops(step: str, params, M: int, N: int, K: int, *, ref=None, data=None,
                 sms: int = SMS) -> tuple[float, Waves]:
    """(GFLOP/s the wave model predicts at M x N x K, the `Waves` there) for a step and tile
    shape: its rate at N = 4096 (the reference data: `_rate_4096`) x its wave efficiency at
    the size / its efficiency at 4096 unsplit. Blocks per SM from `blocks_per_sm` (registers
    from `data` when given)."""
    from . import reference

    ref = reference.load("h200") if ref is None else ref
    s = ladder.get(step)
    p = s.resolve(params)
    rate, _ = _rate_4096(step, p, ref)
    per_sm, _ = blocks_per_sm(s, p, data=data)
    split = p.get("SPLITK", 1)
    here = waves(M, N, (p["BM"], p["BN"]), per_sm, sms, split, p.get("TAILWAVE", 0))
    at_4096 = waves(4096, 4096, (p["BM"], p["BN"]), per_sm, sms, 1)
    return rate * here.efficiency / at_4096.efficiency, here


@dataclass(frozen=True)
class Choice:
    """The configuration chosen for one size: `step`, `params`, `source` ("measured" or
    "wave model"), `gflops` (measured, or the model's prediction), `cublas_gflops` (measured
    in the same run; None for the model), `waves` (its `Waves` on the H200), `reason` (a
    sentence)."""

    M: int
    N: int
    K: int
    step: str
    params: Mapping[str, int]
    source: str
    gflops: float
    cublas_gflops: float | None
    waves: Waves
    reason: str

    @property
    def percent_of_cublas(self) -> float | None:
        return None if not self.cublas_gflops else 100.0 * self.gflops / self.cublas_gflops


def shape_label(step: str, params) -> str:
    """A short label of a configuration: ``tuned 128x256x12, warp 32x128 in 2x2, thread 8x4,
    split-K 2`` (block tile BM x BN x BK; warp tile, its WMITER x WNITER steps; thread tile
    TM x TN), then the tuned kernel's switches where they are not at their defaults
    (``swizzled``, ``MINB=2``, ``GSWZ=8``, ``FRAGDB=0``, ``FAST``, ``PINGPONG``; with
    TAILWAVE the split reads ``split-K 9 past waves of 132``). Each configuration swept has its
    own, of at most 80 characters in `sweep_configurations`, 85 in
    `second_sweep_configurations` (split-K, the swizzle, MINB and FRAGDB at once)."""
    p = ladder.get(step).resolve(params)
    text = f"{step} {p['BM']}x{p['BN']}x{p['BK']}"
    if "WM" in p:
        text += f", warp {p['WM']}x{p['WN']}"
        if (p["WMITER"], p["WNITER"]) != (1, 1):
            text += f" in {p['WMITER']}x{p['WNITER']}"
    text += f", thread {p['TM']}x{p['TN']}"
    extras = [(f"split-K {p['SPLITK']}" + (f" past waves of {p['TAILWAVE']}"
                                           if p.get("TAILWAVE") else ""))
              if p.get("SPLITK", 1) > 1 else "",
              "swizzled" if p.get("SWIZZLE") else "",
              f"MINB={p['MINB']}" if p.get("MINB", 1) > 1 else "",
              f"GSWZ={p['GSWZ']}" if p.get("GSWZ", 1) > 1 else "",
              "FRAGDB=0" if p.get("FRAGDB", 1) == 0 else "",
              "FAST" if p.get("FAST") else "", "PINGPONG" if p.get("PINGPONG") else ""]
    return ", ".join([text] + [e for e in extras if e])


def pick_per_size(N: int, M: int | None = None, K: int | None = None, *, data=...,
                  ref=None) -> Choice:
    """The configuration the course uses for C (M x N) = A (M x K) · B (K x N) (M and K
    default to N), with the reason.

    `data`: a `SizesData` (default: `load_sizes()`; None forces the model). From the data
    when it timed this size: its fastest `usable` row (correct, no spills), of any run, with
    cuBLAS of that row's run (`Choice.cublas_gflops`). Otherwise the
    wave model (`model_gflops` over `candidates`). Raises ArgumentError for sizes below 1.

    The model's rules: split-K is a candidate only where the unsplit grid is smaller than one
    wave (it cannot fill the GPU); within `SPLIT_GAIN` of the best prediction the fewest K
    chunks win."""
    M = N if M is None else M
    K = N if K is None else K
    for what, v in (("M", M), ("N", N), ("K", K)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ArgumentError(f"{what}={v!r}: matrix sizes must be whole numbers >= 1")
    M, N, K = int(M), int(N), int(K)
    data = load_sizes() if data is ... else data
    if data is not None:
        best = data.best(M, N, K)
        if best is not None:
            s = ladder.get(best["step"])
            p = s.resolve(best["params"])
            per_sm, _ = blocks_per_sm(s, p, best.get("registers"), data=data)
            w = waves(M, N, (p["BM"], p["BN"]), per_sm, int(data.device.get("sms", SMS)),
                      p.get("SPLITK", 1), p.get("TAILWAVE", 0))
            cub = data.cublas(M, N, K, run=run_of(best))
            others = {r["step"] for r in data.rows_at(M, N, K)}
            runs = {run_of(r) for r in data.rows_at(M, N, K)}
            reason = (f"the fastest of {len(data.rows_at(M, N, K))} correct, unspilled "
                      f"configurations ({', '.join(sorted(others))}) timed at {M} x {N} x {K} "
                      f"({data.label}): {w}")
            if len(runs) > 1:
                reason += (f"; timed in {len(runs)} runs, this one in run {run_of(best)}, "
                           f"compared with cuBLAS of the same run")
            return Choice(M, N, K, s.name, p, "measured", float(best["gflops"]), cub, w, reason)
    scored = []
    for name, p in candidates():
        g, w = model_gflops(name, p, M, N, K, ref=ref, data=data)
        if w.blocks // p.get("SPLITK", 1) >= w.per_wave and p.get("SPLITK", 1) > 1:
            continue        # split-K only where the unsplit grid cannot fill one wave
        scored.append((name, p, g, w))
    top = max(g for _, _, g, _ in scored)
    # the fewest K chunks among those within SPLIT_GAIN of the best, then the fastest
    near = [t for t in scored if t[2] >= top * (1 - SPLIT_GAIN)]
    name, p, g, w = min(near, key=lambda t: (t[1].get("SPLITK", 1), -t[2]))
    rest = sorted((t for t in scored if t[:2] != (name, p)), key=lambda t: -t[2])
    runner = rest[0]
    reason = (f"wave model (no H200 timing of {M} x {N} x {K} in the course's data): "
              f"{shape_label(name, p)}: {w}; predicted {g:,.0f} GFLOP/s, against "
              f"{runner[2]:,.0f} for {shape_label(runner[0], runner[1])}")
    if top > g:
        reason += (f" (fewer K chunks within {100 * SPLIT_GAIN:.0f}% of the best prediction, "
                   f"{top:,.0f}: the model does not charge split-K for its atomic additions)")
    return Choice(M, N, K, name, p, "wave model", g, None, w, reason)


def compare(N: int, M: int | None = None, K: int | None = None, *, data=..., ref=None,
            configs=None) -> list[dict]:
    """One dict per configuration (default: `candidates`) at M x N x K (M and K default to
    N): ``step``, ``params``, ``label`` (`shape_label`), ``registers`` and their ``source``,
    ``blocks_per_sm``, ``waves`` (a `Waves`), ``model_gflops`` (`model_gflops`), and from the
    measured `data` (default `load_sizes()`) ``gflops`` and ``cublas_gflops`` (the row's own
    run's; None where not measured). The side-by-side table of lesson 08, section 8."""
    M = N if M is None else M
    K = N if K is None else K
    data = load_sizes() if data is ... else data
    out = []
    for name, p in (candidates() if configs is None else configs):
        s = ladder.get(name)
        p = s.resolve(p)
        regs, source = registers(s, p, data=data)
        per_sm, _ = blocks_per_sm(s, p, regs)
        g, w = model_gflops(name, p, M, N, K, ref=ref, data=data)
        row = data.row(name, p, M, N, K) if data is not None else None
        out.append({"step": name, "params": p, "label": shape_label(name, p),
                    "registers": regs, "registers_source": source, "blocks_per_sm": per_sm,
                    "waves": w, "model_gflops": g,
                    "gflops": None if row is None or not usable(row) else row["gflops"],
                    "cublas_gflops": None if data is None else
                    data.cublas(M, N, K, run=None if row is None else run_of(row))})
    return out
