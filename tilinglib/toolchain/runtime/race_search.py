"""Search adversarial warp schedules for the wrong answer a detected race gives.

Input: an emulated kernel (a `module.Function`, or CUDA source and a kernel name), its launch
(arguments as for a call: NumPy scalars and In/Out/InOut arrays, block, grid, shared), the
seeds to try and a time budget. Output: a `RaceFailure`: either the smallest evidence found
(which element of which output is wrong, by how much, the two CUDA statements and the warps
whose order made it so, the seed and the barrier interval), or why there is none.

How: one lockstep run gives the reference output and the hazards (races.py). If it found a
read/write race, each seed runs the launch under `schedule="adversarial"` (schedule.py) with
those hazards as its plan, and its outputs are compared bit for bit with the reference. The
first seed whose output differs is shrunk: first to one barrier interval (the seed's order
there, warp-by-warp round robin, which is the lockstep order, everywhere else), then to one
pair of warps (round robin, except that one warp is held back until the other waits at a
barrier). Each candidate is a run of its own, kept only if its output still differs. Every
run is deterministic, so the same call gives the same evidence.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ...errors import LaunchError, StepBudgetExceeded
from .schedule import _ORDER, Flip, Plan, Restriction
from ...gpu import WARP_SIZE, ceil_div

MAX_INTERVALS = 6      # barrier intervals tried when shrinking
MAX_PAIRS = 8          # warp pairs tried when shrinking
DEFAULT_SEEDS = 8
DEFAULT_SECONDS = 60.0
RUN_SECONDS = 10.0     # the least time one run gets, even when the budget is nearly spent


@dataclass(frozen=True)
class RaceFailure:
    """What `find_race_failure` found. `found`: whether an adversarial schedule changed an
    output. Then `seed` (the schedule="adversarial" seed that does), `restriction` (the
    shrunk schedule: `schedule.Restriction`, None when shrinking kept nothing smaller),
    `output` (the kernel parameter), `index` (a tuple into that array), `expected` (the
    lockstep run's value there), `got` (the adversarial one), `difference` (got - expected,
    a float; NaN where either is NaN), `wrong_elements` of `elements` (that output under
    the shrunk schedule), `flip` (the `schedule.Flip`: the two accesses in the opposite of
    their lockstep order) and `statements` ((line, source text) of the flip's two
    accesses, in the order they ran). Always: `kernel`, `seeds_tried`, `seconds` (wall
    time of the search), `hazards` (the lockstep run's read/write races), `reason` (why
    nothing was found, when so). `str()` gives the evidence in words (without `seconds`, so
    that the same search prints the same text)."""

    found: bool
    kernel: str
    seeds_tried: int
    seconds: float
    hazards: tuple = ()
    seed: int | None = None
    restriction: Restriction | None = None
    output: str | None = None
    index: tuple | None = None
    expected: object = None
    got: object = None
    difference: float | None = None
    wrong_elements: int = 0
    elements: int = 0
    flip: Flip | None = None
    statements: tuple = ()
    reason: str = ""
    seed_wrong_elements: int = 0

    def __str__(self) -> str:
        if not self.found:
            return f"{self.kernel}: {self.reason}"
        where = self.output + "".join(f"[{i}]" for i in self.index)
        lines = [f"{self.kernel} gives a wrong answer under schedule='adversarial', "
                 f"seed={self.seed} (found after {self.seeds_tried} seed"
                 f"{'s' if self.seeds_tried != 1 else ''}):",
                 f"  {where} = {_fmt(self.got)}, where the lockstep run gives "
                 f"{_fmt(self.expected)}: off by {_fmt(self.difference)} "
                 f"({self.wrong_elements:,} of {self.elements:,} elements of {self.output} "
                 f"differ)"]
        r, flip = self.restriction, self.flip
        if r is not None and r.hold is not None:
            lines.append(f"  The order: lockstep everywhere, except that in barrier interval "
                         f"{r.epoch} ({_interval(r.epoch)}) warp {r.hold[0]} waited until warp "
                         f"{r.hold[1]} reached a barrier.")
        elif r is not None:
            lines.append(f"  The order: lockstep everywhere, except in barrier interval "
                         f"{r.epoch} ({_interval(r.epoch)}), where the warps ran in seed "
                         f"{self.seed}'s order.")
        if flip is not None:
            (l1, t1), (l2, t2) = self.statements
            verb = {"R": "read", "W": "wrote"}
            lines += [f"  There warp {flip.first_warp} {verb[flip.first_kind]} "
                      f"{flip.element} (block {flip.block}) at kernel.cu:{l1}:  {t1}",
                      f"  before warp {flip.second_warp} {verb[flip.second_kind]} it at "
                      f"kernel.cu:{l2}:  {t2}",
                      f"  In lockstep these two accesses ran the other way round (a "
                      f"{flip.hazard} race): no __syncthreads() orders them."]
        lines.append(f"  The same seed gives the same wrong answer: f(..., schedule="
                     f"'adversarial', seed={self.seed}) ({self.seed_wrong_elements:,} element"
                     f"{'s' if self.seed_wrong_elements != 1 else ''} of {self.output} "
                     f"{'differ' if self.seed_wrong_elements != 1 else 'differs'} under the "
                     f"whole seed).")
        return "\n".join(lines)


    def summary(self) -> str:
        """The evidence in one sentence (`str()` gives it in full)."""
        if not self.found:
            return f"{self.kernel}: {self.reason}"
        where = self.output + "".join(f"[{i}]" for i in self.index)
        r, flip = self.restriction, self.flip
        order = ""
        if r is not None and r.hold is not None:
            order = (f", warp {r.hold[0]} held back until warp {r.hold[1]} reached a barrier "
                     f"in barrier interval {r.epoch}")
        text = (f"with the warps in another order a GPU may produce (schedule='adversarial', "
                f"seed={self.seed}{order}), {where} = {_fmt(self.got)} instead of "
                f"{_fmt(self.expected)} ({self.wrong_elements:,} of {self.elements:,} elements "
                f"wrong)")
        if flip is not None:
            verb = {"R": "read", "W": "wrote"}
            text += (f": warp {flip.first_warp} {verb[flip.first_kind]} {flip.element} at "
                     f"kernel.cu:{flip.first_line} before warp {flip.second_warp} "
                     f"{verb[flip.second_kind]} it at kernel.cu:{flip.second_line}")
        return text[0].upper() + text[1:] + "."


def _interval(epoch) -> str:
    if epoch == 0:
        return "before each block's first __syncthreads()"
    return f"after each block's {_ordinal(epoch)} __syncthreads()"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return str(v)


def _seed_list(seeds) -> list:
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise LaunchError(f"seeds={seeds}: give how many seeds to try (1 or more), or "
                              f"a list of seeds")
        return list(range(int(seeds)))
    try:
        out = [s for s in seeds]
    except TypeError:
        raise LaunchError(f"seeds must be a number of seeds or a list of them, not "
                          f"{seeds!r}") from None
    if not out:
        raise LaunchError("seeds is empty: give at least one seed to try")
    from .schedule import check_schedule
    for s in out:
        check_schedule("adversarial", s)
    return [int(s) for s in out]


def _function(kernel, name, options, no_extern_c):
    from .module import Function, SourceModule
    if isinstance(kernel, Function):
        return kernel
    if isinstance(kernel, str):
        mod = SourceModule(kernel, options=options, no_extern_c=no_extern_c)
        if name is None:
            names = sorted(mod._program.kernels)
            if len(names) != 1:
                raise LaunchError(f"the source has {len(names)} kernels ({', '.join(names)}): "
                                  f"name the one to search with name=...")
            name = names[0]
        return mod.get_function(name)
    raise LaunchError(f"find_race_failure needs an emulated kernel "
                      f"(tilinglib.emulator.SourceModule(...).get_function(...)) or its CUDA "
                      f"source, not {type(kernel).__name__}: schedules are the emulator's")


class _Runner:
    """Runs one launch on fresh copies of its arguments; returns the outputs."""

    def __init__(self, f, args, block, grid, shared, deadline):
        from .module import In, InOut, Out
        kinds = {"In": In, "Out": Out, "InOut": InOut}
        # PyCUDA's In/Out/InOut (tl.In on a GPU) become the emulator's, by their names
        self.args = [(kinds.get(type(a).__name__, InOut), a.array) if hasattr(a, "array")
                     else (None, a) for a in args]
        self.f = f
        self.block, self.grid, self.shared = block, grid, shared
        self.deadline = deadline
        self.outputs = [(i, p.name) for i, (p, (kind, _)) in enumerate(zip(f.params, self.args))
                        if kind in (Out, InOut)]

    def run(self, **kw):
        copies = [a if kind is None else kind(np.array(a, copy=True)) for kind, a in self.args]
        left = None if self.deadline is None else max(RUN_SECONDS,
                                                          self.deadline - time.monotonic())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.f._launch(copies, block=self.block, grid=self.grid, shared=self.shared,
                           max_seconds=left, **kw)
        return [copies[i].array for i, _ in self.outputs]


def _differs(a, b) -> np.ndarray:
    """Elements of `a` and `b` (same shape and dtype) whose bits differ."""
    if a.dtype.kind in "fc" or a.dtype.itemsize in (1, 2, 4, 8):
        u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(a.dtype.itemsize)
        if u is not None and a.dtype.kind != "c":
            return a.view(u) != b.view(u)
    return a != b


def _first_difference(ref, got):
    """(output number, flat indices that differ) of the first output that differs, or None."""
    for k, (r, g) in enumerate(zip(ref, got)):
        bad = _differs(r.reshape(-1), g.reshape(-1))
        if bad.any():
            return k, np.flatnonzero(bad)
    return None


def find_race_failure(kernel, *args, block, grid=(1, 1), shared=0, seeds=DEFAULT_SEEDS,
                      max_seconds=DEFAULT_SECONDS, name=None, options=None,
                      no_extern_c=False) -> RaceFailure:
    """Find an adversarial warp schedule under which `kernel`'s race changes its answer.

    `kernel`: an emulated `Function` (``tilinglib.emulator.SourceModule(src).get_function(
    name)``), or CUDA source (then `name` picks the kernel when there are several, `options`
    and `no_extern_c` are SourceModule's). `args`, `block`, `grid`, `shared`: the launch, as
    in a call of the kernel (NumPy scalars; arrays wrapped in In, Out or InOut; each run
    gets fresh copies, so the arrays passed are never written). `seeds`: how many seeds to
    try (0, 1, ...), or a list of them (each 0 to 2**32 - 1). `max_seconds`: wall-clock
    budget of the whole search (the lockstep run, the seeds, the shrinking), in seconds,
    looked at between runs (a run started gets at least `RUN_SECONDS`, 10 s); None: none.

    Returns a `RaceFailure` (print it for the evidence): `found` False, with the reason,
    when the lockstep run detects no read/write race on shared memory, or when no seed
    tried (`seeds_tried`) changes an output within the budget. Deterministic: the same call
    gives the same result. Raises what the kernel's launch raises (`KernelRuntimeError` and
    its kinds, `LaunchError` for bad arguments or seeds, `UnsupportedFeatureError` for what
    the adversarial schedule cannot run: schedule.py)."""
    start = time.monotonic()
    seed_list = _seed_list(seeds)
    if max_seconds is not None and not max_seconds > 0:
        raise LaunchError(f"max_seconds must be a positive number of seconds or None, not "
                          f"{max_seconds!r}")
    f = _function(kernel, name, options, no_extern_c)
    deadline = None if max_seconds is None else start + float(max_seconds)
    runner = _Runner(f, list(args), block, grid, shared, deadline)
    if not runner.outputs:
        raise LaunchError(f"{f.name}: no argument is Out(...) or InOut(...), so no output "
                          f"could differ: pass the arrays the kernel writes wrapped in Out")
    ref = runner.run(hazards="warn")
    hazards = tuple(h for h in f.last_report.hazards if h.kind in _ORDER)
    if not hazards:
        return RaceFailure(False, f.name, 0, time.monotonic() - start, (),
                           reason="the lockstep run detects no race on shared memory, so "
                                  "there is no order to search (a kernel without races gives "
                                  "the same answer under every schedule)")
    plan = Plan(hazards)
    tried = flipped = stopped = 0
    for seed in seed_list:
        if deadline is not None and time.monotonic() > deadline:
            break
        tried += 1
        try:
            got = runner.run(hazards="ignore", check_uninitialized=False,
                             schedule="adversarial", seed=seed, plan=plan)
        except StepBudgetExceeded:
            stopped += 1        # every warp's loop iterations count: it may need more
            continue
        flipped += f.last_schedule.flip_count
        diff = _first_difference(ref, got)
        if diff is not None:
            return _shrink(f, runner, ref, plan, seed, got, diff, hazards, tried, start,
                           deadline)
    budget = "" if tried == len(seed_list) else \
        f" (the {max_seconds:g} s budget ended after {tried} of {len(seed_list)} seeds)"
    why = ""
    if stopped:
        why = (f" {stopped} of the seeds ran out of their step or time budget (under this "
               f"schedule every warp's loop iterations count: pass a smaller launch).")
    elif tried and not flipped:
        why = (" In every schedule tried the racing accesses kept their lockstep order: the "
               "races are between lanes of one warp, which the emulator runs in lockstep (a "
               "GPU since Volta need not), or between accesses no schedule could reorder.")
    elif flipped:
        why = (f" The schedules reversed {flipped:,} pairs of racing accesses; the values "
               f"they moved did not reach an output (try more seeds).")
    return RaceFailure(False, f.name, tried, time.monotonic() - start, hazards,
                       reason=f"no wrong answer found in {tried} seed"
                              f"{'s' if tried != 1 else ''}{budget}: the lockstep run detects "
                              f"{len(hazards)} race{'s' if len(hazards) != 1 else ''}, but no "
                              f"schedule tried changed an output.{why}")


def _shrink(f, runner, ref, plan, seed, got, diff, hazards, tried, start, deadline):
    """The smallest schedule found, from the failing `seed`'s (see the module docstring)."""
    seed_flips = f.last_schedule.flips
    seed_wrong = diff[1].shape[0]
    best = (None, got, diff, seed_flips, None)

    def attempt(restriction):
        if deadline is not None and time.monotonic() > deadline:
            return None
        try:
            out = runner.run(hazards="ignore", check_uninitialized=False,
                             schedule="adversarial", seed=seed, plan=plan,
                             restriction=restriction, follow_writers=True)
        except StepBudgetExceeded:
            return None
        d = _first_difference(ref, out)
        return None if d is None else (restriction, out, d, f.last_schedule.flips,
                                       f.last_schedule.writers)

    intervals = list(dict.fromkeys(x.interval for x in seed_flips))[:MAX_INTERVALS]
    for epoch in intervals:
        found = attempt(Restriction(epoch=epoch))
        if found is not None:
            best = found
            break
    epoch = best[0].epoch if best[0] is not None else None
    candidates = [x for x in best[3] if epoch is None or x.interval == epoch]
    pairs = list(dict.fromkeys((x.interval, x.second_warp, x.first_warp)
                               for x in candidates))[:MAX_PAIRS]
    for interval, held, until in pairs:
        found = attempt(Restriction(epoch=interval, hold=(held, until)))
        if found is not None:
            best = found
            break
    restriction, out, (k, bad), flips, writers = best
    if writers is None:           # the seed's own run, repeated to see who stored what
        found = attempt(None)
        if found is not None:
            restriction, out, (k, bad), flips, writers = found
    name = runner.outputs[k][1]
    flip, i = _evidence(runner, flips, restriction, bad, (writers or {}).get(name))
    r, g = ref[k], out[k]
    index = tuple(int(j) for j in np.unravel_index(i, r.shape))
    expected, value = r.reshape(-1)[i].item(), g.reshape(-1)[i].item()
    difference = float(value) - float(expected) if np.isfinite(
        [float(value), float(expected)]).all() else float("nan")
    lines = f._program.pre.source_lines
    statements = ()
    if flip is not None:
        statements = tuple((ln, lines[ln - 1].strip() if 0 < ln <= len(lines) else "")
                           for ln in (flip.first_line, flip.second_line))
    return RaceFailure(True, f.name, tried, time.monotonic() - start, hazards, seed,
                       restriction, name, index, expected, value, difference,
                       int(bad.shape[0]), int(r.size), flip, statements,
                       seed_wrong_elements=int(seed_wrong))


def _evidence(runner, flips, restriction, bad, writers):
    """(the flip, the flat index of the wrong element) to show: a flip of the held pair
    when the schedule was shrunk to one, and an element that the flip's victim (the warp
    whose read it moved) stored, in the flip's block, when the writers say which; else the
    first flip and the first wrong element."""
    chosen = list(flips)
    if restriction is not None and restriction.hold is not None:
        held, until = restriction.hold
        pair = [x for x in flips if x.second_warp == held and x.first_warp == until]
        chosen = pair or chosen
    if writers is not None and chosen:
        grid = tuple(int(g) for g in runner.grid) + (1, 1)
        gx, gy = grid[0], grid[1]
        block = tuple(int(b) for b in runner.block) + (1, 1)
        nwarps = ceil_div(block[0] * block[1] * block[2], WARP_SIZE)
        who = writers[bad]
        for x in chosen:
            victim = x.first_warp if x.first_kind == "R" else x.second_warp
            bx, by, bz = x.block
            want = (bx + by * gx + bz * gx * gy) * nwarps + victim
            hit = np.flatnonzero(who == want)
            if hit.shape[0]:
                return x, int(bad[hit[0]])
    return (chosen[0] if chosen else None), int(bad[0])


__all__ = ["find_race_failure", "RaceFailure"]
