"""Stage 4: launch a compiled kernel over a grid, blocks in batches, threads in lockstep.

Input: a `KernelCode`, the launch's arguments (NumPy scalars and In/Out/InOut arrays), block,
grid and dynamic shared-memory size. Output: the Out/InOut arrays filled, and a
`LaunchReport`.

Each batch holds several whole blocks; every value is a NumPy array with one entry per
thread of the batch (or a scalar when it is the same for all). Running the blocks of a
batch side by side is a legal schedule: CUDA promises nothing about the order of blocks.
`Context` is the state the compiled closures see: the active mask, the variables, the
built-in indices, memory, counters and the hazard tracker.
"""

from __future__ import annotations

import ctypes
import platform
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import (BarrierError, BlockShapeWarning, InputWriteWarning, KernelArgumentError,
                      OutputNotWrittenWarning,
                      KernelRuntimeError, KernelWarning, MemoryAccessError, TilingLibWarning,
                      UninitializedReadWarning,
                      RaceError, StepBudgetExceeded)
from . import atomics
from .closures import SharedVar
from . import memory as M
from .parse import recursion_room
from .races import Hazard, RaceTracker
from .report import LaunchReport
from .trace import Tracer

BATCH_THREADS = 1 << 16
BATCH_BYTES = 256 << 20             # shared + local memory of one batch (see blocks_per_batch)
DEFAULT_MAX_STEPS = 2_000_000
DEFAULT_MAX_SECONDS = 60.0
PRINTF_BUFFER_BYTES = 1 << 20       # a GPU's printf buffer (cudaLimitPrintfFifoSize) default
LARGE_LAUNCH_THREADS = 1 << 22      # above this, warn that the emulator will take minutes


_SHIFTS = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _elements(byte_index: np.ndarray, size: int) -> np.ndarray:
    """Element indices of a view of `size`-byte elements (a shift, not a division)."""
    shift = _SHIFTS.get(size)
    return byte_index >> shift if shift is not None else byte_index // size


# glibc's mallopt() parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
KEEP_FREED_BYTES = 256 << 20         # freed heap memory glibc may keep (M_TRIM_THRESHOLD)
MMAP_THRESHOLD_BYTES = 32 << 20      # requests below this come from the heap (glibc's maximum)
_malloc_tuned: bool | None = None    # keep_temporaries_in_process's answer, once asked


def keep_temporaries_in_process() -> bool:
    """Ask glibc's malloc to keep freed lane arrays for reuse instead of returning them.

    Every operation of an emulated launch makes temporaries of 256-512 KB (one 4- or 8-byte
    value per thread of a batch of 65,536). By default glibc serves each from a fresh
    `mmap` and gives it back on `free`, so the next one page-faults its memory in again
    (about 100,000 page faults for one tiled SGEMM at N=256, 13% of its time). Raising
    M_MMAP_THRESHOLD to 32 MiB and M_TRIM_THRESHOLD to 256 MiB keeps them in the heap. This
    changes the allocator of the whole process, once, at the first launch; it affects only
    speed and how much freed memory the process holds (at most 256 MiB), never a value.
    Returns whether it was applied (False on a C library other than glibc, or if mallopt
    refused)."""
    global _malloc_tuned
    if _malloc_tuned is None:        # one attempt per process
        _malloc_tuned = _mallopt()
    return _malloc_tuned


def _mallopt() -> bool:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                and mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES))


class RaceWarning(KernelWarning):
    """Issued after a launch in which the emulator found shared-memory hazards."""


@dataclass
class LaunchOptions:
    """Per-call emulator settings.

    hazards: "warn" (default: record in the report and issue a RaceWarning), "raise" (stop at
    the first hazard with RaceError) or "ignore" (do not track; faster).
    check_uninitialized: report reads of shared memory nothing wrote.
    max_steps: loop iterations (summed over batches) before StepBudgetExceeded.
    max_seconds: wall-clock seconds before StepBudgetExceeded (None: no limit), looked at in
    every loop iteration and between batches of blocks (so a loop-free grid of 2^31 blocks
    stops too). A safety net for big launches; deterministic budgets (graders) use max_steps.
    max_bytes: global memory the launch may allocate.
    """

    hazards: str = "warn"
    check_uninitialized: bool = True
    max_steps: int = DEFAULT_MAX_STEPS
    max_seconds: float | None = DEFAULT_MAX_SECONDS
    max_bytes: int = 1 << 30
    batch_threads: int = BATCH_THREADS
    trace: bool = False


class Context:
    """Run-time state of one batch of blocks."""

    def __init__(self, launch, block_ids: np.ndarray):
        self.launch = launch
        kc = launch.kernel
        self.kernel_name = kc.name
        bx, by, bz = launch.block
        gx, gy, _ = launch.grid
        tpb = bx * by * bz
        self.tpb = tpb
        self.nblocks = nb = len(block_ids)
        self.T = T = nb * tpb
        lin = np.arange(T, dtype=np.int64)
        self.tib = tib = lin % tpb                      # linear thread id in its block
        self.blk = blk = lin // tpb                     # block index within the batch
        self.tid = ((tib % bx).astype(np.uint32), ((tib // bx) % by).astype(np.uint32),
                    (tib // (bx * by)).astype(np.uint32))
        b = block_ids[blk]
        self.block_ids = block_ids
        self.bid = ((b % gx).astype(np.uint32), ((b // gx) % gy).astype(np.uint32),
                    (b // (gx * gy)).astype(np.uint32))
        self.bdim = tuple(np.uint32(d) for d in launch.block)
        self.gdim = tuple(np.uint32(d) for d in launch.grid)
        self.warps_per_block = warps_per_block = -(-tpb // M.WARP)
        self.warp = blk * warps_per_block + tib // M.WARP
        self.lane = tib % M.WARP
        self.full_warps = tpb % M.WARP == 0
        self.whole = tpb - tpb % M.WARP                 # lanes of a block in full warps
        self.warp_rows = self.split_warps(self.warp)
        self.counters = launch.counters
        self.flops = 0
        self.env = None
        self.depth = 0
        self.mask = np.ones(T, dtype=bool)
        self.full, self.any, self.nactive = True, True, T
        self.ret = np.zeros(T, dtype=bool)
        self.kernel_ret = self.ret
        self.brk = np.zeros(T, dtype=bool)
        self.cont = np.zeros(T, dtype=bool)
        self.gmem = launch.gmem
        self.constant_addresses = launch.constant_addresses
        self.shared_bytes = launch.shared_stride
        self.dynamic_shared_address = np.int64(M.make_address(M.SHARED_REGION,
                                                              launch.dynamic_offset))
        self.shared = np.zeros(nb * self.shared_bytes, dtype=np.uint8)
        self.blk_base = self.blk * self.shared_bytes
        self.blk_base4 = self.blk_base >> 2          # the same, in 4-byte elements
        self.site_cache: dict = {}                   # fast loads: the last one per site
        self.shared_bases: dict = {}                 # blk_base4 + an element offset
        self.shared_views = {}
        self.local_bytes = launch.local_stride
        self.local = np.zeros(T * self.local_bytes, dtype=np.uint8) if self.local_bytes else None
        self.local_views = {}
        # Which 4-byte words of each thread's local memory have been written, when the
        # kernel declares a local array without a value (reads of unset words warn).
        self.local_set = (np.zeros(T * (self.local_bytes // 4), dtype=bool)
                          if kc.check_local and self.local_bytes else None)
        opts = launch.options
        track = opts.hazards != "ignore"
        self.races = None
        if kc.static_shared_bytes or launch.dynamic_bytes:
            if track or opts.check_uninitialized:
                self.races = RaceTracker(nb, self.shared_bytes, check_races=track,
                                         check_uninitialized=opts.check_uninitialized)

    def split_warps(self, v: np.ndarray) -> tuple:
        """`v` (one entry per thread of the batch) as 2-D arrays whose rows are warps: the
        full warps of every block, then (when the block is not a whole number of warps) the
        last, partial, warp of every block. Counts summed over warps need no other order."""
        if self.full_warps:
            return (v.reshape(-1, M.WARP),)
        m = v.reshape(self.nblocks, self.tpb)
        if not self.whole:
            return (m,)
        return (m[:, :self.whole].reshape(-1, M.WARP), m[:, self.whole:])

    def count_shared_words(self, is_store: bool, words, reuse=None) -> int:
        """Count a 4-byte shared access of every lane of the batch, given as word indices
        (the wavefronts of each warp by `memory._wavefronts`, warp rows of equal length);
        returns the wavefronts.

        `reuse`: the wavefronts of an access whose words were these shifted by one amount
        in every lane (`words` may then be None). A uniform shift maps banks onto banks one
        to one and keeps distinct words distinct, so every warp needs the same wavefronts."""
        requests = self.nblocks * self.warps_per_block
        wavefronts = reuse
        if wavefronts is None:
            wavefronts = 0
            for w, g in zip(self.split_warps(words), self.warp_rows):
                wavefronts += M._wavefronts(g.reshape(-1), w.reshape(-1), w.shape[0])
        # Every lane of the batch is active and a 4-byte access serves a warp in one phase
        # (memory.shared_wavefronts), so the ideal is one wavefront per warp: the requests.
        M._add_shared(self.counters, is_store, requests, wavefronts, wavefronts - requests,
                      self.T * 4)
        return wavefronts

    def distinct_per_warp(self, key: np.ndarray) -> tuple[int, int]:
        """(warps, distinct (warp, key) pairs) of an access of every lane of the batch."""
        requests = distinct = 0
        for rows in self.split_warps(key):
            r, d = M.distinct_per_row(rows)
            requests, distinct = requests + r, distinct + d
        return requests, distinct

    # ------------------------------------------------------------------ masks
    def set_mask(self, m: np.ndarray) -> None:
        self.mask = m
        n = int(np.count_nonzero(m))
        self.nactive, self.full, self.any = n, n == self.T, n > 0

    def state(self):
        return self.full, self.any, self.nactive

    def restore(self, mask, state) -> None:
        self.mask = mask
        self.full, self.any, self.nactive = state

    def jumped(self) -> np.ndarray:
        return self.brk | self.cont | self.ret

    def step(self, line, trips=0) -> None:
        """One iteration of the loop at `line` (its `trips`-th in this execution): count it
        against the launch's budgets."""
        launch = self.launch
        launch.steps += 1
        launch.loop_trips[line] = trips
        over_steps = launch.steps > launch.options.max_steps
        if not over_steps and (launch.deadline is None or time.monotonic() < launch.deadline):
            return
        # Blame the loop that has run longest, not the inner loop that happened to be running.
        line = max(launch.loop_trips, key=launch.loop_trips.get)
        lane = int(np.flatnonzero(self.mask)[0]) if self.any else 0
        block, thread = self.coords(lane)
        if over_steps:
            why = f"ran more than {launch.options.max_steps:,} loop iterations"
            knob = f"max_steps=... in the call of {self.kernel_name}"
        else:
            why = f"ran for more than {launch.options.max_seconds:g} s on the CPU emulator"
            knob = f"max_seconds=None in the call of {self.kernel_name}"
        raise StepBudgetExceeded(
            f"{self.kernel_name} {why}: the loop at kernel.cu:{line} had run "
            f"{launch.loop_trips[line]:,} times (thread {thread} in block {block}). Does its "
            f"condition ever become false (is the loop variable advanced)? If the kernel is "
            f"right and only big, use a smaller N, or lift the limit with {knob}.",
            kernel=self.kernel_name, line=line, block=block, thread=thread)

    def leave_loop(self, line) -> None:
        self.launch.loop_trips.pop(line, None)

    def coords(self, lane: int) -> tuple[tuple, tuple]:
        """(blockIdx, threadIdx) of a lane of this batch, as 3-tuples of ints."""
        return (tuple(int(c[lane]) for c in self.bid), tuple(int(c[lane]) for c in self.tid))

    def thread_of(self, tib: int) -> tuple:
        bx, by, _ = self.launch.block
        return (tib % bx, (tib // bx) % by, tib // (bx * by))

    # ------------------------------------------------------------------ memory
    def _active(self, addr):
        """Active lanes (None when all) and their addresses as an int64 array."""
        if self.full:
            lanes = None
            a = addr if isinstance(addr, np.ndarray) else np.full(self.T, addr, dtype=np.int64)
        else:
            lanes = np.flatnonzero(self.mask)
            a = addr[lanes] if isinstance(addr, np.ndarray) else np.full(lanes.shape[0], addr,
                                                                        dtype=np.int64)
        return lanes, a

    def _resolve(self, a: np.ndarray, lanes, t, line, what):
        """Decode addresses of one access: (space, view getter args, flat element index)."""
        size = t.size
        amin, amax = int(a.min()), int(a.max())
        r0 = amin >> M.REGION_SHIFT
        if (amax >> M.REGION_SHIFT) != r0:
            region = a >> M.REGION_SHIFT
            bad = int(np.argmax(region != r0))
            self._fault(lanes, bad, "Invalid address: the threads of one access point into "
                        "different memory spaces (mixing pointers is not supported)", line)
        base = (r0 << M.REGION_SHIFT) + M.BIAS
        span = (amin - base, amax - base)
        off = a - base
        align = t.align
        if r0 == M.SHARED_REGION:
            if span[1] >= M.SHARED_TAG_HALF:
                off, span, var = self._untag(off, span)
            else:
                var = None
            if var is not None:
                # A static array is its own allocation: bounded by its own bytes.
                self._check(off, span, size, align, var.ctype.size, lanes, line, what,
                            "shared", var, start=var.offset)
            else:
                self._check(off, span, size, align, self.launch.shared_total, lanes, line,
                            what, "shared", None)
            # Byte index in the batch's shared storage (block base + offset): used for the
            # data, and as the location key of the hazard tracker.
            flat = (self.blk_base if lanes is None else self.blk_base[lanes]) + off
            return "shared", flat, off, flat
        if r0 == M.LOCAL_REGION:
            limit = self.launch.kernel.local_bytes
            self._check(off, span, size, align, limit, lanes, line, what, "local", None)
            th = np.arange(self.T) if lanes is None else lanes
            return "local", (th * self.local_bytes + off), off, None
        alloc = self.gmem.lookup(r0)
        if alloc is None:
            kind = "a null pointer" if r0 == M.NULL_REGION else "an address that is not in " \
                                                                 "any allocation"
            self._fault(lanes, 0, f"Invalid {what} of size {size} bytes: {kind}", line)
        self._check(off, span, size, align, alloc.size, lanes, line, what, "global", alloc)
        return "global", off, off, alloc

    def _untag(self, off, span):
        """Shared offsets `off` (tagged, see memory.SHARED_TAG_SHIFT; `span` their min and
        max) without their tag: (offsets, (min, max), the static SharedVar all of them point
        into, or None)."""
        lo, hi = span
        t0 = (lo + M.SHARED_TAG_HALF) >> M.SHARED_TAG_SHIFT
        t1 = (hi + M.SHARED_TAG_HALF) >> M.SHARED_TAG_SHIFT
        shared = self.launch.kernel.shared
        if t0 == t1:                     # one array for all lanes: scalars only
            base = t0 << M.SHARED_TAG_SHIFT
            return off - base, (lo - base, hi - base), \
                shared[t0 - 1] if 0 < t0 <= len(shared) else None
        off = off - (((off + M.SHARED_TAG_HALF) >> M.SHARED_TAG_SHIFT) << M.SHARED_TAG_SHIFT)
        return off, (int(off.min()), int(off.max())), None

    def _check(self, off, span, size, align, limit, lanes, line, what, space, alloc,
               start=0):
        """Bounds and alignment of one access: the `limit` bytes from offset `start` of
        `alloc`, an Allocation (global), a static SharedVar (shared), or None (all of the
        block's shared memory, the thread's local memory)."""
        if span[0] < start or span[1] > start + limit - size:
            bad = (off < start) | (off > start + limit - size)
            i = int(np.argmax(bad))
            o = int(off[i]) - start
            name = self._name_of(space, o, alloc)
            msg = M.out_of_bounds(f"__{space}__ {what}" if space != "local" else f"local {what}",
                                  name, size, o, limit)
            var = self._shared_var(o) if space == "shared" and alloc is None else None
            if var is not None and var.dynamic and self.launch.dynamic_bytes == 0:
                msg += (f"\n  '{var.name}' is extern __shared__: its size comes from the launch, "
                        f"and this launch passed shared=0. Pass the bytes it needs, e.g. "
                        f"f(..., shared=TILE * TILE * 4).")
            self._fault(lanes, i, f"{msg}\n  element: {self._element_of(space, o, alloc)}", line)
        # One reduction: the OR of all offsets has a low bit set iff some offset has.
        if align > 1 and int(np.bitwise_or.reduce(off)) & (align - 1):
            mis = (off & (align - 1)) != 0
            if mis.any():
                i = int(np.argmax(mis))
                o = int(off[i])
                self._fault(lanes, i, f"Misaligned {space} {what} of size {size} bytes at "
                            f"{self._element_of(space, o - start, alloc)}: the address must be a "
                            f"multiple of {align}", line)

    def _fault(self, lanes, i, message, line):
        lane = int(i if lanes is None else lanes[i])
        M.raise_access_error(self, lane, message, line)

    def _name_of(self, space, offset, alloc):
        if isinstance(alloc, SharedVar):
            return f"the __shared__ array '{alloc.name}'"
        if alloc is not None:
            return f"the array '{alloc.name}'"
        if space == "shared":
            var = self._shared_var(offset)
            return f"the __shared__ array '{var.name}'" if var else "shared memory"
        return "the thread's local memory"

    def _shared_var(self, offset):
        """The __shared__ variable at byte `offset` (or the nearest one before it). Offsets
        from the start of dynamic shared memory on belong to the extern array(s)."""
        best = None
        dynamic = [v for v in self.launch.kernel.shared if v.dynamic]
        if dynamic and offset >= self.launch.dynamic_offset:
            return dynamic[0]
        for v in self.launch.kernel.shared:
            start = self.launch.dynamic_offset if v.dynamic else v.offset
            end = start + (v.ctype.size if not v.dynamic else self.launch.dynamic_bytes)
            if start <= offset < end or best is None and offset < start:
                return v
            if offset >= start:
                best = v
        return best

    def _element_of(self, space, offset, alloc):
        if isinstance(alloc, SharedVar):
            t = alloc.ctype
            base = t.base_elem if t.is_array else t
            return M.describe_element(alloc.name, t.shape if t.is_array else None, base.size,
                                      offset)
        if alloc is not None:
            return M.describe_element(alloc.name, None, alloc.elem_size, offset)
        if space == "shared":
            var = self._shared_var(offset)
            if var is not None:
                start = self.launch.dynamic_offset if var.dynamic else var.offset
                t = var.ctype
                base = t.base_elem if t.is_array else t
                shape = t.shape if t.is_array else None
                return M.describe_element(var.name, shape, base.size, offset - start)
        return f"byte {offset}"

    def _view(self, space, key, dtype):
        if space == "shared":
            v = self.shared_views.get(dtype)
            if v is None:
                v = self.shared_views[dtype] = self.shared.view(dtype)
            return v
        if space == "local":
            v = self.local_views.get(dtype)
            if v is None:
                v = self.local_views[dtype] = self.local.view(dtype)
            return v
        return key.view(dtype)

    def _count(self, space, is_store, lanes, a, off, key, size, line):
        """Add one access to the counters (and the trace). `key` is the allocation of a
        global access, the byte index in the batch's shared storage of a shared one. Local
        memory (registers to a GPU) and __constant__ memory (the constant cache, not L1TEX)
        are not counted."""
        if space == "local" or space == "global" and key is not None and key.readonly:
            return
        if space == "global":
            key = None
        if self.launch.tracer is not None:
            self.launch.tracer.record(self, space, is_store, lanes, a, off, size, line)
        full = lanes is None and self.full_warps
        warp = self.warp if lanes is None else self.warp[lanes]
        if space == "global":
            M.count_global(self.counters, is_store, warp, a, size, full,
                           self.split_warps if lanes is None and not full else None)
        elif space == "shared":
            if lanes is None and size == 4 and not full:
                self.count_shared_words(is_store, off >> 2)
            else:
                lane = self.lane if lanes is None else self.lane[lanes]
                M.count_shared(self.counters, is_store, warp, lane, off, size, full)
            if self.races is not None:
                tib = self.tib if lanes is None else self.tib[lanes]
                track = self.races.on_write if is_store else self.races.on_read
                found = track(key, tib, line or 0, size)
                if found:
                    self._hazards(found, lanes, line)

    def _count_atomic(self, space, lanes, a, off, key, size):
        """Count an atomic (its own counters: not a load or store in ncu's metrics). Atomics
        are never hazards among themselves; on shared memory they initialise what they hit."""
        warp = self.warp if lanes is None else self.warp[lanes]
        requests = int(np.count_nonzero(warp[1:] != warp[:-1])) + 1
        if space == "global":
            self.counters.global_atomic_requests += requests
        elif space == "shared":
            self.counters.shared_atomic_requests += requests
            if self.races is not None:
                self.races.on_atomic(key, size)

    def _hazards(self, found, lanes, line):
        for kind, i, flat, other_tid, other_line, count in found:
            lane = int(i if lanes is None else lanes[i])
            offset = flat % self.shared_bytes
            var = self._shared_var(offset)
            block, thread = self.coords(lane)
            other = self.thread_of(other_tid) if other_tid is not None and other_tid >= 0 \
                else None
            h = Hazard(kind, self.kernel_name, var.name if var else "shared",
                       self._element_of("shared", offset, None), line, other_line, block,
                       thread, other, count)
            if self.launch.mismatches and var is not None:
                start = self.launch.dynamic_offset if var.dynamic else var.offset
                self.launch.shape_evidence(kind, var, offset - start)
            self.launch.add_hazard(h)

    def load(self, addr, t, line):
        """Load a scalar of C type `t` at `addr` in every active lane."""
        lanes, a = self._active(addr)
        if a.shape[0] == 0:
            return t.dtype.type(0)
        space, index, off, key = self._resolve(a, lanes, t, line, "read")
        size = t.size
        if space == "local" and self.local_set is not None:
            self._check_local_set(index, lanes, line)
        view = self._view(space, key.buf if space == "global" else None, t.dtype)
        values = view[_elements(index, size)]
        self._count(space, False, lanes, a, off, key if space != "local" else None, size, line)
        if lanes is None:
            return values
        out = np.zeros(self.T, dtype=t.dtype)
        out[lanes] = values
        return out

    def load_fast(self, base, index, t, line, site=None):
        """`base[index]` for every thread of the batch, `base` one pointer for all: element
        indices instead of addresses, no lane selection. Returns None whenever the general
        `load` must run instead (a fault to report, a trace to record, local or constant
        memory, a misaligned base, a shared access other than 4 bytes).

        Per `site` (the load expression) the batch keeps its previous fast load: when the
        element indices are the previous ones shifted by one amount `d` in every lane
        (`A[row * N + k]` in a loop over k), their bounds are the previous bounds plus `d`
        and the counters may be reused (see `count_shared_words`, `_count_global_fast`)."""
        if self.launch.tracer is not None:
            return None
        b = int(base)
        region = b >> M.REGION_SHIFT
        size = t.size
        off0 = b - ((region << M.REGION_SHIFT) + M.BIAS)
        low, tagged = 0, None                # lowest element index in bounds; its array
        if region == M.SHARED_REGION and off0 >= M.SHARED_TAG_HALF:
            # A static shared array (memory.SHARED_TAG_SHIFT): bounded by its own bytes.
            tag = (off0 + M.SHARED_TAG_HALF) >> M.SHARED_TAG_SHIFT
            if tag > len(self.launch.kernel.shared):
                return None
            var = self.launch.kernel.shared[tag - 1]
            off0 -= tag << M.SHARED_TAG_SHIFT
            if var.offset % size:
                return None
            low, tagged = var.offset // size, var
        shift = _SHIFTS.get(size)
        if shift is None or off0 % size:
            return None
        if region == M.SHARED_REGION:
            if size != 4:
                return None
            limit = self.launch.shared_total if tagged is None else \
                tagged.offset + tagged.ctype.size
            alloc = None
        else:
            alloc = self.gmem.lookup(region) if region >= M.FIRST_GLOBAL_REGION else None
            if alloc is None or alloc.readonly or size > M.SECTOR_BYTES:
                return None
            limit = alloc.size
        if index.dtype.kind == "b":         # NumPy would read a bool index as a mask
            index = index.astype(np.int64)
        first = off0 >> shift                # element index of the base in its space
        rec = self.site_cache.get(site, False) if site is not None else None
        d = e = None
        if rec and rec[0] == region and rec[1] == first and rec[2].dtype == index.dtype:
            delta = index - rec[2]
            d = int(delta[0])
            # Bounds in range after the shift also rule out wrap-around in `delta`: then
            # every index = previous + d.
            if rec[3] + d < low or (rec[4] + d + 1) * size > limit or np.count_nonzero(delta != d):
                d = None
        if d is None:
            e = index + np.int64(first) if first else index
            # One reduction bounds both ends: a negative index is huge as unsigned.
            hi = int(e.view(_UNSIGNED[e.dtype.itemsize]).max())
            if (hi + 1) * size > limit or low and int(e.min()) < low:
                return None
        if region == M.SHARED_REGION:
            base = self.shared_bases.get(first)
            if base is None:
                base = self.shared_bases[first] = self.blk_base4 + np.int64(first)
            flat_elems = base + index
            values = np.take(self._view("shared", None, t.dtype), flat_elems)
            counts = (self.count_shared_words(False, e, rec[5][0] if d is not None else None),)
        else:
            if e is None:
                e = index + np.int64(first) if first else index
            values = np.take(alloc.view(t.dtype), e)
            counts = self._count_global_fast(e, size, shift, d, rec[5] if d is not None
                                             else None)
        if site is not None:
            if d is not None:
                self.site_cache[site] = (region, first, index, rec[3] + d, rec[4] + d, counts)
            elif rec is False:
                self.site_cache[site] = (region, first, index, int(e.min()), hi, counts)
            else:
                self.site_cache[site] = None        # this site does not repeat: stop trying
        if region == M.SHARED_REGION and self.races is not None:
            found = self.races.on_read_words(flat_elems, self.tib, line or 0)
            if found:
                self._hazards(found, None, line)
        return values

    def _count_global_fast(self, e, size, shift, d, prev) -> tuple:
        """Count a fast global load of element indices `e`; returns (requests, sectors,
        whether each warp read one address). `prev`: those of this site's previous load,
        whose indices were these minus `d` in every lane; when the shift is whole sectors
        (or each warp read a single address) the per-warp sector counts are the same as
        then and are reused; otherwise they are counted afresh."""
        c = self.counters
        if prev is not None and (prev[2] or (d * size) % M.SECTOR_BYTES == 0):
            requests, sectors, one = prev
        else:
            requests, sectors = self.distinct_per_warp(e >> (5 - shift))
            one = prev[2] if prev is not None else \
                all(bool((k == k[:, :1]).all()) for k in self.split_warps(e))
        c.global_load_requests += requests
        c.global_load_sectors += sectors
        c.global_load_bytes += e.shape[0] * size
        return requests, sectors, one

    def store(self, addr, t, value, line):
        """Store `value` (of C type `t`) at `addr` in every active lane."""
        lanes, a = self._active(addr)
        if a.shape[0] == 0:
            return
        space, index, off, key = self._resolve(a, lanes, t, line, "write")
        if space == "global":
            if key.readonly:
                self._fault(lanes, 0, f"Invalid write to __constant__ memory '{key.name}'",
                            line)
            if not key.copied_back:
                self.launch.lost_write(key, line)
            if key.written is not None:
                key.mark_written(index, t.size)
        elif space == "local" and self.local_set is not None:
            self._mark_local_set(index, t.size)
        size = t.size
        view = self._view(space, key.buf if space == "global" else None, t.dtype)
        if isinstance(value, np.ndarray) and lanes is not None:
            value = value[lanes]
        view[_elements(index, size)] = value
        self._count(space, True, lanes, a, off, key if space == "shared" else None, size, line)

    def load_struct(self, addr, t, line):
        """Load a struct (float2, float4, ...) as one access; returns a tuple of components."""
        lanes, a = self._active(addr)
        if a.shape[0] == 0:
            return tuple(f[1].dtype.type(0) for f in t.fields)
        space, index, off, key = self._resolve(a, lanes, t, line, "read")
        if space == "local" and self.local_set is not None:
            self._check_local_set(index, lanes, line)
        self._count(space, False, lanes, a, off, key if space != "local" else None, t.size,
                    line)
        parts = []
        for _, ft, foff in t.fields:
            view = self._view(space, key.buf if space == "global" else None, ft.dtype)
            vals = view[_elements(index + foff, ft.size)]
            if lanes is not None:
                full = np.zeros(self.T, dtype=ft.dtype)
                full[lanes] = vals
                vals = full
            parts.append(vals)
        return tuple(parts)

    def store_struct(self, addr, t, value, line):
        lanes, a = self._active(addr)
        if a.shape[0] == 0:
            return
        space, index, off, key = self._resolve(a, lanes, t, line, "write")
        if space == "global" and not key.copied_back:
            self.launch.lost_write(key, line)
        elif space == "local" and self.local_set is not None:
            self._mark_local_set(index, t.size)
        if space == "global" and key.written is not None:
            key.mark_written(index, t.size)
        for (_, ft, foff), v in zip(t.fields, value):
            view = self._view(space, key.buf if space == "global" else None, ft.dtype)
            if isinstance(v, np.ndarray) and lanes is not None:
                v = v[lanes]
            view[_elements(index + foff, ft.size)] = v
        self._count(space, True, lanes, a, off, key if space == "shared" else None, t.size, line)

    # ------------------------------------------------------------------ reads before writes
    def unset_read(self, site, bad) -> None:
        """Active lanes `bad` read the local scalar of `site` before giving it a value."""
        self.launch.warn_unset(site, self, int(np.argmax(bad)))

    def forget_local(self, w0: int, w1: int) -> None:
        """The active threads enter a local array's declaration (words w0..w1-1 of their
        local memory): its elements have no value again."""
        words = self.local_bytes // 4
        rows = self.local_set.reshape(self.T, words)
        if self.full:
            rows[:, w0:w1] = False
        else:
            rows[self.mask, w0:w1] = False

    def _mark_local_set(self, index, size) -> None:
        w = index >> 2
        self.local_set[w] = True
        for k in range(1, size // 4):
            self.local_set[w + k] = True

    def _check_local_set(self, index, lanes, line) -> None:
        unset = ~self.local_set[index >> 2]
        if unset.any():
            i = int(np.argmax(unset))
            lane = int(i if lanes is None else lanes[i])
            self.launch.warn_unset_local(self, lane, int(index[i]) % self.local_bytes, line)

    # ------------------------------------------------------------------ barriers & warps
    def syncthreads(self, line) -> None:
        """`__syncthreads()`: every thread of a block that has not exited must be here."""
        nb = self.nblocks
        active = np.bincount(self.blk[self.mask], minlength=nb)
        alive = np.bincount(self.blk[~self.kernel_ret], minlength=nb)
        partial = (active > 0) & (active < alive)
        if partial.any():
            b = int(np.argmax(partial))
            missing = np.flatnonzero((self.blk == b) & ~self.mask & ~self.kernel_ret)
            here = np.flatnonzero((self.blk == b) & self.mask)
            block, thread_missing = self.coords(int(missing[0]))
            _, thread_here = self.coords(int(here[0]))
            raise BarrierError(
                f"__syncthreads() at kernel.cu:{line} in {self.kernel_name} was reached by "
                f"{int(active[b])} of the {int(alive[b])} threads of block {block} (thread "
                f"{thread_here} is there, thread {thread_missing} is not). A barrier inside an "
                f"if or a loop that not every thread of the block enters is undefined "
                f"behaviour, and usually a hang or wrong answers on a GPU: move the barrier "
                f"outside the condition, so that all threads reach it.",
                kernel=self.kernel_name, line=line, block=block, thread=thread_missing)
        exited = (active > 0) & (alive < self.tpb)
        if exited.any():
            b = int(np.argmax(exited))
            lane = int(np.flatnonzero(self.blk == b)[0])
            block, thread = self.coords(lane)
            self.launch.add_hazard(Hazard("barrier-after-exit", self.kernel_name, "", "", line,
                                          None, block, thread, None, int(exited.sum())))
        reached = np.flatnonzero(active > 0)
        self.counters.barriers += int(reached.shape[0])
        if self.races is not None:
            self.races.barrier(reached)

    def syncwarp(self, line) -> None:
        """`__syncwarp()`: orders the shared-memory accesses of each warp that runs it (the
        lanes of a warp run in lockstep here, so only the hazard tracker needs to know)."""
        if self.races is None or not self.any:
            return
        wpb = -(-self.tpb // M.WARP)
        keys = np.unique(self.blk[self.mask] * wpb + self.tib[self.mask] // M.WARP)
        self.races.warp_barrier(keys, wpb)

    def _warp_rows(self, v):
        return v.reshape(-1, M.WARP) if isinstance(v, np.ndarray) else v

    def shuffle(self, kind, value, arg, width, t, line):
        """__shfl_*_sync within each warp (inactive source lanes give their last value)."""
        if not isinstance(value, np.ndarray):
            return value
        lane = self.lane
        arg = np.asarray(arg).astype(np.int64)
        width = int(width) if not isinstance(width, np.ndarray) else int(width.flat[0])
        seg = lane & ~(width - 1)
        if kind == "idx":
            src = seg + (arg & (width - 1))
        elif kind == "up":
            src = np.where(lane - seg >= arg, lane - arg, lane)
        elif kind == "down":
            src = np.where(lane - seg + arg < width, lane + arg, lane)
        else:
            other = lane ^ arg
            src = np.where((other & ~(width - 1)) == seg, other, lane)
        index = np.arange(self.T) - lane + src
        index = np.clip(index, 0, self.T - 1)
        return value[index]

    def vote(self, kind, pred):
        pred = np.broadcast_to(np.asarray(pred, dtype=bool), (self.T,)) & self.mask
        act = self.mask
        out = np.zeros(self.T, dtype=np.int64)
        wid = self.warp - self.warp[0]
        if kind == "ballot":
            bits = np.where(pred, np.left_shift(np.int64(1), self.lane), 0)
            sums = np.bincount(wid, weights=bits).astype(np.int64)
            return sums[wid].astype(np.uint32)
        if kind == "any":
            s = np.bincount(wid, weights=pred)
            out = (s[wid] > 0).astype(np.int32)
            return out
        total = np.bincount(wid, weights=act)
        s = np.bincount(wid, weights=pred)
        return (s[wid] == total[wid]).astype(np.int32)

    def atomic(self, op, addr, t, vals, line):
        """Atomic read-modify-write; lanes that hit one address are applied in lane order."""
        lanes, a = self._active(addr)
        if a.shape[0] == 0:
            return t.dtype.type(0)
        space, index, off, key = self._resolve(a, lanes, t, line, "atomic")
        if space == "global" and key.readonly:
            self._fault(lanes, 0, "Invalid atomic on __constant__ memory", line)
        if space == "global" and not key.copied_back:
            self.launch.lost_write(key, line)
        if space == "global" and key.written is not None:
            key.mark_written(index, t.size)
        view = self._view(space, key.buf if space == "global" else None, t.dtype)
        idx = _elements(index, t.size)
        vs = [np.broadcast_to(v, (self.T,))[lanes] if lanes is not None else
              np.broadcast_to(v, (self.T,)) for v in vals]
        old = atomics.apply(op, view, idx, vs, t.dtype)
        self._count_atomic(space, lanes, a, off, key if space == "shared" else None, t.size)
        if lanes is None:
            return old
        out = np.zeros(self.T, dtype=t.dtype)
        out[lanes] = old
        return out

    def device_assert(self, cond, line) -> None:
        """`assert(cond)` in a kernel: stop the launch at the first active thread where the
        condition is false, as a GPU's device-side assert does."""
        if isinstance(cond, np.ndarray):
            bad = self.mask & ~cond
        else:
            bad = self.mask if not cond else None
        if bad is None or not bad.any():
            return
        block, thread = self.coords(int(np.argmax(bad)))
        raise KernelRuntimeError(
            f"Assertion failed at kernel.cu:{line} in {self.kernel_name}, by thread {thread} "
            f"in block {block} ({int(np.count_nonzero(bad))} threads failed it).",
            kernel=self.kernel_name, line=line, block=block, thread=thread)


class Launch:
    """One launch: argument memory, counters, hazards, and the batches that run it."""

    def __init__(self, kernel, block, grid, dynamic_bytes, options: LaunchOptions):
        keep_temporaries_in_process()
        self.kernel = kernel
        self.block = block
        self.grid = grid
        self.dynamic_bytes = dynamic_bytes
        self.options = options
        self.counters = M.Counters()
        self.gmem = M.GlobalMemory()
        self.constant_addresses = []
        self.steps = 0
        self.printf_left = PRINTF_BUFFER_BYTES     # bytes printf may still write (builtins)
        self.loop_trips: dict = {}
        self.deadline = (time.monotonic() + options.max_seconds
                         if options.max_seconds is not None else None)
        self.hazards: dict = {}
        self.tracer = Tracer() if options.trace else None
        static = kernel.static_shared_bytes
        self.dynamic_offset = -(-static // 16) * 16 if dynamic_bytes else static
        self.shared_total = self.dynamic_offset + dynamic_bytes
        self.shared_stride = max(16, -(-self.shared_total // 16) * 16)
        self.local_stride = -(-kernel.local_bytes // 16) * 16
        self.warned: set = set()          # KernelWarning sites already reported
        self.mismatches = block_mismatches(kernel, block)
        self.block_hint = None            # the BlockShapeWarning's text, once issued
        self.shape_found: set = set()     # the mismatches that hazards showed to matter

    # ------------------------------------------------------------------ kernel warnings
    def _warn(self, key, message, category, line) -> None:
        """Issue a KernelWarning once per launch per `key`, at kernel.cu:<line>."""
        if key in self.warned:
            return
        self.warned.add(key)
        warnings.warn_explicit(message, category, "kernel.cu", line or 0)

    def lost_write(self, alloc, line) -> None:
        """A store into an argument passed as In(...): lost when the launch ends."""
        name = alloc.name
        self._warn(("in", name, line),
                   f"kernel {self.kernel.name} writes to {name} at line {line}, but {name} was "
                   f"passed as tl.In(...): its writes are not copied back. Pass it as "
                   f"tl.Out(...) or tl.InOut(...).", InputWriteWarning, line)

    def warn_unwritten(self) -> None:
        """After the launch: an OutputNotWrittenWarning for each Out(...) array with
        elements no store wrote (on a GPU they hold whatever device memory held)."""
        for alloc in self.gmem.allocations:
            if alloc.written is None or alloc.written.all():
                continue
            total = alloc.written.shape[0]
            missing = total - int(np.count_nonzero(alloc.written))
            tpb = self.block[0] * self.block[1] * self.block[2]
            nblocks = self.grid[0] * self.grid[1] * self.grid[2]
            launched = (f"{nblocks:,} block{'s' if nblocks != 1 else ''} of {tpb:,} "
                        f"thread{'s' if tpb != 1 else ''}"
                        + (f" ({nblocks * tpb:,} threads)" if nblocks > 1 else ""))
            self._warn(("unwritten", alloc.name),
                       f"kernel {self.kernel.name}: {missing:,} of {alloc.name}'s {total:,} "
                       f"elements were never written by the kernel: on a GPU they hold "
                       f"garbage. Does the grid cover the whole output? grid={self.grid} "
                       f"launches {launched}.", OutputNotWrittenWarning, self.kernel.line)

    def warn_unset(self, site, ctx, lane) -> None:
        """A local scalar read by thread `lane` of `ctx` before it was given a value."""
        name, line, decl_line, t = site
        if ("unset", name, line) in self.warned:
            return
        block, thread = ctx.coords(lane)
        zero = _ZERO_TEXT.get(getattr(t, "kind", ""), None)
        fix = (f"Write '{t} {name} = {zero};'." if zero is not None else
               f"Give '{name}' a value where it is declared (line {decl_line}).")
        self._warn(("unset", name, line),
                   f"kernel {self.kernel.name}: '{name}' is read at line {line} before it is "
                   f"given a value: on a GPU it starts with whatever its register held. {fix} "
                   f"(The first such read: thread {thread} in block {block}.)",
                   UninitializedReadWarning, line)

    def warn_unset_local(self, ctx, lane, offset, line) -> None:
        """An element of a local array read by thread `lane` before it was written."""
        var = next((v for v in self.kernel.local_vars
                    if v.offset <= offset < v.offset + v.ctype.size), None)
        if var is None:
            return
        if ("unset-local", var.name, line) in self.warned:
            return
        base = var.ctype.base_elem
        element = M.describe_element(var.name, var.ctype.shape, base.size, offset - var.offset)
        block, thread = ctx.coords(lane)
        zero = _ZERO_TEXT.get(base.kind, "0")
        comps = self.kernel.thread_indexed.get(var.name) or ()
        if any(comps):
            # Stored at threadIdx-built indices, read at one this thread never stored: the
            # block's threads were meant to fill it together.
            idx = "][".join(f"threadIdx.{c}" if c else "..." for c in comps)
            fix = (f"A local array belongs to one thread: each thread has its own '{var.name}' "
                   f"and stores only its own elements ({var.name}[{idx}]), so the others "
                   f"never get a value. If the block's threads fill it together, declare it "
                   f"'__shared__ {base} {var.text};' and put a __syncthreads() between the "
                   f"writes and the reads.")
        else:
            fix = (f"Give every element a value first: '{base} {var.text} = {{{zero}}};' "
                   f"zeroes them all.")
        self._warn(("unset-local", var.name, line),
                   f"kernel {self.kernel.name}: '{element}' is read at line {line} before it is "
                   f"given a value: on a GPU it holds whatever its register or local memory "
                   f"held. {fix} (The first such read: thread {thread} in block {block}.)",
                   UninitializedReadWarning, line)

    def shape_evidence(self, kind, var, offset) -> None:
        """A hazard on shared array `var` at byte `offset` into it: if the block does not
        match the array (self.mismatches) in a way that explains it, keep that mismatch for
        the BlockShapeWarning (`warn_block_shape`, issued when the launch ends)."""
        if self.block_hint is not None or var is None or var.dynamic \
                or len(self.shape_found) == len(self.mismatches):
            return
        t = var.ctype
        if not t.is_array:
            return
        index, dims = offset // t.base_elem.size, []
        for d in reversed(t.shape):
            index, r = divmod(index, d)
            dims.append(r)
        dims = dims[::-1]
        # Too few threads: only a read of a never-written entry counts (a padding column
        # nobody reads is no mistake). Too many: any hazard on the array.
        found = [m for m in self.mismatches if m.array == var.name and (
            m.threads > m.extent or kind == "uninitialized-read"
            and dims[m.position] >= m.threads)]
        self.shape_found.update(found)

    def warn_block_shape(self, found=()) -> None:
        """Issue the BlockShapeWarning for this launch (once), describing the mismatches
        like those `found` and those `shape_evidence` kept (same component and sizes, any
        array), and keep its text as a hint for the hazard reports."""
        self.shape_found.update(found)
        if self.block_hint is not None or not self.shape_found:
            return
        keys = {(m.component, m.threads, m.extent) for m in self.shape_found}
        chosen = [m for m in self.mismatches if (m.component, m.threads, m.extent) in keys]
        self.block_hint = describe_mismatches(self.kernel, self.block, chosen)
        first = next(v for v in self.kernel.shared if v.name == chosen[0].array)
        self._warn(("block",), f"kernel {self.kernel.name}: {self.block_hint}",
                   BlockShapeWarning, first.line)

    def add_hazard(self, h: Hazard) -> None:
        key = (h.kind, h.line, h.other_line, h.array)
        old = self.hazards.get(key)
        if old is None:
            self.hazards[key] = h
            if self.options.hazards == "raise" and h.kind != "barrier-after-exit":
                self.warn_block_shape()
                hint = f"\nThe block does not match the shared arrays: {self.block_hint}" \
                    if self.block_hint else ""
                raise RaceError(f"{h.kernel}: {h}{self._advice(h)}{hint}", kernel=h.kernel,
                                line=h.line, block=h.block, thread=h.thread, kind=h.kind,
                                array=h.array, other_line=h.other_line)
        else:
            self.hazards[key] = Hazard(**{**old.__dict__, "count": old.count + h.count})

    @staticmethod
    def _advice(h: Hazard) -> str:
        if h.kind == "read-after-write":
            return ("\nA thread read shared memory that another thread wrote with no "
                    "__syncthreads() in between: put one after the writes, before the reads.")
        if h.kind == "write-after-read":
            return ("\nA thread overwrote shared memory that another thread was still reading: "
                    "put a __syncthreads() after the reads, before the next writes.")
        if h.kind == "uninitialized-read":
            return "\nThe kernel read shared memory before any thread wrote it."
        return "\nTwo threads wrote one location with no __syncthreads() in between."

    def blocks_per_batch(self) -> int:
        """Whole blocks per batch: `batch_threads` threads, fewer where the blocks' shared
        memory (with the hazard tracker's 17 bytes per byte) and the threads' local memory
        would need more than `BATCH_BYTES`; at least one block."""
        tpb = self.block[0] * self.block[1] * self.block[2]
        nblocks = self.grid[0] * self.grid[1] * self.grid[2]
        tracked = self.options.hazards != "ignore" or self.options.check_uninitialized
        per_block = self.shared_stride * (18 if tracked else 1) + tpb * self.local_stride
        return max(1, min(nblocks, self.options.batch_threads // tpb,
                          BATCH_BYTES // max(per_block, 1)))

    def run(self, env_values) -> None:
        try:
            with recursion_room():
                self._run(env_values)
        except RecursionError:
            raise KernelRuntimeError(
                f"{self.kernel.name}: the kernel nests __device__ calls more than 64 deep (a "
                f"function calling a function calling ...), or expressions too deeply, for the "
                f"CPU emulator: flatten the chain", kernel=self.kernel.name) from None
        except MemoryError:
            raise KernelRuntimeError(
                f"{self.kernel.name}: the CPU emulator ran out of memory for this launch "
                f"(local arrays, shared memory and the hazard tracker of one batch of blocks): "
                f"use smaller arrays, fewer threads per block, or hazards='ignore'",
                kernel=self.kernel.name) from None

    def _run(self, env_values) -> None:
        kc = self.kernel
        nblocks = self.grid[0] * self.grid[1] * self.grid[2]
        per_batch = self.blocks_per_batch()
        with np.errstate(all="ignore"):
            for start in range(0, nblocks, per_batch):
                if self.deadline is not None and start and time.monotonic() > self.deadline:
                    self._out_of_time(start, nblocks)
                ids = np.arange(start, min(nblocks, start + per_batch), dtype=np.int64)
                ctx = Context(self, ids)
                env = [None] * kc.nslots
                for slot, value in zip(kc.param_slots, env_values):
                    env[slot] = value
                ctx.env = env
                try:
                    kc.run(ctx)
                except MemoryAccessError:
                    # Threads beyond a shared array's extent (block larger than the tile)
                    # write past it: say so before the fault is reported.
                    self.warn_block_shape([m for m in self.mismatches
                                           if m.threads > m.extent])
                    raise
                self.counters.flops += ctx.flops
        self.warn_block_shape()

    def _out_of_time(self, done: int, nblocks: int) -> None:
        raise StepBudgetExceeded(
            f"{self.kernel.name} ran for more than {self.options.max_seconds:g} s on the CPU "
            f"emulator: {done:,} of its {nblocks:,} blocks had run. The emulator runs a few "
            f"million threads a second; launch fewer blocks (for the lessons N = 64 to 256 "
            f"shows the same counts per element), or lift the limit with "
            f"f(..., max_seconds=None).", kernel=self.kernel.name)

    def report(self) -> LaunchReport:
        c = self.counters
        tpb = self.block[0] * self.block[1] * self.block[2]
        nblocks = self.grid[0] * self.grid[1] * self.grid[2]
        return LaunchReport(
            kernel=self.kernel.name, grid=self.grid, block=self.block,
            shared_bytes=self.shared_total, threads=tpb * nblocks,
            warps=-(-tpb // 32) * nblocks, flops=c.flops,
            global_load_requests=c.global_load_requests,
            global_load_sectors=c.global_load_sectors, global_load_bytes=c.global_load_bytes,
            global_store_requests=c.global_store_requests,
            global_store_sectors=c.global_store_sectors,
            global_store_bytes=c.global_store_bytes,
            shared_load_requests=c.shared_load_requests,
            shared_load_wavefronts=c.shared_load_wavefronts,
            shared_store_requests=c.shared_store_requests,
            shared_store_wavefronts=c.shared_store_wavefronts,
            shared_bank_conflicts=c.shared_load_bank_conflicts + c.shared_store_bank_conflicts,
            shared_load_bank_conflicts=c.shared_load_bank_conflicts,
            shared_store_bank_conflicts=c.shared_store_bank_conflicts,
            barriers=c.barriers,
            global_atomic_requests=c.global_atomic_requests,
            shared_atomic_requests=c.shared_atomic_requests,
            hazards=tuple(self.hazards.values()))


def warn_hazards(report: LaunchReport, block_hint: str | None = None) -> None:
    """Issue one RaceWarning for the launch, located at the kernel line of its first hazard
    (shown as ``kernel.cu:<line>``, the student's own line, not a library file).
    `block_hint` (Launch.block_hint) says how the block fails to match the shared arrays
    when that explains the hazards."""
    races = [h for h in report.hazards]
    if races:
        n = len(races) - 1
        more = (f" ({n} more hazard{'s' if n > 1 else ''} in this launch: the kernel "
                f"function's .last_report.hazards lists them all)" if n else "")
        # The hint itself is the BlockShapeWarning just issued: point at it, not repeat it.
        hint = ("\nThe block does not match the shared arrays: see the BlockShapeWarning "
                "above." if block_hint else "")
        warnings.warn_explicit(f"{report.kernel}: {races[0]}{more}{hint}", RaceWarning,
                               "kernel.cu", races[0].line or 0)


# ----------------------------------------------------------------------------- block shape

_ZERO_TEXT = {"float": "0.0f", "double": "0.0", "bool": "false",
              **{k: "0" for k in ("char", "signed char", "unsigned char", "short",
                                  "unsigned short", "int", "unsigned int", "long",
                                  "unsigned long", "long long", "unsigned long long")}}


@dataclass(frozen=True)
class Mismatch:
    """Shared array `array` has `extent` entries along index `position`, which every store
    fills with threadIdx.`component`, and the block has `threads` threads along it."""

    array: str
    position: int
    rank: int
    component: str
    extent: int
    threads: int


def block_mismatches(kernel, block) -> list:
    """The `Mismatch`es of a launch's block with the kernel's thread-indexed shared arrays
    (`KernelCode.thread_indexed`, from `_source_checks.thread_indexed_stores`)."""
    out = []
    for v in kernel.shared:
        comps = kernel.thread_indexed.get(v.name)
        if not comps or v.dynamic or not v.ctype.is_array:
            continue
        shape = v.ctype.shape
        for p, c in enumerate(comps):
            if c is None:
                continue
            b = block["xyz".index(c)]
            if b != shape[p]:
                out.append(Mismatch(v.name, p, len(shape), c, shape[p], b))
    return out


def _unit(m: Mismatch, plural=True) -> str:
    if m.rank == 1:
        return "elements" if plural else "element"
    names = ("rows", "columns") if m.rank == 2 else ("planes", "rows", "columns")
    name = names[m.position] if m.position < len(names) else f"indices {m.position}"
    return name if plural else name[:-1]


def describe_mismatches(kernel, block, mismatches) -> str:
    """'block (32, 8, 1) has 8 threads along y, but As[TILE][TILE] is indexed with
    threadIdx.y and has 32 rows: rows 8..31 are never written. Launch block=(32, 32, 1)
    (one thread per tile element).'"""
    groups: dict = {}
    for m in mismatches:
        groups.setdefault((m.component, m.threads, m.extent, _unit(m)), []).append(m)
    suggested = list(block)
    sentences = []
    for (c, b, e, unit), ms in groups.items():
        names = [kernel.shared_text.get(m.array, m.array) for m in ms]
        names_text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        one = len(names) == 1
        head = (f"block {tuple(block)} has {b} thread{'s' if b != 1 else ''} along {c}, but "
                f"{names_text} {'is' if one else 'are'} indexed with threadIdx.{c} and "
                f"{'has' if one else 'have'} {e} {unit if e != 1 else _unit(ms[0], False)}")
        if b < e:
            which = (f"{_unit(ms[0], False)} {b} is" if e - b == 1 else f"{unit} {b}..{e - 1} are")
            sentences.append(f"{head}: {which} never written.")
        else:
            threads = f"the threads with threadIdx.{c} = {e}..{b - 1} store"
            if ms[0].position == ms[0].rank - 1 and ms[0].rank > 1:
                sentences.append(f"{head}: {threads} outside {'its' if one else 'their'} "
                                 f"{unit} (into the next row).")
            else:
                sentences.append(f"{head}: {threads} past {'its' if one else 'their'} end.")
        i = "xyz".index(c)
        if suggested[i] == block[i]:
            suggested[i] = e
    per = "one thread per tile element" if any(m.rank > 1 for m in mismatches) else \
        "one thread per element"
    return " ".join(sentences) + f" Launch block={tuple(suggested)} ({per})."


def warn_if_large(kernel: str, threads: int) -> None:
    """Say before a launch that the CPU emulator will take minutes over it."""
    if threads >= LARGE_LAUNCH_THREADS:
        warnings.warn_explicit(
            f"{kernel}: this launch has {threads:,} threads; the CPU emulator runs a few "
            f"million thread-iterations a second, so it may take minutes (it stops after "
            f"{DEFAULT_MAX_SECONDS:g} s unless you pass max_seconds=None). For the lessons, "
            f"N = 64 to 256 shows the same counts per element.", EmulatorPerformanceWarning,
            "kernel.cu", 0)


class EmulatorPerformanceWarning(TilingLibWarning):
    """Issued before a launch so big that the CPU emulator will take minutes."""


__all__ = ["Context", "Launch", "LaunchOptions", "RaceWarning", "warn_hazards",
           "warn_if_large", "EmulatorPerformanceWarning",
           "KernelArgumentError", "MemoryAccessError"]
