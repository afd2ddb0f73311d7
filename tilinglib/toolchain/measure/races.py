"""Shared-memory hazards between barriers, found the way compute-sanitizer's racecheck does.

Input: every shared-memory access of a batch of blocks (block in batch, byte offsets, the
linear thread id of each lane, the source line). Output: `Hazard` records.

The emulator runs a block's threads in lockstep, which hides every race: a write always
lands before the next statement reads. So the detector reasons about what a GPU would allow
instead. Between two `__syncthreads()`, a shared location may be written by one thread and
read by others only if no barrier was needed to order them; any of these is a hazard:

- read-after-write: a thread reads a location another thread wrote since the last barrier;
- write-after-read: a thread writes a location another thread read since the last barrier;
- write-after-write: two threads write one location since the last barrier.

A read of a location that nothing has written since the launch began is reported as an
uninitialised read. Tracking is per 4-byte word (per byte for 1- and 2-byte accesses at the
offset they touch), so two threads writing different bytes of one word are not a race.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ...gpu import WARP_SIZE

NONE = -1
MANY = -2          # read by several threads of different warps
# -(3 + w): read by several threads, all of warp w (a __syncwarp() in w orders them)


def _warp_of(state: np.ndarray) -> np.ndarray:
    """Warp of a reader/writer state: tid // 32, w for "several threads of warp w", else -1."""
    return np.where(state >= 0, state // WARP_SIZE, np.where(state <= -3, -(state + 3), -1))


# The hazards of a __syncthreads() in conditional code that a GPU completes (barriers.py):
# reported with the CUDA guide's rule (diagnostics.py), an error with hazards="raise".
BARRIER_KINDS = frozenset({"barrier-after-exit", "barrier-in-divergent-code"})


@dataclass(frozen=True)
class Hazard:
    """One kind of hazard at one pair of source lines; `count` is how many accesses had it.

    `kind`: "read-after-write", "write-after-read", "write-after-write" or
    "uninitialized-read" (or "barrier-after-exit" and "barrier-in-divergent-code", a
    barrier that completes only as a GPU counts arrivals (barriers.py; `BARRIER_KINDS`), or
    "async-copy-pending": an access of
    shared memory an asynchronous copy issued at `other_line` has yet to write, before its
    wait; async_copy.py). `line` is the access that found it,
    `other_line` the earlier access it conflicts with. `thread`/`block` describe the first
    instance, `other_thread` the thread of the earlier access.
    """

    kind: str
    kernel: str
    array: str
    element: str
    line: int | None
    other_line: int | None
    block: tuple
    thread: tuple
    other_thread: tuple | None
    count: int = 1

    def __str__(self) -> str:
        if self.kind == "uninitialized-read":
            return (f"Uninitialized __shared__ read of {self.element} at kernel.cu:{self.line} "
                    f"by thread {self.thread} in block {self.block} ({self.count} such reads)")
        if self.kind == "async-copy-pending":
            return (f"Access of {self.element} at kernel.cu:{self.line} by thread {self.thread} "
                    f"in block {self.block} while the asynchronous copy into it "
                    f"(kernel.cu:{self.other_line}) may still be landing ({self.count} such "
                    f"accesses)")
        if self.kind == "barrier-after-exit":
            return (f"__syncthreads() at kernel.cu:{self.line} in block {self.block} after some "
                    f"of its threads returned (undefined behaviour in CUDA): a GPU of compute "
                    f"capability 7.0 or later counts the threads that exited as arrived "
                    f"({self.count} such block{'s' if self.count != 1 else ''})")
        if self.kind == "barrier-in-divergent-code" and self.other_line is not None:
            return (f"__syncthreads() at kernel.cu:{self.line} and at kernel.cu:{self.other_line}, "
                    f"in the two branches of an if that the threads of block {self.block} "
                    f"took both ways (thread {self.thread} took the second; undefined "
                    f"behaviour in CUDA): a GPU of compute capability 7.0 or later counts "
                    f"both as its one barrier 0 ({self.count} such block"
                    f"{'s' if self.count != 1 else ''})")
        if self.kind == "barrier-in-divergent-code":
            return (f"__syncthreads() at kernel.cu:{self.line} in block {self.block} inside an "
                    f"if that thread {self.thread} and others skipped (undefined behaviour in "
                    f"CUDA): they leave the kernel without reaching a barrier, and a GPU of "
                    f"compute capability 7.0 or later counts threads that exited as arrived "
                    f"({self.count} such block{'s' if self.count != 1 else ''})")
        first, second = {
            "read-after-write": ("Write", "Read"),
            "write-after-read": ("Read", "Write"),
            "write-after-write": ("Write", "Write"),
        }[self.kind]
        who = f"thread {self.other_thread}" if self.other_thread else "several threads"
        return (f"Race ({self.kind}) on {self.element}: {first} at kernel.cu:{self.other_line} by "
                f"{who} and {second} at kernel.cu:{self.line} by thread "
                f"{self.thread} in block {self.block}, with no __syncthreads() between them "
                f"({self.count} such accesses)")


def _lane(lanes, i):
    return int(i if lanes is None else lanes[i])


class RaceTracker:
    """Per-location state of the shared memory of a batch of `nblocks` blocks.

    Reads are only logged; the log is folded into the per-location reader state when a
    write in the same barrier interval needs it, and dropped at the barrier otherwise. The
    usual tiled loop (load, barrier, many reads, barrier) so pays almost nothing for reads.
    """

    MAX_LOGGED = 1 << 24     # lane-accesses kept in the log before folding (bounds memory)

    def __init__(self, nblocks: int, nbytes: int, *, check_races: bool = True,
                 check_uninitialized: bool = True):
        self.nbytes = max(nbytes, 4)
        self.nblocks = nblocks
        self.check_races = check_races
        self.check_uninitialized = check_uninitialized
        n = nblocks * self.nbytes
        self.log: list = []
        self.logged = 0
        self.dirty = False          # a write since the last barrier of every block
        self.reader_used = False    # reader state holds something since the last reset
        self.warp_mode = False      # a __syncwarp() ran: keep warps apart (see warp_barrier)
        self.writer_sync = self.reader_sync = None
        # Every 4-byte word of the batch's shared memory has been written (it stays so: the
        # 4-byte reads of `on_read_words` then need no uninitialised-read check).
        self.words_written = False
        if check_races:
            self.writer = np.full(n, NONE, dtype=np.int32)
            self.writer_line = np.zeros(n, dtype=np.int32)
            self.reader = np.full(n, NONE, dtype=np.int32)
            self.reader_line = np.zeros(n, dtype=np.int32)
        if check_uninitialized:
            self.written = np.zeros(n, dtype=bool)

    def _expand(self, flat: np.ndarray, size: int):
        """Tracked locations of an access at byte indices `flat`, and the lane of each
        (None when they are the lanes themselves)."""
        if size <= 4:
            return flat, None
        words = size // 4
        idx = (flat[:, None] + 4 * np.arange(words)).reshape(-1)
        return idx, np.repeat(np.arange(flat.shape[0]), words)

    def _logged(self):
        """The logged reads as (byte indices, thread ids, line)."""
        for idx, t, line, shift in self.log:
            yield (idx << shift if shift else idx), t, line

    def _fold(self) -> None:
        """Apply the logged reads to the reader state."""
        if self.warp_mode:
            for idx, t, line in self._logged():
                self._fold_warps(idx, t, line)
            self.log.clear()
            self.logged = 0
            return
        for idx, t, line in self._logged():
            r = self.reader[idx]
            new = np.where(r == NONE, t, np.where(r == t, r, MANY))
            self.reader[idx] = new
            # Several lanes of one access reading one location: the last store wins above,
            # so mark locations read by more than one thread explicitly.
            back = self.reader[idx]
            multi = (back != t) & (back != MANY)
            if multi.any():
                self.reader[idx[multi]] = MANY
            self.reader_line[idx] = line
            self.reader_used = True
        self.log.clear()
        self.logged = 0

    def _fold_warps(self, idx, t, line) -> None:
        """Fold one logged read keeping track of warps (after a __syncwarp())."""
        order = np.argsort(idx, kind="stable")
        si, st = idx[order], t[order]
        starts = np.flatnonzero(np.r_[True, si[1:] != si[:-1]])
        u = si[starts]
        tmin, tmax = np.minimum.reduceat(st, starts), np.maximum.reduceat(st, starts)
        wmin, wmax = tmin // WARP_SIZE, tmax // WARP_SIZE
        one_warp = wmin == wmax
        g = np.where(tmin == tmax, tmin, np.where(one_warp, -(3 + wmin), MANY))
        r, rs = self.reader[u], self.reader_sync[u]
        ordered = (rs >= 0) & (rs == wmin) & one_warp
        same = (_warp_of(r) == wmin) & one_warp & (r != MANY)
        new = np.where((r == NONE) | ordered, g,
                       np.where(r == g, r, np.where(same, -(3 + wmin), MANY)))
        self.reader[u] = new.astype(np.int32)
        self.reader_sync[u] = NONE
        self.reader_line[u] = line
        self.reader_used = True

    def _unordered(self, state, sync, t, idx):
        """Lanes whose access conflicts with `state` (writer or reader of their location)."""
        other = (state < NONE) | ((state >= 0) & (state != t))
        if self.warp_mode:
            other &= sync[idx] != t // WARP_SIZE
        return other

    def warp_barrier(self, keys: np.ndarray, warps_per_block: int) -> None:
        """A `__syncwarp()` by the warps `keys` (block in batch x warps_per_block + warp):
        their own accesses since the last barrier are ordered for each other from now on
        (not for other warps: those still need __syncthreads())."""
        if not self.check_races:
            return
        if not self.warp_mode:
            self.warp_mode = True
            n = self.writer.shape[0]
            self.writer_sync = np.full(n, NONE, dtype=np.int32)
            self.reader_sync = np.full(n, NONE, dtype=np.int32)
        self._fold()
        block = np.arange(self.writer.shape[0]) // self.nbytes
        for state, sync in ((self.writer, self.writer_sync), (self.reader, self.reader_sync)):
            w = _warp_of(state)
            hit = (w >= 0) & np.isin(block * warps_per_block + w, keys)
            sync[hit] = w[hit]

    def on_read(self, flat, tid, line, size):
        """Record a read at byte indices `flat` (block in batch x bytes per block + offset) by
        threads `tid` (linear ids in their blocks). Returns a list of
        (kind, lane, flat_index, other_tid, other_line, count)."""
        idx, lanes = self._expand(flat, size)
        t = tid if lanes is None else tid[lanes]
        found = []
        if self.check_uninitialized:
            ok = self.written[idx]
            if not ok.all():
                bad = ~ok
                i = int(np.argmax(bad))
                found.append(("uninitialized-read", _lane(lanes, i), int(idx[i]), None, None,
                              int(np.count_nonzero(bad))))
        if self.check_races:
            if self.dirty:
                w = self.writer[idx]
                bad = self._unordered(w, self.writer_sync, t, idx)
                if bad.any():
                    i = int(np.argmax(bad))
                    found.append(("read-after-write", _lane(lanes, i), int(idx[i]), int(w[i]),
                                  int(self.writer_line[idx[i]]), int(np.count_nonzero(bad))))
            self._log(idx, t, line, 0)
        return found

    def _log(self, idx, t, line, shift) -> None:
        """Keep a read (locations `idx << shift`) until a write or a barrier needs it."""
        self.log.append((idx, t, line, shift))
        self.logged += idx.shape[0]
        if self.logged >= self.MAX_LOGGED:
            self._fold()

    def on_read_words(self, words, tid, line):
        """`on_read` for a 4-byte read by every thread of the batch (`tid` one per lane),
        given as 4-byte word indices (byte index / 4). The same hazards, in the same order;
        the byte indices are made only when a check needs them."""
        found = []
        if self.check_uninitialized and not self.words_written:
            found = self.on_read(words << 2, tid, line, 4)
            return found
        if self.check_races:
            if self.dirty:
                idx = words << 2
                w = self.writer[idx]
                bad = self._unordered(w, self.writer_sync, tid, idx)
                if bad.any():
                    i = int(np.argmax(bad))
                    found.append(("read-after-write", i, int(idx[i]), int(w[i]),
                                  int(self.writer_line[idx[i]]), int(np.count_nonzero(bad))))
            self._log(words, tid, line, 2)
        return found

    def on_write(self, flat, tid, line, size):
        """Record a write; returns hazards as `on_read` does."""
        idx, lanes = self._expand(flat, size)
        t = tid if lanes is None else tid[lanes]
        found = []
        if self.check_races:
            self._fold()
            if self.dirty:
                w = self.writer[idx]
                bad = self._unordered(w, self.writer_sync, t, idx)
                if bad.any():
                    i = int(np.argmax(bad))
                    found.append(("write-after-write", _lane(lanes, i), int(idx[i]), int(w[i]),
                                  int(self.writer_line[idx[i]]), int(np.count_nonzero(bad))))
            if self.reader_used:
                r = self.reader[idx]
                bad = self._unordered(r, self.reader_sync, t, idx)
                if bad.any():
                    i = int(np.argmax(bad))
                    other = int(r[i]) if r[i] >= 0 else None
                    found.append(("write-after-read", _lane(lanes, i), int(idx[i]), other,
                                  int(self.reader_line[idx[i]]), int(np.count_nonzero(bad))))
            self.writer[idx] = t
            if self.warp_mode:
                self.writer_sync[idx] = NONE
            back = self.writer[idx]
            clash = back != t
            if clash.any():
                i = int(np.argmax(clash))
                found.append(("write-after-write", _lane(lanes, i), int(idx[i]), int(back[i]),
                              line, int(np.count_nonzero(clash))))
            self.writer_line[idx] = line
            self.dirty = True
        if self.check_uninitialized:
            self.written[idx] = True
        return found

    def on_atomic(self, flat, size):
        """An atomic at byte indices `flat`: not a hazard (racecheck ignores atomics), but it
        initialises the locations it updates."""
        if self.check_uninitialized:
            idx, _ = self._expand(flat, size)
            self.written[idx] = True

    def barrier(self, blocks: np.ndarray) -> None:
        """A `__syncthreads()` completed in `blocks` (indices in the batch): forget their
        accesses since the previous one."""
        if self.check_uninitialized and not self.words_written:
            self.words_written = bool(self.written[::4].all())
        if not self.check_races or blocks.size == 0:
            return
        if blocks.size == self.nblocks:
            self.log.clear()
            self.logged = 0
            if self.dirty:
                self.writer.fill(NONE)
            if self.reader_used:
                self.reader.fill(NONE)
            if self.warp_mode:
                self.writer_sync.fill(NONE)
                self.reader_sync.fill(NONE)
            self.dirty = self.reader_used = False
            return
        self._fold()
        arrays = [self.writer, self.reader]
        if self.warp_mode:
            arrays += [self.writer_sync, self.reader_sync]
        for a in arrays:
            a.reshape(-1, self.nbytes)[blocks] = NONE
