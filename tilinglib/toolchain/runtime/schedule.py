"""Warp schedules: the default lockstep one, and an adversarial one that makes races show.

Input: a `execute.Launch` (its kernel, arguments bound, options with `schedule="adversarial"`
and a `seed`), and the hazards a lockstep run of the same launch found (`Plan`). Output: the
launch run with the warps of each block advancing in an order chosen from the seed, the
launch's counters and hazards as any launch's, and a `ScheduleReport`: every time the order
this schedule used reversed the order of a hazard's two accesses in the lockstep run
(`Flip`: the two CUDA lines, the warps, the shared element, the block, which barrier
interval).

Why. The default schedule runs every thread of a batch of blocks statement by statement
(execute.py), so a store always lands before the next statement's loads: a missing
`__syncthreads()` is reported by the race detector (races.py) but the answer is still right.
On a GPU the warps of a block interleave at instruction granularity, constrained only by
barriers and the memory model, and the same race gives a wrong answer when a warp reaches
the read before another warp's write, or overwrites a tile another warp still reads.

How. Blocks run in batches, as in lockstep. Warp w of every block of a batch runs the
compiled kernel in a context of its own (`WarpContext`: the batch's threads, only those lanes
active; the blocks of a batch so follow one order, which each block on its own could follow),
in a Python thread used as a coroutine (`_ThreadPool`): exactly one runs at a time, and
control passes only at the points below, so a seed gives one order and the same answer every
time. The warps share the batch's shared memory, the race tracker and the barrier: a `__syncthreads()` completes when every warp that has not
exited waits at one (sm_70 and later: exited threads count as arrived), checked by the same
`barriers.Barriers` as in lockstep. Between barriers the schedule decides which warp runs
next, at each memory access and loop iteration of the running warp:

- seed 0: each warp runs alone to its next barrier, in an order learned from the hazards:
  when two warps' accesses to a shared word are found in the order the lockstep run gave them
  (a hazard `Plan` names), later barrier intervals (and blocks) run the warp of the second
  access first;
- seeds 1 and 2: each warp runs alone to its next barrier, warps in ascending (1) or
  descending (2) order;
- seed 3 and up: per batch of blocks, from NumPy's generator seeded with (seed, the
  batch's first block): either
  whole intervals in a random order drawn at every barrier, or switches to a random
  warp at a random share of memory accesses (instruction-level interleaving).

Every such order is one a GPU may produce: the threads of a warp stay in lockstep (as the
emulator models them), each warp executes its own statements in program order, memory is
sequentially consistent (stronger than CUDA promises), and no warp passes a barrier before
every other non-exited warp of its block has reached one. A warp that has run 4,096 loop
iterations without letting another warp run is switched out, so a warp spinning on a flag
another warp sets makes progress, as CUDA's independent thread scheduling guarantees.
Batches run one after another (CUDA promises nothing about the order of blocks).

Limits, each refused at the launch with an `UnsupportedFeatureError`: asynchronous copies
and `cuda::barrier` (their completions are per block, not per warp, here), collectives of a
cooperative-groups tile wider than a warp, and `trace=True` (which records the lockstep
schedule). Under this schedule each warp's loop iterations count against `max_steps`.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ...errors import LaunchError, UnsupportedFeatureError
from ..model import memory as M
from .barriers import Barriers
from .execute import Context
from ..measure.races import RaceTracker
from .warps import Warps
from ...gpu import WARP_SIZE, ceil_div

SCHEDULES = ("lockstep", "adversarial")
MAX_SEED = 2 ** 32 - 1
SPIN_STEPS = 4096            # loop iterations a warp runs before it must let others run
MAX_FLIPS = 64               # Flip records kept per launch (all are counted)
TRACK_ENTRIES = 1 << 22      # (shared word, warp) pairs followed per batch of blocks
WORKER_STACK = 4 << 20       # bytes of stack per warp thread (a 63-deep __device__ chain ran in 1)
_READY, _BARRIER, _DONE = "ready", "barrier", "done"

# The two accesses of a lockstep hazard, in lockstep order ("W" write, "R" read).
_ORDER = {"read-after-write": ("W", "R"), "write-after-read": ("R", "W"),
          "write-after-write": ("W", "W")}


def check_schedule(schedule, seed) -> tuple[str, int | None]:
    """Validate a launch's `schedule=` and `seed=` before anything runs; returns them.

    `schedule`: "lockstep" (the default: every thread of a batch in lockstep) or
    "adversarial" (this module). `seed`: an int from 0 to 2**32 - 1, only with
    "adversarial" (None there means 0). Raises LaunchError saying what to change."""
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        raise LaunchError(f"schedule must be one of {', '.join(map(repr, SCHEDULES))}, not "
                          f"{schedule!r}")
    if schedule == "lockstep":
        if seed is not None:
            raise LaunchError(f"seed={seed!r} chooses among adversarial schedules: pass "
                              f"schedule='adversarial' with it (the lockstep schedule has "
                              f"only one order)")
        return schedule, None
    if seed is None:
        return schedule, 0
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise LaunchError(f"seed must be a whole number from 0 to {MAX_SEED:,}, not "
                          f"{seed!r} ({type(seed).__name__})")
    if not 0 <= int(seed) <= MAX_SEED:
        raise LaunchError(f"seed must be a whole number from 0 to {MAX_SEED:,}, not {seed}")
    return schedule, int(seed)


@dataclass(frozen=True)
class Plan:
    """The hazards of a lockstep run of the launch (`races.Hazard` records): the line pairs
    whose order the adversarial schedule tries to reverse."""

    hazards: tuple = ()

    def pairs(self) -> dict:
        """(first access kind, its line, second kind, its line) in lockstep order -> the
        hazard, for the read/write races."""
        out = {}
        for h in self.hazards:
            order = _ORDER.get(h.kind)
            if order is not None and h.line is not None and h.other_line is not None:
                out[(order[0], h.other_line, order[1], h.line)] = h
        return out


@dataclass(frozen=True)
class Restriction:
    """Where a schedule deviates from warp-by-warp round robin (which switches warps at
    every memory access, in ascending order: the lockstep order, for warps that take the
    same path): only in barrier interval `epoch` (the barriers a batch of blocks has
    completed; None: all), and there either the seed's order (`hold` None) or only warp
    `hold[0]` held back until warp `hold[1]` waits at a barrier or has exited. Used by the
    search to shrink a failing schedule (find_race_failure)."""

    epoch: int | None = None
    hold: tuple | None = None


@dataclass(frozen=True)
class Flip:
    """An instance where this schedule reversed a lockstep hazard: in block `block`, barrier
    interval `epoch` (0: before the block's first barrier), warp `first_warp` made the access
    at `first_line` (a read or a write, `first_kind`) to the shared element `element` before
    warp `second_warp` made the one at `second_line`, the opposite of their lockstep order;
    `hazard` is the lockstep hazard's kind; `interval`, the barriers its batch of blocks
    had completed (what a `Restriction`'s epoch counts)."""

    block: tuple
    epoch: int
    element: str
    first_warp: int
    first_kind: str
    first_line: int
    second_warp: int
    second_kind: str
    second_line: int
    hazard: str
    interval: int = 0

    def __str__(self) -> str:
        verb = {"R": "read", "W": "wrote"}
        return (f"warp {self.first_warp} {verb[self.first_kind]} {self.element} at "
                f"kernel.cu:{self.first_line} before warp {self.second_warp} "
                f"{verb[self.second_kind]} it at kernel.cu:{self.second_line} (in lockstep the "
                f"other way round: {self.hazard}), block {self.block}, barrier interval "
                f"{self.epoch}")


@dataclass(frozen=True)
class ScheduleReport:
    """What an adversarial launch did: `seed`, the `restriction` it ran under (None: the
    whole seed), the first `MAX_FLIPS` reversals of lockstep hazards (`flips`) and how many
    there were in all (`flip_count`), `switches`, how many times control passed from
    one warp to another, and, when the launch was asked to follow them (the race search),
    `writers`: for each global array by name, the warp that stored each element last
    (linear block id x warps per block + warp; -1: none), an int64 array."""

    seed: int
    restriction: Restriction | None
    flips: tuple
    flip_count: int
    switches: int
    writers: dict | None = field(default=None, compare=False, repr=False)


# ----------------------------------------------------------------------------- policies

class _Policy:
    """Which warp of a block runs next. `pick(ready, current, switch)` returns one of the
    `ready` warp indices (ascending list, non-empty); `current` is the warp that ran last
    (None at the start), `switch` whether it gave way at a preemption point (then another
    warp runs, if one is ready); `preempt(step)` says whether the running warp gives way at
    this point (a memory access, or a loop iteration when `step`); `new_epoch(epoch)` runs
    at every completed barrier."""

    def __init__(self, nwarps: int):
        self.nwarps = nwarps
        self.epoch = 0

    def new_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def pick(self, ready, current, switch):
        return ready[0]

    def preempt(self, step: bool) -> bool:
        return False


class _RoundRobin(_Policy):
    """Switch at every memory access, to the next ready warp in ascending order."""

    def pick(self, ready, current, switch):
        if current is None:
            return ready[0]
        for w in ready:
            if w > current:
                return w
        return ready[0]

    def preempt(self, step):
        return not step


class _Sequential(_Policy):
    """Each warp runs alone to its next barrier; warps in `order(epoch)`."""

    def __init__(self, nwarps, order):
        super().__init__(nwarps)
        self.order_of = order
        self.order = order(0)

    def new_epoch(self, epoch):
        super().new_epoch(epoch)
        self.order = self.order_of(epoch)

    def pick(self, ready, current, switch):
        if current in ready and not (switch and len(ready) > 1):
            return current
        rank = {w: i for i, w in enumerate(self.order)}
        if switch and len(ready) > 1:       # the next one after it in the order
            after = [w for w in ready if rank[w] > rank[current]]
            return min(after or [w for w in ready if w != current], key=rank.__getitem__)
        return min(ready, key=rank.__getitem__)


class _Random(_Policy):
    """At each memory access, with probability `p`, switch to a random ready warp."""

    def __init__(self, nwarps, rng, p):
        super().__init__(nwarps)
        self.rng, self.p = rng, p

    def pick(self, ready, current, switch):
        if current in ready and not (switch and len(ready) > 1):
            return current
        others = [w for w in ready if w != current]
        return others[int(self.rng.integers(len(others)))]

    def preempt(self, step):
        return not step and self.rng.random() < self.p


class _Hold(_RoundRobin):
    """Round robin, except that in `epoch` warp `held` does not run while warp `until` can."""

    def __init__(self, nwarps, epoch, held, until, states):
        super().__init__(nwarps)
        self.hold_epoch, self.held, self.until, self.states = epoch, held, until, states

    def pick(self, ready, current, switch):
        if (self.epoch == self.hold_epoch and self.held in ready and
                self.states[self.until] == _READY and len(ready) > 1):
            ready = [w for w in ready if w != self.held]
        return super().pick(ready, current, switch)


class _Switch(_Policy):
    """`inner` in barrier interval `epoch` only, round robin elsewhere."""

    def __init__(self, nwarps, epoch, inner):
        super().__init__(nwarps)
        self.only, self.inner, self.rr = epoch, inner, _RoundRobin(nwarps)

    def new_epoch(self, epoch):
        super().new_epoch(epoch)
        self.inner.new_epoch(epoch)

    def _now(self):
        return self.inner if self.epoch == self.only else self.rr

    def pick(self, ready, current, switch):
        return self._now().pick(ready, current, switch)

    def preempt(self, step):
        return self._now().preempt(step)


def _learned_order(nwarps, constraints):
    """An order of the warps that puts the first warp of as many (first, second) pairs of
    `constraints` as it can before the second (greedy by net count, then descending)."""
    score = [0] * nwarps
    for a, b in constraints:
        if a < nwarps and b < nwarps:
            score[a] += 1
            score[b] -= 1
    return sorted(range(nwarps), key=lambda w: (-score[w], -w))


def make_policy(seed, block_linear, nwarps, constraints, restriction, states):
    """The `_Policy` of the batch of blocks from linear block id `block_linear` under
    `seed` and `restriction` (see the module docstring and `Restriction`). `constraints`:
    the set of (first, second) warp pairs learned so far (seed 0 reads it at every
    barrier); `states`: the warps' run states (for a hold)."""
    if restriction is not None:
        if restriction.hold is not None:
            held, until = restriction.hold
            return _Hold(nwarps, restriction.epoch, held, until, states)
    policy = _seed_policy(seed, block_linear, nwarps, constraints)
    if restriction is not None and restriction.epoch is not None:
        return _Switch(nwarps, restriction.epoch, policy)
    return policy


def _seed_policy(seed, block_linear, nwarps, constraints):
    if seed == 0:
        return _Sequential(nwarps, lambda e: _learned_order(nwarps, constraints))
    if seed == 1:
        return _Sequential(nwarps, lambda e: list(range(nwarps)))
    if seed == 2:
        return _Sequential(nwarps, lambda e: list(range(nwarps))[::-1])
    rng = np.random.default_rng([seed, block_linear])
    p = float(rng.choice([0.0, 0.0, 0.05, 0.3]))
    if p == 0.0:
        return _Sequential(nwarps, lambda e: list(rng.permutation(nwarps)))
    return _Random(nwarps, rng, p)


# ----------------------------------------------------------------------------- one block

class _Abort(BaseException):
    """Unwinds a warp's thread when its block's run stops (an error in another warp)."""


class _ThreadPool:
    """The Python threads the warps run in, kept between batches and launches (a process
    whose limits forbid new threads, the grader's sandbox, reserves them first:
    `reserve_threads`). Each runs one task at a time: a warp's whole run."""

    def __init__(self):
        self.tasks = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.idle = 0
        self.threads = 0
        self.busy = 0

    def reserve(self, n: int) -> None:
        """Have at least `n` idle threads."""
        with self.lock:
            missing = n - self.idle
            self.idle += max(0, missing)
        if missing <= 0:
            return
        old = threading.stack_size()
        threading.stack_size(WORKER_STACK)
        try:
            for _ in range(missing):
                threading.Thread(target=self._loop, daemon=True,
                                 name=f"tilinglib warp thread {self.threads}").start()
                self.threads += 1
        except RuntimeError:            # the process may start no more threads
            with self.lock:
                self.idle -= missing
            raise
        finally:
            threading.stack_size(old)

    def submit(self, task) -> None:
        with self.lock:
            self.idle -= 1
            self.busy += 1
        self.tasks.put(task)

    def _loop(self):
        while True:
            task = self.tasks.get()
            try:
                task()
            finally:
                with self.lock:
                    self.busy -= 1
                    self.idle += 1


_POOL = _ThreadPool()


_M_ARENA_MAX = -8          # glibc's mallopt() parameter (malloc.h)


def reserve_threads(n: int = 32, *, one_arena: bool = False) -> None:
    """Start `n` idle threads for adversarial schedules now (a block has at most 32
    warps), for a process that will forbid new threads later (grading/_worker.py, before
    its RLIMIT_NPROC). `one_arena`: ask glibc's malloc to serve every thread from one arena
    (M_ARENA_MAX 1; by default each thread that allocates may reserve an arena of 64 MiB of
    address space, which an address-space limit counts; only one warp thread runs at a
    time, so nothing waits for the arena's lock). Raises RuntimeError if the system
    refuses a thread."""
    if one_arena:
        import ctypes
        import platform
        if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
            mallopt = ctypes.CDLL(None).mallopt
            mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
            mallopt(_M_ARENA_MAX, 1)
    _POOL.reserve(n)


def busy_threads() -> int:
    """Warp threads running a task now (0 between launches)."""
    return _POOL.busy


class _Tracker(RaceTracker):
    """The block's race tracker (races.py, as the user asked for it), which also follows,
    warp by warp, who read and wrote each 4-byte shared word in the current barrier
    interval, to find the accesses this schedule put in the opposite order to the lockstep
    run's hazards (`Flip`), and to learn warp orders for seed 0."""

    def __init__(self, run, nblocks, nbytes, check_races, check_uninitialized):
        super().__init__(nblocks, nbytes, check_races=check_races,
                         check_uninitialized=check_uninitialized)
        self.run = run
        self.block_words = nwords = max(1, nbytes // 4)
        self.w_warp = np.full(nblocks * nwords, -1, dtype=np.int32)
        self.w_line = np.zeros(nblocks * nwords, dtype=np.int32)
        self.r_line = np.zeros((nblocks * nwords, run.nwarps), dtype=np.int32)
        self.epoch = np.zeros(nblocks, dtype=np.int64)     # barriers completed, per block

    @staticmethod
    def _words(flat, size):
        w = flat >> 2
        if size > 4:
            w = (w[:, None] + np.arange(size // 4)).reshape(-1)
        return w

    def _follow(self, flat, tid, line, size, kind):
        run = self.run
        if not run.pairs or tid.shape[0] == 0:
            return
        warp = int(tid[0]) // WARP_SIZE
        words = np.unique(self._words(np.asarray(flat, dtype=np.int64), size))
        found = []
        prev_w = self.w_warp[words]
        other = (prev_w >= 0) & (prev_w != warp)
        if other.any():
            i = np.flatnonzero(other)
            found.append(("W", prev_w[i], self.w_line[words[i]], words[i]))
        if kind == "W":
            rl = self.r_line[words]
            rl_other = rl.copy()
            rl_other[:, warp] = 0
            hit = rl_other > 0
            if hit.any():
                wi, hw = np.nonzero(hit)
                found.append(("R", hw, rl_other[wi, hw], words[wi]))
            self.w_warp[words] = warp
            self.w_line[words] = line
        else:
            self.r_line[words, warp] = line
        for first_kind, warps_, lines_, words_ in found:
            keys = {}
            for w2, l2, wd in zip(warps_.tolist(), lines_.tolist(), words_.tolist()):
                keys.setdefault((w2, l2), wd)
            for (w2, l2), wd in keys.items():
                run.conflict(first_kind, int(w2), int(l2), kind, warp, line, wd)

    def on_read(self, flat, tid, line, size):
        found = super().on_read(flat, tid, line, size)
        self._follow(flat, tid, line, size, "R")
        return found

    def on_write(self, flat, tid, line, size):
        found = super().on_write(flat, tid, line, size)
        self._follow(flat, tid, line, size, "W")
        return found

    def barrier(self, blocks):
        super().barrier(blocks)
        blocks = np.asarray(blocks, dtype=np.int64)
        self.epoch[blocks] += 1
        n = self.block_words
        self.w_warp.reshape(-1, n)[blocks] = -1
        self.r_line.reshape(-1, n, self.run.nwarps)[blocks] = 0


class _GroupWarps(Warps):
    """`warps.Warps` for a warp run on its own: a collective of a tile wider than a warp
    needs warps this schedule runs apart."""

    def _refuse(self, threads):
        raise UnsupportedFeatureError(
            f"{self.kernel_name}: a collective of a thread_block_tile<{threads}> (wider than a "
            f"warp) under schedule='adversarial', which runs each warp on its own: not "
            f"supported; run this kernel with the default schedule")

    def tile_missing(self, threads, mask):
        if threads > WARP_SIZE:
            self._refuse(threads)
        return super().tile_missing(threads, mask)

    def tile_shuffle_xor(self, value, lane_mask, threads, mask=None, line=None):
        if threads > WARP_SIZE:
            self._refuse(threads)
        return super().tile_shuffle_xor(value, lane_mask, threads, mask, line)


def _refuse_async(name):
    def refuse(*args, **kwargs):
        raise UnsupportedFeatureError(
            f"{name}: asynchronous copies and cuda::barrier under schedule='adversarial' are "
            f"not supported (their completions are tracked per block, and this schedule runs "
            f"each warp on its own); run this kernel with the default schedule")
    return refuse


class _WarpBarriers:
    """What a warp's context calls for barriers: `__syncthreads()` waits for the block
    (`_BatchRun.arrive`); `__syncwarp()` goes to the block's `Barriers` directly."""

    def __init__(self, run, worker):
        self.run, self.worker = run, worker

    def syncthreads(self, line, mask, exited, what="__syncthreads()", will_exit=None,
                    branches=None):
        self.run.arrive(self.worker, (line, mask, exited, what, will_exit, branches))

    def syncwarp(self, line, mask, any_active):
        self.run.barriers.syncwarp(line, mask, any_active)

    def phase_completed(self, blocks):
        _refuse_async(self.run.launch.kernel.name)()


class WarpContext(Context):
    """An `execute.Context` for one warp of a block run on its own: the block's threads,
    the warp's lanes active, and a point where the schedule may switch warps before every
    memory access and after every loop iteration (`point`, the warp's `_Worker.point`)."""

    point = None
    writers = None          # the Adversary's writers dict, when followed

    def load(self, addr, t, line):
        self.point()
        return Context.load(self, addr, t, line)

    def store(self, addr, t, value, line):
        self.point()
        Context.store(self, addr, t, value, line)
        if self.writers is not None and self.any:
            self._stored(addr)

    def _stored(self, addr):
        """Record this warp as the last writer of the global elements at `addr` (active
        lanes), for `ScheduleReport.writers`."""
        w = self.warps
        lanes = np.flatnonzero(self.mask)
        a = addr[lanes] if isinstance(addr, np.ndarray) else np.full(lanes.shape[0], addr,
                                                                   dtype=np.int64)
        region = a >> M.REGION_SHIFT
        ids = w.block_ids[w.blk[lanes]] * w.warps_per_block + w.tib[lanes] // WARP_SIZE
        for r in np.unique(region[region >= M.FIRST_GLOBAL_REGION]).tolist():
            alloc = self.gmem.lookup(int(r))
            if alloc is None or alloc.readonly:
                continue
            sel = region == r
            e = (a[sel] - M.make_address(int(r))) // max(1, alloc.elem_size)
            arr = self.writers.get(alloc.name)
            if arr is None:
                arr = self.writers[alloc.name] = np.full(
                    alloc.size // max(1, alloc.elem_size), -1, dtype=np.int64)
            ok = (e >= 0) & (e < arr.shape[0])
            arr[e[ok]] = ids[sel][ok]

    def load_struct(self, addr, t, line):
        self.point()
        return Context.load_struct(self, addr, t, line)

    def store_struct(self, addr, t, value, line):
        self.point()
        Context.store_struct(self, addr, t, value, line)

    def copy_struct(self, dst, src, t, line):
        self.point()
        Context.copy_struct(self, dst, src, t, line)

    def atomic(self, op, addr, t, vals, line):
        self.point()
        return Context.atomic(self, op, addr, t, vals, line)

    def step(self, line, trips=0):
        Context.step(self, line, trips)
        self.point(True)


class _Worker:
    """One warp of a block: its context and the Python thread that runs it."""

    def __init__(self, run, index):
        self.run, self.index = run, index
        self.state = _READY
        self.arrival = None
        self.steps = 0
        self.wake = threading.Semaphore(0)
        launch = run.launch
        ctx = WarpContext(launch, run.block_ids)
        ctx.warps = _GroupWarps(launch.kernel.name, launch.block, launch.grid, run.block_ids)
        mem = ctx.memory
        mem.shared = run.shared
        mem.shared_views = {}
        mem.races = run.tracker
        for name in ("check_write", "barrier_state", "async_mark"):
            setattr(mem, name, _refuse_async(launch.kernel.name))
        ctx.barriers = _WarpBarriers(run, self)
        self.lanes = ctx.warps.tib // WARP_SIZE == index
        ctx.set_mask(self.lanes)
        ctx.point = self.point
        ctx.writers = run.adversary.writers
        self.ctx = ctx
        self.finished = threading.Event()

    def _main(self):
        run = self.run
        self.wake.acquire()
        try:
            if not run.aborted:
                env = [None] * run.launch.kernel.nslots
                for slot, value in zip(run.launch.kernel.param_slots, run.env_values):
                    env[slot] = value
                self.ctx.env = env
                with np.errstate(all="ignore"):
                    run.launch.kernel.run(self.ctx)
        except _Abort:
            pass
        except BaseException as exc:        # handed to the launch's thread, re-raised there
            run.error = exc
        finally:
            self.state = _DONE
            run.switch = False
            self.finished.set()
            run.baton.release()

    def pause(self, state, switch=False):
        """Give control back to the block's scheduler until it runs this warp again;
        `switch`: at a preemption point (another ready warp runs next)."""
        run = self.run
        self.state = state
        self.steps = 0
        run.switch = switch
        run.baton.release()
        self.wake.acquire()
        if run.aborted:
            raise _Abort
        self.state = _READY

    def point(self, step=False):
        """A point where the schedule may switch warps: a memory access (or, with `step`,
        a loop iteration) of this warp, about to happen."""
        if self.run.aborted:
            raise _Abort
        if step:
            self.steps += 1
            if self.steps >= SPIN_STEPS:
                self.pause(_READY, switch=True)
                return
        if self.run.policy.preempt(step):
            self.pause(_READY, switch=True)


class _BatchRun:
    """A batch of whole blocks under an adversarial schedule: warp w of every block of the
    batch is one `_Worker` (its lanes in lockstep, as a warp's are; the blocks of a batch
    then follow one order, a legal schedule: each block on its own could run so), and the
    batch's shared memory, race tracker and barrier."""

    def __init__(self, adversary, block_ids, env_values):
        launch = adversary.launch
        self.adversary = adversary
        self.launch = launch
        self.block_ids = block_ids
        self.env_values = env_values
        tpb = launch.block[0] * launch.block[1] * launch.block[2]
        self.nwarps = ceil_div(tpb, WARP_SIZE)
        self.pairs = adversary.pairs
        nb = len(block_ids)
        self.shared = np.zeros(nb * launch.shared_stride, dtype=np.uint8)
        opts = launch.options
        self.tracker = _Tracker(self, nb, launch.shared_stride, opts.hazards != "ignore",
                                opts.check_uninitialized)
        self.warps = Warps(launch.kernel.name, launch.block, launch.grid, self.block_ids)
        self.barriers = Barriers(self.warps, launch.counters, self.tracker,
                                 launch.diagnostics.add_hazard)
        self.baton = threading.Semaphore(0)
        self.switch = False
        self.aborted = False
        self.error = None
        self.epoch = 0
        self.workers = []
        self.states = [_READY] * self.nwarps
        self.policy = make_policy(adversary.seed, int(block_ids[0]), self.nwarps,
                                  adversary.constraints, adversary.restriction,
                                  _StateView(self))

    def run(self):
        self.workers = [_Worker(self, i) for i in range(self.nwarps)]
        try:
            _POOL.reserve(self.nwarps)
        except RuntimeError:
            raise UnsupportedFeatureError(
                f"{self.launch.kernel.name}: schedule='adversarial' runs each warp in a thread "
                f"of its own, and this process may start no more threads (call "
                f"tilinglib.toolchain.runtime.schedule.reserve_threads() before limiting it)") from None
        for w in self.workers:
            _POOL.submit(w._main)
        try:
            self._schedule()
        except BaseException:
            self._abort()
            raise
        for w in self.workers:
            w.finished.wait()
            self.launch.counters.flops += w.ctx.flops
        if self.error is not None:
            raise self.error

    def _schedule(self):
        current = None
        while self.error is None:
            ready = [w.index for w in self.workers if w.state == _READY]
            if not ready:
                waiting = [w for w in self.workers if w.state == _BARRIER]
                if not waiting:
                    return
                self._release(waiting)
                current = None          # each barrier interval starts from its order
                continue
            nxt = self.policy.pick(ready, current, self.switch)
            if current is not None and nxt != current:
                self.adversary.switches += 1
            current = nxt
            self.workers[nxt].wake.release()
            self.baton.acquire()
        self._abort()

    def _abort(self):
        self.aborted = True
        for w in self.workers:
            if not w.finished.is_set():
                w.wake.release()
        for w in self.workers:
            w.finished.wait()

    def arrive(self, worker, arrival):
        worker.arrival = arrival
        worker.pause(_BARRIER)
        worker.arrival = None

    def _release(self, waiting):
        """Every warp that has not exited waits at a barrier: complete it as the lockstep
        schedule's `Barriers` does, with the block's threads put together."""
        T = self.warps.T
        mask = np.zeros(T, dtype=bool)
        exited = np.zeros(T, dtype=bool)
        will = None
        branches = None
        for w in self.workers:
            if w.state == _DONE:
                exited |= w.lanes
        for w in waiting:
            line, m, ex, what, wx, br = w.arrival
            mask |= m & w.lanes
            exited |= ex & w.lanes
            if wx is not None:
                will = (wx & w.lanes) if will is None else will | (wx & w.lanes)
            if br is not None:
                if branches is None:
                    branches = [[br[0][0], np.zeros(T, bool)], [br[1][0], np.zeros(T, bool)]]
                branches[0][1] |= br[0][1] & w.lanes
                branches[1][1] |= br[1][1] & w.lanes
        line, what = waiting[0].arrival[0], waiting[0].arrival[3]
        self.barriers.syncthreads(line, mask, exited, what, will_exit=will,
                                  branches=None if branches is None else
                                  tuple((l, m) for l, m in branches))
        self.epoch += 1
        self.policy.new_epoch(self.epoch)
        for w in waiting:
            w.state = _READY

    def conflict(self, first_kind, first_warp, first_line, kind, warp, line, word):
        """Warp `first_warp`'s access (`first_kind` at `first_line`) and then warp `warp`'s
        (`kind` at `line`) touched shared word `word` in this barrier interval."""
        adv = self.adversary
        here = (first_kind, first_line, kind, line)
        reverse = (kind, line, first_kind, first_line)
        if here in self.pairs and reverse not in self.pairs:
            adv.constraints.add((warp, first_warp))      # lockstep order: reverse it later
            return
        hazard = self.pairs.get(reverse)
        if hazard is None or here in self.pairs:
            return
        adv.flip_count += 1
        if len(adv.flips) < MAX_FLIPS:
            blk, offset = divmod(word * 4, self.launch.shared_stride)
            element = self.workers[warp].ctx.memory._element_of("shared", offset, None)
            block = self.warps.coords(blk * self.warps.tpb)[0]
            adv.flips.append(Flip(block, int(self.tracker.epoch[blk]), element, first_warp,
                                  first_kind, first_line, warp, kind, line, hazard.kind,
                                  self.epoch))


class _StateView:
    """The run states of a block's warps, by index (for `_Hold`)."""

    def __init__(self, run):
        self.run = run

    def __getitem__(self, i):
        workers = self.run.workers
        return workers[i].state if i < len(workers) else _READY


class Adversary:
    """Runs a launch under an adversarial schedule (see the module docstring): `seed`, the
    lockstep hazards `plan` (a `Plan`), an optional `restriction` (`Restriction`)."""

    def __init__(self, launch, seed, plan, restriction=None, follow_writers=False):
        self.launch = launch
        self.writers = {} if follow_writers else None
        self.seed = seed
        self.pairs = plan.pairs()
        self.restriction = restriction
        self.constraints: set = set()
        self.flips: list = []
        self.flip_count = 0
        self.switches = 0
        if launch.options.trace:
            raise LaunchError("trace=True records the lockstep schedule: pass either trace=True "
                              "or schedule='adversarial', not both")

    def run(self, env_values):
        launch = self.launch
        nblocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
        per_batch = self.blocks_per_batch()
        for start in range(0, nblocks, per_batch):
            if launch.deadline is not None and start and time.monotonic() > launch.deadline:
                launch._out_of_time(start, nblocks)
            ids = np.arange(start, min(nblocks, start + per_batch), dtype=np.int64)
            _BatchRun(self, ids, env_values).run()
        launch.diagnostics.warn_block_shape()

    def blocks_per_batch(self) -> int:
        """The lockstep schedule's blocks per batch (execute.Launch.blocks_per_batch), fewer
        where the per-warp record of shared-word accesses would pass `TRACK_ENTRIES`."""
        launch = self.launch
        tpb = launch.block[0] * launch.block[1] * launch.block[2]
        per_block = max(1, launch.shared_stride // 4) * ceil_div(tpb, WARP_SIZE)
        return max(1, min(launch.blocks_per_batch(), TRACK_ENTRIES // per_block))

    def report(self) -> ScheduleReport:
        return ScheduleReport(self.seed, self.restriction, tuple(self.flips), self.flip_count,
                              self.switches, self.writers)


__all__ = ["SCHEDULES", "check_schedule", "Plan", "Restriction", "Flip", "ScheduleReport",
           "Adversary", "reserve_threads", "busy_threads"]
