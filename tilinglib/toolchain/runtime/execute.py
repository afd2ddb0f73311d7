"""Stage 4: launch a compiled kernel over a grid, blocks in batches, threads in lockstep.

Input: a `KernelCode`, the launch's arguments (NumPy scalars and In/Out/InOut arrays), block,
grid and dynamic shared-memory size. Output: the Out/InOut arrays filled, and a
`LaunchReport`.

Each batch holds several whole blocks; every value is a NumPy array with one entry per
thread of the batch (or a scalar when it is the same for all). Running the blocks of a
batch side by side is a legal schedule: CUDA promises nothing about the order of blocks.
`Context` is the state the compiled closures see: the active mask and the variables, with
the batch's parts composed in it (warps.py: thread indices, shuffles, votes; access.py:
shared and local memory, every access checked and counted; barriers.py). `Launch` holds
what lasts the whole launch: global memory, counters, budgets, and the kernel warnings and
hazards found so far.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from ...errors import (KernelArgumentError, KernelRuntimeError, MemoryAccessError,
                      StepBudgetExceeded, TilingLibWarning)
from ..model import memory as M
from .access import MemoryAccess
from ..codegen.async_copy import complete_at_exit
from .barriers import Barriers
from ..measure.diagnostics import Diagnostics, RaceWarning, warn_hazards
from ..model.memory import PRINTF_BUFFER_BYTES
from ..frontend.program import recursion_room
from ..measure.report import LaunchReport
from ..measure.trace import Tracer
from .warps import Warps
from ...gpu import WARP_SIZE, ceil_div, round_up

BATCH_THREADS = 1 << 16
BATCH_BYTES = 256 << 20             # shared + local memory of one batch (see blocks_per_batch)
DEFAULT_MAX_STEPS = 2_000_000
DEFAULT_MAX_SECONDS = 60.0
LARGE_LAUNCH_THREADS = 1 << 22      # above this, warn that the emulator will take minutes


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
    from ..platform_support import mallopt_function
    mallopt = mallopt_function()     # None off glibc: the default allocator, same values
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                and mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES))


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
    """Run-time state of one batch of blocks: what the compiled closures see.

    Context owns the SIMT control state (the active mask and its counts, the masks of
    threads that returned, broke or continued, the variables, the call depth, the FLOPs)
    and the loop budget, and composes the batch's parts, each of which gets what it needs
    from here and never calls back: `warps` (warps.Warps: thread indices, shuffles and
    votes), `memory` (access.MemoryAccess: shared and local memory, every load, store and
    atomic, counted and checked) and `barriers` (barriers.Barriers). The closures call the
    parts through the names below (`ctx.load`, `ctx.syncthreads`, ...), which pass the
    active mask along.
    """

    def __init__(self, launch, block_ids: np.ndarray):
        self.launch = launch
        self.kernel_name = launch.kernel.name
        self.warps = w = Warps(self.kernel_name, launch.block, launch.grid, block_ids)
        # The indices the closures read (threadIdx, blockIdx, ...), as plain attributes.
        self.T = T = w.T
        self.tpb, self.nblocks, self.block_ids = w.tpb, w.nblocks, w.block_ids
        self.tid, self.bid, self.bdim, self.gdim = w.tid, w.bid, w.bdim, w.gdim
        self.warp, self.lane = w.warp, w.lane
        self.coords = w.coords
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
        # threads that went the other way of an if whose barrier they will never reach:
        # they leave the kernel first (compiler.exit_ifs); None when there are none
        self.will_exit = None
        self.gmem = launch.gmem
        self.constant_addresses = launch.constant_addresses
        self.dynamic_shared_address = np.int64(M.make_address(M.SHARED_REGION,
                                                              launch.dynamic_offset))
        self.memory = mem = MemoryAccess(launch, w)
        self.local_set = mem.local_set
        self.load_fast = mem.load_fast          # called only when every thread is active
        self.barriers = Barriers(w, launch.counters, mem.races, launch.diagnostics.add_hazard)

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

    # ------------------------------------------------------------------ the parts, masked
    def load(self, addr, t, line):
        """Load a scalar of C type `t` at `addr` in every active lane (access.py)."""
        return self.memory.load(addr, t, line, None if self.full else self.mask)

    def store(self, addr, t, value, line):
        """Store `value` (of C type `t`) at `addr` in every active lane (access.py)."""
        self.memory.store(addr, t, value, line, None if self.full else self.mask)

    def load_struct(self, addr, t, line):
        """Load a struct (float2, float4, ...) as one access; a tuple of components."""
        return self.memory.load_struct(addr, t, line, None if self.full else self.mask)

    def store_struct(self, addr, t, value, line):
        """Store a struct's components (a tuple) as one access."""
        self.memory.store_struct(addr, t, value, line, None if self.full else self.mask)

    def copy_struct(self, dst, src, t, line):
        """`*dst = *src` for a struct with array or struct members (access.py)."""
        self.memory.copy_struct(dst, src, t, line, None if self.full else self.mask)

    def atomic(self, op, addr, t, vals, line):
        """Atomic read-modify-write in the active lanes; returns the old values."""
        return self.memory.atomic(op, addr, t, vals, line, None if self.full else self.mask)

    def forget_local(self, w0: int, w1: int) -> None:
        """The active threads enter a local array's declaration (access.py)."""
        self.memory.forget_local(w0, w1, None if self.full else self.mask)

    def unset_read(self, site, bad) -> None:
        """Active lanes `bad` read the local scalar of `site` before giving it a value."""
        self.launch.diagnostics.warn_unset(site, self.warps, int(np.argmax(bad)))

    def syncthreads(self, line) -> None:
        """`__syncthreads()` (barriers.py)."""
        self.barriers.syncthreads(line, self.mask, self.kernel_ret, will_exit=self.will_exit)

    def syncwarp(self, line) -> None:
        """`__syncwarp()` (barriers.py)."""
        self.barriers.syncwarp(line, self.mask, self.any)

    def shuffle(self, kind, value, arg, width, t, line):
        """__shfl_*_sync within each warp (warps.py)."""
        return self.warps.shuffle(kind, value, arg, width, t, line, self.mask)

    def vote(self, kind, pred):
        """__ballot_sync / __any_sync / __all_sync over the active lanes (warps.py)."""
        return self.warps.vote(kind, pred, self.mask)


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
        self.diagnostics = Diagnostics(kernel, block, grid, options)
        self.hazards = self.diagnostics.hazards
        self.tracer = Tracer() if options.trace else None
        static = kernel.static_shared_bytes
        self.dynamic_offset = round_up(static, 16) if dynamic_bytes else static
        self.shared_total = self.dynamic_offset + dynamic_bytes
        self.shared_stride = max(16, round_up(self.shared_total, 16))
        self.local_stride = round_up(kernel.local_bytes, 16)

    @property
    def block_hint(self) -> str | None:
        """The BlockShapeWarning's text, once issued (diagnostics.py)."""
        return self.diagnostics.block_hint

    def warn_unwritten(self) -> None:
        """After the launch: warn about Out(...) elements no store wrote (diagnostics.py)."""
        self.diagnostics.warn_unwritten(self.gmem)

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

    def run(self, env_values, runner=None) -> None:
        """Run the launch's blocks in batches in lockstep, or with `runner(env_values)`
        instead (schedule.Adversary.run: one warp at a time)."""
        try:
            with recursion_room():
                (runner or self._run)(env_values)
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
                    complete_at_exit(ctx)
                except MemoryAccessError:
                    # Threads beyond a shared array's extent (block larger than the tile)
                    # write past it: say so before the fault is reported.
                    diagnostics = self.diagnostics
                    diagnostics.warn_block_shape([m for m in diagnostics.mismatches
                                                  if m.threads > m.extent])
                    raise
                self.counters.flops += ctx.flops
        self.diagnostics.warn_block_shape()

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
            warps=ceil_div(tpb, WARP_SIZE) * nblocks, flops=c.flops,
            global_load_requests=c.global_load_requests,
            global_load_sectors=c.global_load_sectors, global_load_bytes_requested=c.global_load_bytes_requested,
            global_store_requests=c.global_store_requests,
            global_store_sectors=c.global_store_sectors,
            global_store_bytes=c.global_store_bytes,
            shared_load_instructions=c.shared_load_instructions,
            shared_load_wavefronts=c.shared_load_wavefronts,
            shared_store_instructions=c.shared_store_instructions,
            shared_store_wavefronts=c.shared_store_wavefronts,
            shared_bank_conflicts=c.shared_load_bank_conflicts + c.shared_store_bank_conflicts,
            shared_load_bank_conflicts=c.shared_load_bank_conflicts,
            shared_store_bank_conflicts=c.shared_store_bank_conflicts,
            barriers=c.barriers,
            global_atomic_requests=c.global_atomic_requests,
            shared_atomic_instructions=c.shared_atomic_instructions,
            hazards=tuple(self.hazards.values()))


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
