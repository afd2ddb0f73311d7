"""The memory accesses of one batch of blocks: resolve, check, count, load and store.

Input: the addresses of one access (an int64 NumPy array with one entry per thread of the
batch, or one uniform scalar), its C type, its kernel line, and the active mask (None when
every thread of the batch is active). Output: the loaded values (one per thread; inactive
lanes 0), the stores done, the access added to the launch's counters (and trace), hazards
handed to the race tracker, and `MemoryAccessError` for an access out of bounds, misaligned,
through a null pointer or into `__constant__` memory, naming the array, the element, the
thread and the block.

`MemoryAccess` owns the batch's shared memory (one copy per block) and local memory (one
copy per thread, with which of its words have been written when the kernel declares a local
array without a value). It reads the batch's thread indices from a `warps.Warps` and the
launch's layout (shared-memory offsets, allocations, tracer) from the `execute.Launch`, and
hands lost writes, unset locals and hazards to its `diagnostics.Diagnostics`; it never calls
back into the `Context`
that owns it. The address encoding, the counting rules and the messages' wording are
memory.py's; atomic read-modify-write in lane order is atomics.py's.
"""

from __future__ import annotations

import numpy as np

from . import atomics
from ..model import c_types as ct
from ..model import values as V
from ..model import memory as M
from ..codegen.closures import SharedVar
from ..measure.races import Hazard, RaceTracker
from ...gpu import SECTOR_BYTES, WARP_SIZE, ceil_div

_SHIFTS = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}
_BARRIER_WORD = ct.ULLONG            # a cuda::barrier: one 8-byte word (async_copy.py)
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_LOCAL_BASE = (M.LOCAL_REGION << M.REGION_SHIFT) + M.BIAS   # address of local byte 0


def _elements(byte_index: np.ndarray, size: int) -> np.ndarray:
    """Element indices of a view of `size`-byte elements (a shift, not a division)."""
    shift = _SHIFTS.get(size)
    return byte_index >> shift if shift is not None else byte_index // size


class MemoryAccess:
    """Shared and local memory of one batch, and every access the batch's threads make.

    launch: the `execute.Launch` (layout of shared and local memory, global allocations,
    counters, tracer, options, and its `diagnostics.Diagnostics`, where kernel warnings and
    hazards go); warps: the
    batch's `warps.Warps`. The methods that closures call take the active mask last
    (`mask`: a bool array of `warps.T` entries, or None when every thread is active).
    """

    def __init__(self, launch, warps):
        kc = launch.kernel
        self.launch = launch
        self.diagnostics = launch.diagnostics
        self.warps = warps
        # The thread indices every access needs, read once (Warps never changes).
        self.kernel_name = warps.kernel_name
        self.T = T = warps.T
        self.nblocks = nb = warps.nblocks
        self.warps_per_block = warps.warps_per_block
        self.tib, self.blk = warps.tib, warps.blk
        self.warp, self.lane = warps.warp, warps.lane
        self.full_warps, self.warp_rows = warps.full_warps, warps.warp_rows
        self.split_warps = warps.split_warps
        self.distinct_per_warp = warps.distinct_per_warp
        self.counters = launch.counters
        self.gmem = launch.gmem
        self.shared_bytes = launch.shared_stride
        self.shared = np.zeros(nb * self.shared_bytes, dtype=np.uint8)
        self.blk_base = self.blk * self.shared_bytes
        self.blk_base4 = self.blk_base >> 2          # the same, in 4-byte elements
        self.site_cache: dict = {}                   # fast loads: the last one per site
        self.shared_counts: dict = {}                # full-warp shared accesses: the last
                                                     # offsets and wavefronts per line
        self.shared_bases: dict = {}                 # blk_base4 + an element offset
        self.shared_views = {}
        self.local_bytes = launch.local_stride
        self.local = np.zeros(T * self.local_bytes, dtype=np.uint8) if self.local_bytes else None
        self.local_views = {}
        self.local_rows = {}                         # dtype -> (threads, elements) view
        # Which 4-byte words of each thread's local memory have been written, when the
        # kernel declares a local array without a value (reads of unset words warn).
        self.local_set = (np.zeros(T * (self.local_bytes // 4), dtype=bool)
                          if kc.check_local and self.local_bytes else None)
        self.local_set_rows = (None if self.local_set is None else
                               self.local_set.reshape(T, self.local_bytes // 4))
        self.local_all_set: set = set()     # words of local_set known set in every thread
        self.local_limit = kc.local_bytes
        # Asynchronous copies issued and not yet complete (async_copy.py: each a lane mask,
        # what completes it, the destination, the data read at the call, the line), and
        # each thread's count of __pipeline_commit() calls (made at the first one).
        self.async_copies: list = []
        self.pipeline_commits = None
        self.split_phases: dict = {}       # barrier word -> async_copy._Phase
        # Bytes of shared memory an asynchronous copy will still write (how many copies
        # per byte, and per word the line of one: 5 bytes per byte of the batch's shared
        # memory), made at the first such copy: any access to them before the copy is
        # waited for is a hazard ("async-copy-pending"). async_live: how many.
        self.async_pending = self.async_line = None
        self.async_live = 0
        opts = launch.options
        track = opts.hazards != "ignore"
        self.races = None
        if kc.static_shared_bytes or launch.dynamic_bytes:
            if track or opts.check_uninitialized:
                self.races = RaceTracker(nb, self.shared_bytes, check_races=track,
                                         check_uninitialized=opts.check_uninitialized)

    @property
    def dynamic_offset(self) -> int:
        """Byte offset of extern (dynamic) shared memory in a block's shared memory."""
        return self.launch.dynamic_offset

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


    def _active(self, addr, mask):
        """Active lanes (None when all) and their addresses as an int64 array."""
        if mask is None:
            lanes = None
            a = addr if isinstance(addr, np.ndarray) else np.full(self.T, addr, dtype=np.int64)
        else:
            lanes = np.flatnonzero(mask)
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
            var = self.shared_var(o) if space == "shared" and alloc is None else None
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
        M.raise_access_error(self.warps, lane, message, line)

    def _name_of(self, space, offset, alloc):
        if isinstance(alloc, SharedVar):
            return f"the __shared__ array '{alloc.name}'"
        if alloc is not None:
            return f"the array '{alloc.name}'"
        if space == "shared":
            var = self.shared_var(offset)
            return f"the __shared__ array '{var.name}'" if var else "shared memory"
        return "the thread's local memory"

    def shared_var(self, offset):
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
            var = self.shared_var(offset)
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
            if self.async_live:
                self._check_async(key, lanes, size, line, is_store)
            if lanes is None and size == 4 and not full:
                self.count_shared_words(is_store, off >> 2)
            elif full:
                self._count_shared_full(is_store, warp, off, size, line)
            else:
                lane = self.lane if lanes is None else self.lane[lanes]
                M.count_shared(self.counters, is_store, warp, lane, off, size, full)
            if self.races is not None:
                tib = self.tib if lanes is None else self.tib[lanes]
                track = self.races.on_write if is_store else self.races.on_read
                found = track(key, tib, line or 0, size)
                if found:
                    self._hazards(found, lanes, line)

    def _count_shared_full(self, is_store, warp, off, size, line) -> None:
        """`memory.count_shared` for an access of every lane of full warps, its wavefronts
        reused from this line's previous access of the same kind when every lane's offset
        moved by one multiple of 4 bytes (a loop stepping through a tile): such a shift maps
        banks onto banks one to one and keeps equal addresses equal, so each phase needs
        the same wavefronts (`count_shared_words` argues the same for 4-byte loads)."""
        key = (line, size, is_store)
        prev = self.shared_counts.get(key)
        if prev is not None and prev[0].shape == off.shape:
            d = int(off[0]) - int(prev[0][0])
            if d % 4 == 0 and not np.count_nonzero(off - prev[0] != d):
                wavefronts, ideal = prev[1], prev[2]
                M._add_shared(self.counters, is_store, off.shape[0] // WARP_SIZE, wavefronts,
                              wavefronts - ideal, off.shape[0] * size)
                self.shared_counts[key] = (off, wavefronts, ideal)
                return
        wavefronts, ideal = M.shared_wavefronts(warp, self.lane, off, size, is_store, True)
        M._add_shared(self.counters, is_store, off.shape[0] // WARP_SIZE, wavefronts,
                      wavefronts - ideal, off.shape[0] * size)
        self.shared_counts[key] = (off, wavefronts, ideal)

    def _count_atomic(self, space, lanes, a, off, key, size):
        """Count an atomic (its own counters: not a load or store in ncu's metrics). Atomics
        are never hazards among themselves; on shared memory they initialise what they hit."""
        warp = self.warp if lanes is None else self.warp[lanes]
        requests = int(np.count_nonzero(warp[1:] != warp[:-1])) + 1
        if space == "global":
            self.counters.global_atomic_requests += requests
        elif space == "shared":
            self.counters.shared_atomic_instructions += requests
            if self.races is not None:
                self.races.on_atomic(key, size)

    def _hazards(self, found, lanes, line):
        for kind, i, flat, other_tid, other_line, count in found:
            lane = int(i if lanes is None else lanes[i])
            offset = flat % self.shared_bytes
            var = self.shared_var(offset)
            block, thread = self.warps.coords(lane)
            other = self.warps.thread_of(other_tid) if other_tid is not None and other_tid >= 0 \
                else None
            h = Hazard(kind, self.kernel_name, var.name if var else "shared",
                       self._element_of("shared", offset, None), line, other_line, block,
                       thread, other, count)
            if self.diagnostics.mismatches and var is not None:
                start = self.launch.dynamic_offset if var.dynamic else var.offset
                self.diagnostics.shape_evidence(kind, var, offset - start)
            self.diagnostics.add_hazard(h)

    def _local_column(self, addr, t):
        """For one address shared by every lane (`addr` a scalar) into local memory, in
        bounds and aligned: (each thread's local memory as rows of `t`, the column of the
        element, its first 4-byte word). None otherwise, and the general path runs (and
        reports what is wrong). A register array indexed by a loop counter (`acc[i]`) is
        such an access: the same offset in every thread's own local memory."""
        if self.local is None:
            return None
        off = int(addr) - _LOCAL_BASE
        size = t.size
        if off < 0 or off > self.local_limit - size or off % size or off % t.align:
            return None
        rows = self.local_rows.get(t.dtype)
        if rows is None:
            rows = self.local_rows[t.dtype] = self.local.view(t.dtype).reshape(self.T, -1)
        return rows, off // size, off >> 2

    def _local_word_set(self, word, mask) -> bool:
        """Whether local word `word` has a value in every active thread (remembered, until a
        declaration forgets it, when it has in every thread)."""
        if mask is None:
            if self.local_set_rows[:, word].all():
                self.local_all_set.add(word)
                return True
            return False
        return bool(self.local_set_rows[mask, word].all())

    def load(self, addr, t, line, mask=None):
        """Load a scalar of C type `t` at `addr` in every active lane."""
        if type(addr) is not np.ndarray and (mask is None or mask.any()):
            found = self._local_column(addr, t)
            if found is not None:
                rows, col, word = found
                if self.local_set is None or word in self.local_all_set or \
                        self._local_word_set(word, mask):
                    if mask is None:
                        return rows[:, col].copy()
                    out = np.zeros(self.T, dtype=t.dtype)
                    out[mask] = rows[mask, col]
                    return out
        lanes, a = self._active(addr, mask)
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
            if alloc is None or alloc.readonly or size > SECTOR_BYTES:
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
            if self.async_live:
                self._check_async(flat_elems << 2, None, 4, line, False)
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
        if prev is not None and (prev[2] or (d * size) % SECTOR_BYTES == 0):
            requests, sectors, one = prev
        else:
            requests, sectors = self.distinct_per_warp(e >> (5 - shift))
            one = prev[2] if prev is not None else \
                all(bool((k == k[:, :1]).all()) for k in self.split_warps(e))
        c.global_load_requests += requests
        c.global_load_sectors += sectors
        c.global_load_bytes_requested += e.shape[0] * size
        return requests, sectors, one

    def store(self, addr, t, value, line, mask=None):
        """Store `value` (of C type `t`) at `addr` in every active lane."""
        if type(addr) is not np.ndarray:
            found = self._local_column(addr, t)
            if found is not None:            # one local address for all: see _local_column
                rows, col, word = found
                lanes = slice(None) if mask is None else mask
                if self.local_set is not None:
                    words = range(word, word + max(1, t.size // 4))
                    self.local_set_rows[lanes, words.start:words.stop] = True
                    if mask is None:
                        self.local_all_set.update(words)
                if isinstance(value, np.ndarray) and mask is not None:
                    value = value[mask]
                rows[lanes, col] = value
                return
        lanes, a = self._active(addr, mask)
        if a.shape[0] == 0:
            return
        space, index, off, key = self._resolve(a, lanes, t, line, "write")
        if space == "global":
            if key.readonly:
                self._fault(lanes, 0, f"Invalid write to __constant__ memory '{key.name}'",
                            line)
            if not key.copied_back:
                self.diagnostics.lost_write(key, line)
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

    def load_struct(self, addr, t, line, mask=None):
        """Load a struct: float2, float4 or a struct of scalars as one access of its size; one
        with array or struct members (`struct Frag { float v[4]; int n; }`) as nvcc copies
        it, one access per scalar, pointer and vector member (`c_types.pieces`). Returns its
        value: a tuple of components (nested for array and struct members)."""
        lanes, a = self._active(addr, mask)
        if a.shape[0] == 0:
            return V.zero_of(t)
        space, index, off, key = self._resolve(a, lanes, t, line, "read")
        if t.holds_aggregates and space != "local":
            # As nvcc copies it: one access per scalar, pointer or vector member
            return V.unflatten(t, iter([
                self.load_struct(addr + foff, ft, line, mask) if ft.is_struct else
                self.load(addr + foff, ft, line, mask) for foff, ft in ct.pieces(t)]),
                pieces=True)
        if space == "local" and self.local_set is not None and not t.holds_aggregates:
            # (a copy of a struct with array or struct fields is not checked: copying one
            # set in part is common and correct; reading the unset member warns)
            self._check_local_set(index, lanes, line)
        self._count(space, False, lanes, a, off, key if space != "local" else None, t.size,
                    line)
        parts = []
        nested = t.holds_aggregates      # (float4 and flat structs: their fields directly)
        for foff, ft in (ct.leaves(t) if nested else ((f[2], f[1]) for f in t.fields)):
            view = self._view(space, key.buf if space == "global" else None, ft.dtype)
            vals = view[_elements(index + foff, ft.size)]
            if lanes is not None:
                full = np.zeros(self.T, dtype=ft.dtype)
                full[lanes] = vals
                vals = full
            parts.append(vals)
        return V.unflatten(t, iter(parts)) if nested else tuple(parts)

    def store_struct(self, addr, t, value, line, mask=None):
        lanes, a = self._active(addr, mask)
        if a.shape[0] == 0:
            return
        space, index, off, key = self._resolve(a, lanes, t, line, "write")
        if t.holds_aggregates and space != "local":
            for (foff, ft), v in zip(ct.pieces(t), V.flatten(t, value, pieces=True)):
                if ft.is_struct:
                    self.store_struct(addr + foff, ft, v, line, mask)
                else:
                    self.store(addr + foff, ft, v, line, mask)
            return
        if space == "global" and not key.copied_back:
            self.diagnostics.lost_write(key, line)
        elif space == "local" and self.local_set is not None:
            self._mark_local_set(index, t.size)
        if space == "global" and key.written is not None:
            key.mark_written(index, t.size)
        pairs = zip(ct.leaves(t), V.flatten(t, value)) if t.holds_aggregates else \
            (((f[2], f[1]), v) for f, v in zip(t.fields, value))
        for (foff, ft), v in pairs:
            view = self._view(space, key.buf if space == "global" else None, ft.dtype)
            if isinstance(v, np.ndarray) and lanes is not None:
                v = v[lanes]
            view[_elements(index + foff, ft.size)] = v
        self._count(space, True, lanes, a, off, key if space == "shared" else None, t.size, line)


    # ------------------------------------------------------------------ cuda::barrier
    def barrier_state(self, addr, line, what, mask=None):
        """The state words of the 8-byte `cuda::barrier` objects at `addr` in the active
        lanes (`mask`; None: all): (lanes or None, a uint64 view of shared memory, the
        word index of each active lane's barrier), or None when no lane is active. The
        barrier must lie in shared memory, in bounds and 8-byte aligned (else
        `MemoryAccessError` naming `what`). Not an access the counters or the race tracker
        see: the emulator keeps the barrier's expected count there (async_copy.py)."""
        lanes, a = self._active(addr, mask)
        if a.shape[0] == 0:
            return None
        regions = a >> M.REGION_SHIFT
        if np.any(regions != M.SHARED_REGION):
            self._fault(lanes, int(np.argmax(regions != M.SHARED_REGION)),
                        f"{what}: this cuda::barrier is not in shared memory. A barrier of "
                        f"block scope is shared by the block's threads: declare it "
                        f"'__shared__ cuda::barrier<cuda::thread_scope_block> bar;'", line)
        _, flat, _, _ = self._resolve(a, lanes, _BARRIER_WORD, line, what)
        view = self.shared_views.get(np.dtype(np.uint64))
        if view is None:
            view = self.shared_views[np.dtype(np.uint64)] = self.shared.view(np.uint64)
        return lanes, view, flat >> 3

    def track_barrier(self, lanes, words, line, write: bool) -> None:
        """Show the race tracker a use of the `cuda::barrier` objects at word indices
        `words` (of `barrier_state`, in the active `lanes`; None: all): `init` writes the
        barrier's 8 bytes, every other use reads them. So a barrier used with no
        __syncthreads() after one thread's init is a race, as on a GPU. Not counted."""
        if self.races is None:
            return
        tib = self.tib if lanes is None else self.tib[lanes]
        track = self.races.on_write if write else self.races.on_read
        found = track(np.asarray(words, dtype=np.int64) << 3, tib, line or 0, 8)
        if found:
            self._hazards(found, lanes, line)

    def check_write(self, addr, t, line, mask=None):
        """Check a store of C type `t` at `addr` in the active lanes (bounds, alignment,
        __constant__) without doing it: an asynchronous copy's destination is checked at
        the call, at the student's line, and written when the copy completes. Returns the
        byte index in the batch's shared storage of each lane's destination (-1 in lanes
        not active) when it is shared memory, else None."""
        lanes, a = self._active(addr, mask)
        if a.shape[0] == 0:
            return None
        space, _, _, key = self._resolve(a, lanes, t, line, "write")
        if space == "global" and key.readonly:
            self._fault(lanes, 0, f"Invalid write to __constant__ memory '{key.name}'", line)
        if space != "shared":
            return None
        if lanes is None:
            return key
        flat = np.full(self.T, -1, dtype=np.int64)
        flat[lanes] = key
        return flat

    def async_mark(self, flat, size, line, delta) -> None:
        """Bytes `flat` .. `flat + size - 1` (byte indices in the batch's shared storage, of
        the lanes where flat >= 0) are written by an asynchronous copy issued at `line`
        (delta=1) or no longer pending (delta=-1: it completed)."""
        if self.launch.options.hazards == "ignore":
            return
        if self.async_pending is None:
            # per byte, how many copies are to write it; per 4-byte word, the line of one
            self.async_pending = np.zeros(self.shared.shape[0], dtype=np.int32)
            self.async_line = np.zeros(ceil_div(self.shared.shape[0], 4), dtype=np.int32)
        f = flat[flat >= 0]
        idx = (f[:, None] + np.arange(size, dtype=np.int64)).reshape(-1) if size > 1 else f
        if idx.shape[0] > 1 and np.any(idx[1:] <= idx[:-1]):
            np.add.at(self.async_pending, idx, delta)       # lanes may share bytes
        else:
            self.async_pending[idx] += delta
        if delta > 0:
            self.async_line[idx >> 2] = line or 0
        self.async_live += delta * idx.shape[0]

    def _check_async(self, flat, lanes, size, line, is_store) -> None:
        """An access of the bytes at `flat` (one per lane of `lanes`; None: all) that an
        asynchronous copy has yet to write is a hazard: the copy may land before or after."""
        pend = self.async_pending
        if size > 1:           # any byte of the access: a float4 read over a 4-byte copy
            bytes_hit = pend[flat[:, None] + np.arange(size, dtype=np.int64)] > 0
            hit = bytes_hit.any(axis=1)
        else:
            hit = pend[flat] > 0
        if not hit.any():
            return
        i = int(np.argmax(hit))
        lane = int(i if lanes is None else lanes[i])
        b = int(flat[i]) + (int(np.argmax(bytes_hit[i])) if size > 1 else 0)
        offset = b % self.shared_bytes
        var = self.shared_var(offset)
        block, thread = self.warps.coords(lane)
        self.diagnostics.add_hazard(Hazard(
            "async-copy-pending", self.kernel_name, var.name if var else "shared",
            self._element_of("shared", offset, None), line, int(self.async_line[b >> 2]) or None,
            block, thread, None, int(np.count_nonzero(hit))))

    def copy_struct(self, dst, src, t, line, mask=None):
        """`*dst = *src` for a struct `t` with array or struct members: its value, and, from
        one thread's local memory to another place in it, which of its members have a
        value (a copy of a struct set in part is correct C++; reading the copy's unset
        member then warns as reading the original's would)."""
        self.store_struct(dst, t, self.load_struct(src, t, line, mask), line, mask)
        if self.local_set is None or t.size % 4 or t.align < 4:
            return
        lanes, s = self._active(src, mask)
        if s.shape[0] == 0:
            return
        _, d = self._active(dst, mask)
        local = M.LOCAL_REGION
        if not (int(s.min()) >> M.REGION_SHIFT == int(s.max()) >> M.REGION_SHIFT == local
                and int(d.min()) >> M.REGION_SHIFT == int(d.max()) >> M.REGION_SHIFT == local):
            return
        _, sidx, _, _ = self._resolve(s, lanes, t, line, "read")
        _, didx, _, _ = self._resolve(d, lanes, t, line, "write")
        words = np.arange(t.size // 4)
        self.local_set[(didx >> 2)[:, None] + words] = self.local_set[(sidx >> 2)[:, None] + words]
        self.local_all_set.clear()          # the copy may have unset words: ask again

    # ------------------------------------------------------------------ reads before writes
    def forget_local(self, w0: int, w1: int, mask=None) -> None:
        """The active threads (`mask`; None: all) enter a local array's declaration (words
        w0..w1-1 of their local memory): its elements have no value again."""
        words = self.local_bytes // 4
        rows = self.local_set.reshape(self.T, words)
        self.local_all_set.difference_update(range(w0, w1))
        if mask is None:
            rows[:, w0:w1] = False
        else:
            rows[mask, w0:w1] = False

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
            self.diagnostics.warn_unset_local(self.warps, lane,
                                              int(index[i]) % self.local_bytes, line)


    def atomic(self, op, addr, t, vals, line, mask=None):
        """Atomic read-modify-write; lanes that hit one address are applied in lane order."""
        lanes, a = self._active(addr, mask)
        if a.shape[0] == 0:
            return t.dtype.type(0)
        space, index, off, key = self._resolve(a, lanes, t, line, "atomic")
        if space == "global" and key.readonly:
            self._fault(lanes, 0, "Invalid atomic on __constant__ memory", line)
        if space == "global" and not key.copied_back:
            self.diagnostics.lost_write(key, line)
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

