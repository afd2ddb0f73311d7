"""Barriers of one batch of blocks: `__syncthreads()` and `__syncwarp()`.

Input: the active mask at the barrier (one bool per thread of the batch) and, for
`__syncthreads()`, which threads have returned from the kernel (and which will, without
another barrier, or wait at the other branch's barrier of a divergent if). Output:
`BarrierError` when part of a block reaches a `__syncthreads()` the rest of the block never
can; a hazard where the barrier completes as the GPU counts it (sm_70 and later: exited
threads count as arrived, and every `__syncthreads()` of a block is one barrier 0):
"barrier-after-exit", "barrier-in-divergent-code"; the launch's barrier counter; and the
race tracker told that the shared-memory accesses before the barrier are ordered before
those after it.
"""

from __future__ import annotations

import numpy as np

from ...errors import BarrierError
from ...gpu import WARP_SIZE
from ..measure.races import Hazard


class Barriers:
    """The barriers of one batch. warps: its `warps.Warps`; counters: the launch's
    `memory.Counters`; races: the batch's `races.RaceTracker` (None when nothing is
    tracked); add_hazard: where a hazard goes (`diagnostics.Diagnostics.add_hazard`)."""

    def __init__(self, warps, counters, races, add_hazard):
        self.warps = warps
        self.counters = counters
        self.races = races
        self.add_hazard = add_hazard

    def syncthreads(self, line, mask, exited, what="__syncthreads()", will_exit=None,
                    branches=None) -> None:
        """`__syncthreads()` at kernel line `line`, reached by the threads in `mask`:
        every thread of a block that has not exited (`exited`: the kernel's return mask)
        must be here, as the GPU's barrier counts them (sm_70 and later: a barrier waits for
        every non-exited thread, and exited threads count as arrived). `will_exit`: threads
        that went the other way of an `if` and leave the kernel without reaching another
        barrier (compiler.exit_ifs), which a GPU counts as arrived too. `branches`: the
        two (line, mask) of a barrier in both branches of a divergent if, which the GPU
        counts as its one barrier 0 (statements.py). Each of these completes the barrier
        and is a hazard (`Hazard`, kinds "barrier-after-exit", "barrier-in-divergent-code":
        a warning, or with hazards="raise" a BarrierError, diagnostics.py). `what`: the
        barrier as the message names it (a block-scope `cuda::barrier`'s
        `arrive_and_wait()` is this barrier too, async_copy.py)."""
        w = self.warps
        nb, blk, name = w.nblocks, w.blk, w.kernel_name
        active = np.bincount(blk[mask], minlength=nb)
        alive = np.bincount(blk[~exited], minlength=nb)
        partial = (active > 0) & (active < alive)
        skipped = np.zeros(nb, dtype=bool)
        if partial.any() and will_exit is not None:
            # the missing threads of these blocks all leave the kernel without a barrier
            covered = np.bincount(blk[mask | (will_exit & ~exited)], minlength=nb)
            skipped = partial & (covered == alive)
            partial &= ~skipped
        if partial.any():
            b = int(np.argmax(partial))
            missing = np.flatnonzero((blk == b) & ~mask & ~exited)
            here = np.flatnonzero((blk == b) & mask)
            block, thread_missing = w.coords(int(missing[0]))
            _, thread_here = w.coords(int(here[0]))
            if branches is not None:
                raise BarrierError(
                    f"{what} at kernel.cu:{line} in {name} was reached by {int(active[b])} of "
                    f"the {int(alive[b])} threads of block {block} (thread {thread_here} is "
                    f"there, thread {thread_missing} is not): the two branches of this if "
                    f"reach different numbers of __syncthreads(), and the other branch's "
                    f"threads went on past the if (they would wait at a later barrier, or hang "
                    f"a GPU). Give both branches the same number of barriers, or move them "
                    f"out of the if.", kernel=name, line=line, block=block,
                    thread=thread_missing)
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
        if skipped.any():
            b = int(np.argmax(skipped))
            lane = int(np.flatnonzero((blk == b) & ~mask & ~exited)[0])
            block, thread = w.coords(lane)
            self.add_hazard(Hazard("barrier-in-divergent-code", name, "", "", line, None,
                                   block, thread, None, int(skipped.sum())))
        if branches is not None:
            (l1, m1), (l2, m2) = branches
            both = (np.bincount(blk[m1], minlength=nb) > 0) & \
                (np.bincount(blk[m2], minlength=nb) > 0)
            if both.any():
                b = int(np.argmax(both))
                lane = int(np.flatnonzero((blk == b) & m2)[0])
                block, thread = w.coords(lane)
                self.add_hazard(Hazard("barrier-in-divergent-code", name, "", "", l1, l2,
                                       block, thread, None, int(both.sum())))
        reached = np.flatnonzero((active > 0) | skipped)
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
        keys = np.unique(w.blk[mask] * wpb + w.tib[mask] // WARP_SIZE)
        self.races.warp_barrier(keys, wpb)
