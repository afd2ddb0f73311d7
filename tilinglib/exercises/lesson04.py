"""Exercises of lesson 04 (choosing a tile size): shared bytes, threads, blocks per SM.

Every check compares with what the course's tools say: the emulator's compiled kernel
(`shared_size_bytes`, a launch of the block) and `tilinglib.occupancy` (NBVAL-stable: no
GPU is used).
"""

from __future__ import annotations

import warnings

from functools import lru_cache

import numpy as np

from ..toolchain.measure import metrics as ncu_names
from . import Wrong, exercise
from .common import (as_tuple, close, compiled_shared_bytes, launch_dims, require_number,
                     require_whole)
from ..gpu import MAX_THREADS_PER_BLOCK


@lru_cache(maxsize=None)
def _h200_registers(tile: int) -> int:
    """nvcc's register count for the tiled kernel on the H200 (the course's reference data)."""
    from ..reference import load
    return int(load("h200").run("sgemm_tiled", 4096, tile=tile, pad=0).extra["registers"])


def _occ(threads, regs, static, **kw):
    from ..occupancy import occupancy
    return occupancy(threads, registers_per_thread=regs, static_shared=static, **kw)


# --- 04.1 ------------------------------------------------------------------------------------

@exercise("04.1", "Shared memory per block, from the declarations")
def _shared_bytes(answer):
    if not isinstance(answer, dict):
        raise Wrong("the answer is the dict the cell builds: "
                    "{(tile, pad): shared_bytes(tile, pad)}.")
    for tile in (4, 8, 16, 32):
        for pad in (0, 1):
            if (tile, pad) not in answer:
                raise Wrong(f"the dict has no entry for (tile, pad) = ({tile}, {pad}); keep the "
                            f"cell's last line as it is.")
            compiled = compiled_shared_bytes("tiled", tile, pad)
            got = require_number(answer[tile, pad], f"shared_bytes({tile}, {pad})")
            if got == compiled:
                continue
            where = (f"at TILE = {tile}, PAD = {pad} your formula gives {got:,.0f} B; the "
                     f"compiled kernel's shared_size_bytes is {compiled:,} B")
            if got == compiled / 2:
                raise Wrong(f"{where}: that is one array. The kernel declares two, As and Bs, "
                            f"each TILE rows of TILE + PAD floats.")
            if got == compiled / 4:
                raise Wrong(f"{where}: that counts floats, not bytes. A float is 4 bytes.")
            if pad and got == 2 * tile * tile * 4:
                raise Wrong(f"{where}: PAD is missing. It adds one float to every row: each "
                            f"array is TILE x (TILE + PAD) floats.")
            if pad and got == 2 * (tile * tile + pad) * 4:
                raise Wrong(f"{where}: PAD adds a float to every one of the TILE rows, not one "
                            f"float per array.")
            raise Wrong(f"{where}. Count it from the declarations: 2 arrays x TILE rows x "
                        f"(TILE + PAD) floats x 4 bytes.")
    return ("equal to the compiled kernel at every TILE and PAD: 2,048 B at TILE = 16, "
            "8,448 B at TILE = 32 padded. The footprint grows with TILE squared.")


# --- 04.2 ------------------------------------------------------------------------------------

@exercise("04.2", "The largest tile one thread per element can launch")
def _largest_tile(answer):
    from .. import recipes
    from ..toolchain.backends.emulator import In, Out
    from ..errors import TilingLibError
    from ..sgemm import random_matrices, relative_error

    tile, block = as_tuple(answer, 2, "a pair: (largest_tile, block)")
    if isinstance(block, (tuple, list)) and any(b is ... for b in block):
        raise Wrong("fill in the block too: replace the ... in block = (..., ..., 1).")
    tile = require_whole(tile, "largest_tile")
    if tile < 1:
        raise Wrong(f"largest_tile should be a positive whole number, not {tile!r}.")
    if tile * tile > MAX_THREADS_PER_BLOCK:
        raise Wrong(f"TILE = {tile} needs TILE x TILE = {tile * tile:,} threads in a block: "
                    f"over the limit of 1,024 threads per block, so the launch is refused "
                    f"(shared memory would not be what stops it).")
    if tile < 32:
        raise Wrong(f"TILE = {tile} launches ({tile * tile:,} threads), but it is not the "
                    f"largest: a block may hold 1,024 threads, and 32 x 32 = 1,024 is exactly "
                    f"the limit.")
    if not isinstance(block, (tuple, list)) or len(block) not in (2, 3):
        raise Wrong(f"block should be a tuple (bx, by, 1), as in f(..., block=...), "
                    f"not {block!r}.")
    block = launch_dims(block, "the block")
    n = tile
    A, B = random_matrices(n, seed=4)
    C = np.zeros((n, n), dtype=np.float32)
    f = recipes.get("tiled").compile({"TILE": tile}, emulator=True)
    try:
        with warnings.catch_warnings():
            # The emulator's own warnings (a block that does not match the tile) would
            # repeat, or contradict, what this check says about the block.
            warnings.simplefilter("ignore")
            f(np.int32(n), In(A), In(B), Out(C), block=block, grid=(1, 1), hazards="ignore")
    except TilingLibError as err:
        hint = ("" if len(block) == 2 or tuple(block[:2]) == (tile, tile) else
                "\nThe kernel reads threadIdx.x as the column and threadIdx.y as the row of a "
                "TILE x TILE patch: the block is (TILE, TILE, 1).")
        raise Wrong(f"TILE = {tile} is right, but the launch with block={block} fails "
                    f"({type(err).__name__}): {str(err).splitlines()[0]}{hint} For TILE = "
                    f"{tile}: block=({tile}, {tile}, 1).") from None
    threads = int(np.prod(block))
    if tuple(block[:2]) != (tile, tile) or relative_error(C, A, B) > 1e-4:
        raise Wrong(f"block={block} launches ({threads:,} threads), but C is wrong (relative "
                    f"error {relative_error(C, A, B):.1e}): the kernel reads threadIdx.x as "
                    f"the column and threadIdx.y as the row of a TILE x TILE patch, so the "
                    f"block must be (TILE, TILE, 1).")
    return (f"TILE = {tile} with block={block}: 1,024 threads, exactly the limit, and C "
            f"matches NumPy. TILE = 64 would need 4,096.")


# --- 04.3 ------------------------------------------------------------------------------------

_CAPS = ("by_warps", "by_registers", "by_shared", "by_slots", "blocks")


@exercise("04.3", "Blocks per SM at TILE = 16, resource by resource")
def _caps_tile16(answer):
    answer = as_tuple(answer, 5, "five numbers: (by_warps, by_registers, by_shared, "
                                 "by_slots, blocks)")
    got = dict(zip(_CAPS, (require_number(v, name) for v, name in zip(answer, _CAPS))))
    occ = _occ(256, 32, 2048)
    want = dict(by_warps=occ.blocks_by_warps, by_registers=occ.blocks_by_registers,
                by_shared=occ.blocks_by_shared, by_slots=occ.blocks_by_slots,
                blocks=occ.active_blocks)
    if got["by_warps"] != want["by_warps"]:
        hint = (" That is threads, not warps: 2,048 / 256 gives the same 8." if
                got["by_warps"] == 64 // 256 else
                " A block of 256 threads is 8 warps, and the SM holds 64 warps.")
        raise Wrong(f"by_warps = {got['by_warps']:g}; tl.occupancy says {want['by_warps']}.{hint}")
    if got["by_registers"] != want["by_registers"]:
        hint = (" That divides by the registers of one thread; a block needs 256 threads x "
                "32 registers = 8,192." if got["by_registers"] == 65536 // 32 else
                " A block needs 256 x 32 = 8,192 of the SM's 65,536 registers.")
        raise Wrong(f"by_registers = {got['by_registers']:g}; tl.occupancy says "
                    f"{want['by_registers']}.{hint}")
    if got["by_shared"] != want["by_shared"]:
        if got["by_shared"] == 233472 // 2048:
            hint = (" You left out the 1,024 B the driver reserves for every block "
                    "(lim.reserved_shared_per_block): a block takes 2,048 + 1,024 = 3,072 B.")
        elif got["by_shared"] == 48 * 1024 // 2048 or got["by_shared"] == 48 * 1024 // 3072:
            hint = (" 48 KiB is what one block may use; the SM has 233,472 B "
                    "(lim.max_shared_per_sm) to share among its blocks.")
        else:
            hint = " Divide the SM's 233,472 B by what one block takes, 2,048 + 1,024 B reserved."
        raise Wrong(f"by_shared = {got['by_shared']:g}; tl.occupancy says "
                    f"{want['by_shared']}.{hint}")
    if got["by_slots"] != want["by_slots"]:
        raise Wrong(f"by_slots = {got['by_slots']:g}: an SM of compute capability 9.0 has "
                    f"{want['by_slots']} block slots (lim.max_blocks_per_sm).")
    if got["blocks"] != want["blocks"]:
        raise Wrong(f"blocks = {got['blocks']:g}, but every resource must have room: the SM "
                    f"holds the smallest of the four caps, {want['blocks']}.")
    return (f"{occ.active_blocks} blocks of 8 warps = 64 warps, 100% occupancy, limited by "
            f"{' and '.join(occ.limited_by)}; shared memory would allow {occ.blocks_by_shared}.")


# --- 04.4 (end of lesson, exercise 1) --------------------------------------------------------

@exercise("04.4", "Another GPU: compute capability 8.9")
def _cc89(answer):
    from ..launch import DeviceLimits

    lim89, losing = as_tuple(answer, 2, "a pair: (lim89, losing), a DeviceLimits and a "
                                        "tuple of tiles")
    if not isinstance(lim89, DeviceLimits):
        raise Wrong(f"lim89 should be tl.launch.DeviceLimits(...), not {type(lim89).__name__}.")
    need = {"max_shared_per_sm": 100 * 1024, "max_threads_per_sm": 1536, "max_blocks_per_sm": 24}
    for field, value in need.items():
        if getattr(lim89, field) != value:
            raise Wrong(f"lim89.{field} is {getattr(lim89, field):,}; the GPU has {value:,} "
                        f"(pass {field}={value} to DeviceLimits).")
    occs = {t: _occ(t * t, _h200_registers(t),
                    compiled_shared_bytes("tiled", t, 0), limits=lim89)
            for t in (4, 8, 16, 32)}
    want = tuple(t for t, occ in occs.items() if occ.occupancy < 1)
    try:
        got = tuple(sorted(int(t) for t in losing))
    except TypeError:
        got = (int(require_number(losing, "losing")),)
    if got != want:
        lines = []
        for t, occ in occs.items():
            blocks = f"{occ.active_blocks} block{'s' if occ.active_blocks != 1 else ''}"
            warps = f"{occ.warps_per_block} warp{'s' if occ.warps_per_block != 1 else ''}"
            lines.append(f"TILE={t}: {blocks} x {warps} = "
                         f"{occ.active_warps}/{occ.max_warps} ({occ.percent:.1f}%)")
        raise Wrong(f"losing = {got}; with lim89, tl.occupancy gives\n" + "\n".join(lines) +
                    "\nThe tiles under 100% are the ones that lose.")
    return ("TILE = 4 (24 block slots of 1 warp: 24 of 48 warps) and TILE = 32 (a block of 32 "
            "warps fits once in 48: 67%). A larger tile can cost occupancy on a smaller SM.")


# --- 04.5 (end of lesson, exercise 2) --------------------------------------------------------

@exercise("04.5", "72 registers per thread")
def _registers72(answer):
    answer = as_tuple(answer, 2, "a pair: (percent_16, percent_32)")
    p16, p32 = (require_number(v, n) for v, n in zip(answer, ("percent_16", "percent_32")))
    occ16 = _occ(256, 72, 2048)
    if abs(p16 - occ16.percent) > 0.5:           # 38 (the rounded print) is accepted
        hint = (" That is a fraction: give a percentage." if close(100 * p16, occ16.percent) else
                " A warp's registers are allocated in units of 256 and each of the 4 "
                "sub-partitions holds 16,384: 72 x 32 = 2,304 per warp, 7 warps per "
                "sub-partition, 28 per SM, so 3 blocks of 8 warps.")
        raise Wrong(f"percent_16 = {p16:g}; tl.occupancy says {occ16.blocks_by_registers} blocks "
                    f"of 8 warps = {occ16.percent:g}%.{hint}")
    if p32 != 0:
        raise Wrong(f"percent_32 = {p32:g}: a block of 1,024 threads x 72 registers needs "
                    f"73,728 registers, more than the 65,536 one block may have "
                    f"(lim.max_regs_per_block). It cannot launch at all: 0%.")
    return (f"TILE = 16: {occ16.active_blocks} blocks, {occ16.percent:g}% (limited by registers). "
            f"TILE = 32: the block does not launch (73,728 registers > 65,536).")


# --- 04.6 (end of lesson, exercise 3) --------------------------------------------------------

@exercise("04.6", "The double-buffered kernel's shared memory")
def _double_buffered(answer):
    answer = as_tuple(answer, 2, "a pair: (db_bytes, db_cap)")
    got_bytes, got_cap = (require_number(v, n) for v, n in zip(answer, ("db_bytes", "db_cap")))
    compiled = compiled_shared_bytes("tiled_db", 32)
    if got_bytes != compiled:
        hint = (" That is one buffer: As[2][TILE][TILE] holds two tiles, and so does Bs."
                if got_bytes == compiled / 2 else
                " Count the declarations: 2 arrays x 2 buffers x TILE x TILE floats x 4 B.")
        raise Wrong(f"db_bytes = {got_bytes:,.0f}; the compiled kernel's shared_size_bytes is "
                    f"{compiled:,} B.{hint}")
    occ = _occ(1024, 32, compiled)
    if got_cap != occ.blocks_by_shared:
        hint = (" Add the 1,024 B reserved per block: 16,384 + 1,024 = 17,408 B."
                if got_cap == 233472 // compiled else
                " Divide the SM's 233,472 B by 16,384 + 1,024 B.")
        raise Wrong(f"db_cap = {got_cap:g}; tl.occupancy says {occ.blocks_by_shared}.{hint}")
    return (f"{compiled:,} B and {occ.blocks_by_shared} blocks by shared memory, far above the "
            f"{occ.blocks_by_warps} the warps allow: occupancy stays at {occ.percent:.0f}%.")


# --- 04.7 (end of lesson, exercise 4) --------------------------------------------------------

@exercise("04.7", "Where the driver lands")
def _configs(answer):
    from ..occupancy import SHARED_CONFIGS_CC90
    from ..reference import load

    enough, chosen = as_tuple(answer, 2, "a pair: (enough_kib, chosen_kib)")
    try:
        got = tuple(sorted(int(k) for k in enough))
    except TypeError:
        raise Wrong("enough_kib should be a tuple of configurations in KiB, "
                    "such as (8, 16).") from None
    per_block = 2048 + 1024
    want = tuple(c // 1024 for c in SHARED_CONFIGS_CC90 if c // per_block >= 8)
    if got != want:
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        parts = []
        if extra:
            k = extra[0]
            parts.append(f"{k} KiB holds only {k * 1024 // per_block} blocks of 3,072 B "
                         f"(2,048 + 1,024 reserved), fewer than 8")
        if missing:
            k = missing[0]
            parts.append(f"{k} KiB is missing: it holds {k * 1024 // per_block} blocks of "
                         f"3,072 B, at least 8")
        raise Wrong("; ".join(parts) + ". A configuration is enough when config // 3,072 >= 8.")
    counters = load("h200").counters("sgemm_tiled", 1024, tile=16, pad=0).metrics
    driver = int(counters[ncu_names.SHARED_CONFIG_SIZE]) // 1024
    if require_number(chosen, "chosen_kib") != driver:
        raise Wrong(f"chosen_kib = {chosen!r}; Nsight Compute's launch__shared_mem_config_size "
                    f"for TILE = 16 (ref.counters('sgemm_tiled', 1024, tile=16, pad=0)) says "
                    f"{driver} KiB.")
    return (f"{', '.join(map(str, want))} KiB give at least 8; the driver chose {driver} KiB "
            f"(a cap of {driver * 1024 // per_block}), not the smallest that is enough.")
