"""Memory of an emulated launch: global, shared and local spaces, byte-addressed, and its rules.

What every access shares, written once: the address encoding below, the global
allocations of a launch (`GlobalMemory`), the launch's `Counters`, the counting rules of one
access (Nsight Compute's requests, sectors, wavefronts and bank conflicts, per warp), and the
wording of a fault (`MemoryAccessError` naming the array, the element, the thread and the
block). The accesses themselves (resolve, check, count, load, store) are access.py's.

Addresses. A pointer is a 64-bit integer ``(region << 40) + 2**39 + offset``. Each global
allocation (one per kernel argument) has its own region; shared memory is region 1 (the same
addresses in every block, each block with its own storage) and local memory region 2 (each
thread its own). Placing offset 0 in the middle of a region means an index that runs off
either end of an array still decodes to that array, so the error names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import MemoryAccessError
from ...gpu import BANK_BYTES, BANKS, SECTOR_SHIFT, WARP_SIZE, ceil_div, round_up

REGION_SHIFT = 40
BIAS = 1 << 39
NULL_REGION = 0
SHARED_REGION = 1
LOCAL_REGION = 2
FIRST_GLOBAL_REGION = 3

PRINTF_BUFFER_BYTES = 1 << 20       # a GPU's printf buffer (cudaLimitPrintfFifoSize) default


def make_address(region: int, offset: int = 0) -> int:
    return (region << REGION_SHIFT) + BIAS + offset


# Each static __shared__ array is its own allocation: its addresses carry tag k (the array's
# index in KernelCode.shared, plus one) in bits 32..38 above its byte offset, which stays the
# offset in the block's shared memory (banks, counters and the tracker see only the offset).
# Tag 0 is extern (dynamic) shared memory, bounded by the whole of the block's shared memory.
SHARED_TAG_SHIFT = 32
SHARED_TAG_HALF = 1 << (SHARED_TAG_SHIFT - 1)


def shared_address(tag: int, offset: int) -> int:
    """The address of byte `offset` of the block's shared memory, in shared array `tag`."""
    return make_address(SHARED_REGION, (tag << SHARED_TAG_SHIFT) + offset)


@dataclass
class LocalVar:
    """A local array of a kernel: name, C type, byte offset in each thread's local memory,
    declaration line, and the declaration as the student wrote it (`acc[TM][TN]`)."""

    name: str
    ctype: object
    offset: int
    line: int | None = None
    text: str = ""


@dataclass
class Allocation:
    """One array in global memory. `buf` is a uint8 array padded to a multiple of 16 bytes."""

    name: str
    region: int
    size: int
    buf: np.ndarray
    elem_size: int = 4
    readonly: bool = False
    views: dict = field(default_factory=dict)
    # False for an argument passed as In(...): PyCUDA does not copy it back, so a store
    # into it is lost when the launch ends (execute.Launch.lost_write warns).
    copied_back: bool = True
    # For an Out(...) argument: which elements a store has written (one bool per element;
    # a store of any width marks every element it touches), else None.
    written: np.ndarray | None = None

    def mark_written(self, off: np.ndarray, size: int) -> None:
        """Record a store of `size` bytes at byte offsets `off` (access.MemoryAccess.store)."""
        e = off // self.elem_size
        self.written[e] = True
        for k in range(1, ceil_div(size, self.elem_size)):
            self.written[e + k] = True

    def view(self, dtype: np.dtype) -> np.ndarray:
        v = self.views.get(dtype)
        if v is None:
            v = self.buf.view(dtype)
            self.views[dtype] = v
        return v


class GlobalMemory:
    """The allocations of one launch (kernel arguments and `__constant__` arrays)."""

    def __init__(self):
        self.allocations: list[Allocation] = []

    def allocate(self, name: str, nbytes: int, *, elem_size: int = 4, init: bytes | None = None,
                 readonly: bool = False, copied_back: bool = True,
                 track_writes: bool = False) -> int:
        """Allocate `nbytes` (filled with `init`, else 0xFF poison) and return its address.
        `copied_back=False` marks an In(...) argument, whose stores are lost;
        `track_writes=True` (an Out(...) argument) records which elements stores write."""
        region = FIRST_GLOBAL_REGION + len(self.allocations)
        padded = max(16, round_up(nbytes, 16))
        buf = np.full(padded, 0xFF, dtype=np.uint8)
        if init is not None:
            buf[:len(init)] = np.frombuffer(init, dtype=np.uint8)
        self.allocations.append(Allocation(name, region, nbytes, buf, elem_size, readonly,
                                           copied_back=copied_back))
        if track_writes:
            self.allocations[-1].written = np.zeros(nbytes // max(elem_size, 1), dtype=bool)
        return make_address(region)

    def lookup(self, region: int) -> Allocation | None:
        i = region - FIRST_GLOBAL_REGION
        if 0 <= i < len(self.allocations):
            return self.allocations[i]
        return None


@dataclass
class Counters:
    """Running totals of one launch; report.LaunchReport is built from them."""

    flops: int = 0
    global_load_requests: int = 0
    global_load_sectors: int = 0
    global_load_bytes_requested: int = 0
    global_store_requests: int = 0
    global_store_sectors: int = 0
    global_store_bytes: int = 0
    shared_load_instructions: int = 0
    shared_load_wavefronts: int = 0
    shared_load_bytes: int = 0
    shared_store_instructions: int = 0
    shared_store_wavefronts: int = 0
    shared_store_bytes: int = 0
    shared_load_bank_conflicts: int = 0
    shared_store_bank_conflicts: int = 0
    barriers: int = 0
    global_atomic_requests: int = 0
    shared_atomic_instructions: int = 0


# ----------------------------------------------------------------------------- counting

def _distinct_per_warp(warp: np.ndarray, key: np.ndarray, full_warps: bool) -> tuple[int, int]:
    """(warps with at least one active lane, distinct (warp, key) pairs).

    `warp` is sorted ascending (lanes are stored in thread order). With `full_warps` every
    warp has all 32 lanes active and lanes are contiguous, so rows of 32 can be used.
    """
    n = key.shape[0]
    if n == 0:
        return 0, 0
    if full_warps:
        return distinct_per_row(key.reshape(-1, WARP_SIZE))
    order = np.lexsort((key, warp))
    w, k = warp[order], key[order]
    new_warp = w[1:] != w[:-1]
    new_pair = new_warp | (k[1:] != k[:-1])
    return int(np.count_nonzero(new_warp)) + 1, int(np.count_nonzero(new_pair)) + 1


def distinct_per_row(k: np.ndarray) -> tuple[int, int]:
    """(rows, distinct (row, value) pairs) of a 2-D array whose rows are the active lanes of
    one warp each (all rows of one length)."""
    if k.shape[0] == 0:
        return 0, 0
    if k.shape[1] <= 1:
        return k.shape[0], k.shape[0]
    d = k[:, 1:] - k[:, :-1]             # ascending rows: distinct = rows + non-zero steps
    if d.min() < 0:
        k = np.sort(k, axis=1)
        d = k[:, 1:] - k[:, :-1]
    return k.shape[0], int(np.count_nonzero(d)) + k.shape[0]


def _wavefronts(group: np.ndarray, words: np.ndarray, full_rows: int) -> int:
    """Shared-memory wavefronts: for each group of lanes served together, the largest number
    of distinct 4-byte words that fall in one bank (a word read by many lanes is one
    broadcast); summed over groups.

    `group` is sorted ascending; with `full_rows` > 0 the lanes form that many rows of
    equal length (the fast path).
    """
    n = words.shape[0]
    if n == 0:
        return 0
    if full_rows:
        w = words.reshape(full_rows, -1)
        if not (w[:, 1:] >= w[:, :-1]).all():
            w = np.sort(w, axis=1)
        elif (w[:, -1] - w[:, 0] < BANKS).all():
            # Sorted words spanning fewer than 32 words fall in distinct banks: one each.
            return full_rows
        first = np.ones(w.shape, dtype=bool)
        first[:, 1:] = w[:, 1:] != w[:, :-1]
        banks = (w % BANKS) + (np.arange(full_rows, dtype=np.int64) * BANKS)[:, None]
        counts = np.bincount(banks[first], minlength=full_rows * BANKS)
        return int(counts.reshape(full_rows, BANKS).max(axis=1).sum())
    order = np.lexsort((words, group))
    g, w = group[order], words[order]
    first = np.ones(n, dtype=bool)
    first[1:] = (g[1:] != g[:-1]) | (w[1:] != w[:-1])
    _, gidx = np.unique(g, return_inverse=True)
    counts = np.bincount(gidx[first] * BANKS + (w[first] % BANKS))
    ngroups = int(gidx.max()) + 1
    counts = np.pad(counts, (0, ngroups * BANKS - counts.shape[0]))
    return int(counts.reshape(ngroups, BANKS).max(axis=1).sum())


def count_global(counters: Counters, is_store: bool, warp: np.ndarray, addr: np.ndarray,
                 size: int, full_warps: bool, split=None) -> None:
    """Add one global access to the counters (l1tex__t_requests/sectors_pipe_lsu_mem_global_op_*).

    Sectors: distinct 32-byte segments per warp; an access of 16 bytes that is aligned never
    straddles two sectors. `split`, when given, maps a per-lane array to 2-D arrays whose
    rows are the warps (every lane active; warps.Warps.split_warps).
    """
    if split is not None:
        requests = sectors = 0
        for rows in split(addr >> SECTOR_SHIFT):
            r, s = distinct_per_row(rows)
            requests, sectors = requests + r, sectors + s
    else:
        requests, sectors = _distinct_per_warp(warp, addr >> SECTOR_SHIFT, full_warps)
    nbytes = addr.shape[0] * size
    if is_store:
        counters.global_store_requests += requests
        counters.global_store_sectors += sectors
        counters.global_store_bytes += nbytes
    else:
        counters.global_load_requests += requests
        counters.global_load_sectors += sectors
        counters.global_load_bytes_requested += nbytes


def count_shared_words(counters: Counters, is_store: bool, words: np.ndarray, warp: np.ndarray,
                       full_warps: bool) -> None:
    """`count_shared` for a 4-byte access given as word indices, every lane of the batch
    active (the fast load path)."""
    n = words.shape[0]
    requests = n // WARP_SIZE if full_warps else int(np.count_nonzero(warp[1:] != warp[:-1])) + 1
    wavefronts, ideal = shared_wavefronts(warp, None, words << 2, 4, is_store, full_warps)
    _add_shared(counters, is_store, requests, wavefronts, wavefronts - ideal, n * 4)


def _add_shared(counters: Counters, is_store: bool, requests: int, wavefronts: int,
                conflicts: int, nbytes: int) -> None:
    if is_store:
        counters.shared_store_instructions += requests
        counters.shared_store_wavefronts += wavefronts
        counters.shared_store_bank_conflicts += conflicts
        counters.shared_store_bytes += nbytes
    else:
        counters.shared_load_instructions += requests
        counters.shared_load_wavefronts += wavefronts
        counters.shared_load_bank_conflicts += conflicts
        counters.shared_load_bytes += nbytes


def shared_wavefronts(warp: np.ndarray, lane: np.ndarray | None, offset: np.ndarray, size: int,
                      is_store: bool, full_warps: bool) -> tuple[int, int]:
    """Wavefronts of one shared-memory access instruction, summed over the warps doing it,
    and the ideal number (what it would take without bank conflicts): the one rule behind
    `LaunchReport`'s shared counters, `f.last_trace` and `tilinglib.banks.wavefronts`.

    `warp`: int64, one per active lane, ascending (lanes in thread order); `lane`: the lane
    (0-31) of each, needed for 8- and 16-byte accesses only; `offset`: byte address in the
    block's shared memory, per lane; `size`: bytes per lane; `full_warps`: every warp has
    all 32 lanes active and contiguous (the fast path).

    The rule, read on an H200 with Nsight Compute (bench/gpu_shared_widths.py, 378
    readings, all equal; docs/emulator.md): the lanes are served in *phases*, each needing
    as many wavefronts as the most distinct 4-byte words that one of the 32 banks holds
    among its active lanes' words (a word wanted by several lanes is one broadcast); a
    phase with no active lane costs nothing. The ideal is one wavefront per phase that has
    an active lane; the difference is ncu's l1tex__data_bank_conflicts_pipe_lsu_mem_shared.

    - 4 bytes or fewer: the warp is one phase.
    - 8-byte load (LDS.64): the warp is one phase when no lane pair (2k, 2k+1) has both
      lanes active at different addresses, else two, lanes 0-15 and 16-31.
    - 16-byte load (LDS.128): the same for each half warp: one phase when none of its
      lane pairs has two active lanes at different addresses, else its two quarters.
    - 8- and 16-byte stores: always per half warp (STS.64) and quarter warp (STS.128).
    - other sizes (structs nvcc splits into their fields' accesses): fixed phases of
      128 bytes of lanes, as for stores.

    Returns (wavefronts, ideal wavefronts), both int.
    """
    n = offset.shape[0]
    if n == 0:
        return 0, 0
    phase, lanes_per_row = shared_phases(warp, lane, offset, size, is_store, full_warps)
    per_lane = ceil_div(size, BANK_BYTES) if size > BANK_BYTES else 1
    rows = n // lanes_per_row if lanes_per_row else 0
    words = offset >> 2
    if per_lane > 1:
        words = (words[:, None] + np.arange(per_lane)).reshape(-1)
        phase = np.repeat(phase, per_lane)
    wavefronts = _wavefronts(phase, words, rows)
    ideal = rows if rows else int(np.count_nonzero(phase[1:] != phase[:-1])) + 1
    return wavefronts, ideal


def shared_phases(warp: np.ndarray, lane: np.ndarray | None, offset: np.ndarray, size: int,
                  is_store: bool, full_warps: bool) -> tuple[np.ndarray, int]:
    """The phase of each active lane of one shared access (see `shared_wavefronts`, same
    arguments): int64 ids, ascending, equal for lanes served together; and the lanes per
    phase when every phase has the same number of lanes and `full_warps` (else 0)."""
    n = offset.shape[0]
    if size <= 4:
        return warp, (WARP_SIZE if full_warps else 0)
    if size in (8, 16) and not is_store:
        span = WARP_SIZE if size == 8 else WARP_SIZE // 2       # lanes one phase may serve
        if full_warps:
            pairs = offset.reshape(-1, span // 2, 2)
            split = np.repeat((pairs[:, :, 0] != pairs[:, :, 1]).any(axis=1), span)
        else:
            key = warp * WARP_SIZE + lane
            both = (key[1:] >> 1) == (key[:-1] >> 1)
            differ = both & (offset[1:] != offset[:-1])
            unit = key // span
            split = np.isin(unit, unit[1:][differ])
        # A (warp, span) unit is one phase, or its two halves when split.
        phase = (warp * WARP_SIZE + lane) // span * 2 + (split & ((lane // (span // 2)) % 2 == 1))
        if full_warps and (split.all() or not split.any()):
            return phase, (span // 2 if split[0] else span)
        return phase, 0
    per = max(1, WARP_SIZE // ceil_div(size, BANK_BYTES))
    phase = warp * ceil_div(WARP_SIZE, per) + lane // per
    return phase, (per if full_warps and WARP_SIZE % per == 0 and n % per == 0 else 0)


def count_shared(counters: Counters, is_store: bool, warp: np.ndarray, lane: np.ndarray,
                 offset: np.ndarray, size: int, full_warps: bool) -> None:
    """Add one shared access (smsp__inst_executed_op_shared_*,
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_* and
    l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_*): wavefronts by `shared_wavefronts`."""
    n = offset.shape[0]
    if n == 0:
        return
    if full_warps:
        requests = n // WARP_SIZE
    else:
        requests = int(np.count_nonzero(warp[1:] != warp[:-1])) + 1
    wavefronts, ideal = shared_wavefronts(warp, lane, offset, size, is_store, full_warps)
    _add_shared(counters, is_store, requests, wavefronts, wavefronts - ideal, n * size)


# ----------------------------------------------------------------------------- errors

def describe_element(layout_name: str, shape: tuple | None, elem_size: int, offset: int) -> str:
    """`As[3][7]` for a byte offset into an array of `shape`, or `A[12]` for a flat one."""
    if elem_size <= 0:
        return f"{layout_name}+{offset}B"
    index, rem = divmod(offset, elem_size)
    if shape and all(d for d in shape[1:]):
        idx = []
        for d in reversed(shape[1:]):
            index, r = divmod(index, d)
            idx.append(r)
        idx.append(index)
        text = layout_name + "".join(f"[{i}]" for i in reversed(idx))
    else:
        text = f"{layout_name}[{index}]"
    if rem:
        text += f" (+{rem} bytes)"
    return text


def out_of_bounds(kind: str, what: str, size: int, offset: int, nbytes: int) -> str:
    if offset < 0:
        where = f"{-offset} bytes before the start of {what} ({nbytes} bytes)"
    elif offset == nbytes:
        where = f"just past the end of {what} ({nbytes} bytes): one element too far"
    elif offset > nbytes:
        where = f"{offset - nbytes} bytes past the end of {what} ({nbytes} bytes)"
    else:
        where = f"straddling the end of {what} ({nbytes} bytes)"
    return f"Invalid {kind} of size {size} bytes: the address is {where}"


def raise_access_error(warps, lane: int, message: str, line: int | None) -> None:
    """Raise MemoryAccessError for `lane` of the current batch (`warps`: its
    `warps.Warps`, which names the kernel and the lane's block and thread), compute-sanitizer
    style."""
    block, thread = warps.coords(lane)
    raise MemoryAccessError(
        f"{message}\n  at {warps.kernel_name}, kernel.cu:{line}\n"
        f"  by thread {thread} in block {block}\n"
        f"Check the index arithmetic on that line and the guard (if) around it.",
        kernel=warps.kernel_name, line=line, block=block, thread=thread)
