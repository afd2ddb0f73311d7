"""Barriers of one batch of blocks: `__syncthreads()` and `__syncwarp()`.

Input: the active mask at the barrier (one bool per thread of the batch) and, for
`__syncthreads()`, which threads have returned from the kernel. Output: `BarrierError` when
part of a block reaches a `__syncthreads()` the rest of the block does not; a
"barrier-after-exit" hazard when threads that returned are missing; the launch's barrier
counter; and the race tracker told that the shared-memory accesses before the barrier are
ordered before those after it.
"""

from __future__ import annotations

import numpy as np

from ..errors import BarrierError
from .memory import WARP
from .races import Hazard


class Barriers:
    """The barriers of one batch. warps: its `warps.Warps`; counters: the launch's
    `memory.Counters`; races: the batch's `races.RaceTracker` (None when nothing is
    tracked); add_hazard: where a hazard goes (`diagnostics.Diagnostics.add_hazard`)."""

    def __init__(self, warps, counters, races, add_hazard):
        self.warps = warps
        self.counters = counters
        self.races = races
        self.add_hazard = add_hazard

    def syncthreads(self, line, mask, exited, what="__syncthreads()") -> None:
        """`__syncthreads()` at kernel line `line`, reached by the threads in `mask`:
        every thread of a block that has not exited (`exited`: the kernel's return mask)
        must be here. `what`: the barrier as the message names it (a block-scope
        `cuda::barrier`'s `arrive_and_wait()` is this barrier too, async_copy.py)."""
        w = self.warps
        nb, blk, name = w.nblocks, w.blk, w.kernel_name
        active = np.bincount(blk[mask], minlength=nb)
        alive = np.bincount(blk[~exited], minlength=nb)
        partial = (active > 0) & (active < alive)
        if partial.any():
            b = int(np.argmax(partial))
            missing = np.flatnonzero((blk == b) & ~mask & ~exited)
            here = np.flatnonzero((blk == b) & mask)
            block, thread_missing = w.coords(int(missing[0]))
            _, thread_here = w.coords(int(here[0]))
            raise BarrierError(
                f"{what} at kernel.cu:{line} in {name} was reached by "
                f"{int(active[b])} of the {int(alive[b])} threads of block {block} (thread "
                f"{thread_here} is there, thread {thread_missing} is not). A barrier inside an "
                f"if or a loop that not every thread of the block enters is undefined "
                f"behaviour, and usually a hang or wrong answers on a GPU: move the barrier "
                f"outside the condition, so that all threads reach it.",
                kernel=name, line=line, block=block, thread=thread_missing)
        gone = (active > 0) & (alive < w.tpb)
        if gone.any():
            b = int(np.argmax(gone))
            lane = int(np.flatnonzero(blk == b)[0])
            block, thread = w.coords(lane)
            self.add_hazard(Hazard("barrier-after-exit", name, "", "", line, None, block,
                                   thread, None, int(gone.sum())))
        reached = np.flatnonzero(active > 0)
        self.counters.barriers += int(reached.shape[0])
        if self.races is not None:
            self.races.barrier(reached)

    def phase_completed(self, blocks) -> None:
        """A block-scope `cuda::barrier` phase completed in `blocks` (indices in the batch)
        by split arrivals (`arrive()`, async_copy.py): the accesses before it are ordered
        before those after it, as at a `__syncthreads()`, and it counts as a barrier."""
        blocks = np.asarray(blocks, dtype=np.int64)
        self.counters.barriers += int(blocks.shape[0])
        if self.races is not None:
            self.races.barrier(blocks)

    def syncwarp(self, line, mask, any_active) -> None:
        """`__syncwarp()`: orders the shared-memory accesses of each warp that runs it (the
        lanes of a warp run in lockstep here, so only the hazard tracker needs to know).
        `mask`: the active threads; `any_active`: whether there are any."""
        if self.races is None or not any_active:
            return
        w = self.warps
        wpb = w.warps_per_block
        keys = np.unique(w.blk[mask] * wpb + w.tib[mask] // WARP)
        self.races.warp_barrier(keys, wpb)
