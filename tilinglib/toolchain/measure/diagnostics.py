"""What one launch tells the student beyond its faults: kernel warnings and hazards.

Input: what the batches find while they run (a store into an In(...) argument, a local read
before it is set, a shared-memory hazard, an Out(...) element nothing wrote) and the launch's
kernel, block and grid. Output: each `KernelWarning` issued once per launch at the student's
``kernel.cu:<line>``, the hazards collected for the `LaunchReport` (or `RaceError` at the
first one with hazards="raise"), and the `BlockShapeWarning` when the block does not match
the kernel's thread-indexed shared arrays in a way that explains them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ...errors import (BarrierError, BlockShapeWarning, DivergentBarrierWarning,
                      InputWriteWarning, KernelWarning,
                      OutputNotWrittenWarning, RaceError, UninitializedReadWarning)
from ..model import c_types as ct
from ..model import memory as M
from .races import BARRIER_KINDS, Hazard
from .report import LaunchReport


class RaceWarning(KernelWarning):
    """Issued after a launch in which the emulator found shared-memory hazards."""


class Diagnostics:
    """The kernel warnings and hazards of one launch of `kernel` (a `compiler.KernelCode`)
    with `block` and `grid` (3-tuples) and `options` (`execute.LaunchOptions`: its
    `hazards` mode). `hazards` maps (kind, line, other line, array) to the `Hazard` (with
    its count); `block_hint` is the BlockShapeWarning's text once issued."""

    def __init__(self, kernel, block, grid, options):
        self.kernel = kernel
        self.block = block
        self.grid = grid
        self.options = options
        self.hazards: dict = {}
        self.warned: set = set()          # KernelWarning sites already reported
        self.mismatches = block_mismatches(kernel, block)
        self.block_hint = None            # the BlockShapeWarning's text, once issued
        self.shape_found: set = set()     # the mismatches that hazards showed to matter

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

    def warn_unwritten(self, gmem) -> None:
        """After the launch: an OutputNotWrittenWarning for each Out(...) array of `gmem`
        (the launch's memory.GlobalMemory) with elements no store wrote (on a GPU they hold
        whatever device memory held)."""
        for alloc in gmem.allocations:
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

    def warn_unset(self, site, warps, lane) -> None:
        """A local scalar read by thread `lane` of the batch (`warps`: its warps.Warps)
        before it was given a value."""
        name, line, decl_line, t = site
        if ("unset", name, line) in self.warned:
            return
        block, thread = warps.coords(lane)
        zero = _ZERO_TEXT.get(getattr(t, "kind", ""), None)
        fix = (f"Write '{t} {name} = {zero};'." if zero is not None else
               f"Give '{name}' a value where it is declared (line {decl_line}).")
        self._warn(("unset", name, line),
                   f"kernel {self.kernel.name}: '{name}' is read at line {line} before it is "
                   f"given a value: on a GPU it starts with whatever its register held. {fix} "
                   f"(The first such read: thread {thread} in block {block}.)",
                   UninitializedReadWarning, line)

    def warn_unset_local(self, warps, lane, offset, line) -> None:
        """An element of a local array read by thread `lane` before it was written."""
        var = next((v for v in self.kernel.local_vars
                    if v.offset <= offset < v.offset + v.ctype.size), None)
        if var is None:
            return
        if ("unset-local", var.name, line) in self.warned:
            return
        base = var.ctype.base_elem if var.ctype.is_array else var.ctype
        if base.is_struct:      # Frag f; f.v[1] / Frag fs[2]; fs[1].n: the member's path
            element = var.name + ct.member_path(var.ctype, offset - var.offset)
        elif not var.ctype.is_array:      # a scalar whose address is taken
            element = var.name
        else:
            element = M.describe_element(var.name, var.ctype.shape, base.size,
                                         offset - var.offset)
        block, thread = warps.coords(lane)
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
        elif base.is_struct:
            fix = (f"Give every member a value first: '{base} {var.text} = {{}};' zeroes "
                   f"them all.")
        elif not var.ctype.is_array:
            fix = f"Give it a value first: '{base} {var.name} = {zero};'."
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
        self.block_hint = describe_mismatches(self.kernel, self.block, chosen,
                                              self.mismatches)
        first = next(v for v in self.kernel.shared if v.name == chosen[0].array)
        self._warn(("block",), f"kernel {self.kernel.name}: {self.block_hint}",
                   BlockShapeWarning, first.line)

    def add_hazard(self, h: Hazard) -> None:
        key = (h.kind, h.line, h.other_line, h.array)
        old = self.hazards.get(key)
        if old is None:
            self.hazards[key] = h
            if self.options.hazards == "raise" and h.kind in BARRIER_KINDS:
                raise BarrierError(f"{h.kernel}: {h}.\n{CONDITIONAL_BARRIER_RULE} "
                                   f"(hazards=\"raise\" stops here; with hazards=\"warn\" "
                                   f"the launch completes as on an H200.)",
                                   kernel=h.kernel, line=h.line, block=h.block,
                                   thread=h.thread)
            if self.options.hazards == "raise":
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
        if h.kind == "async-copy-pending":
            return ("\nAn asynchronous copy completes only at its wait: bar.arrive_and_wait() "
                    "for cuda::memcpy_async, __pipeline_wait_prior(n) (then __syncthreads() "
                    "for other threads' copies) for __pipeline_memcpy_async, "
                    "cooperative_groups::wait for cooperative_groups::memcpy_async. Wait "
                    "before touching the destination.")
        return "\nTwo threads wrote one location with no __syncthreads() in between."


# The CUDA C++ Programming Guide's rule for __syncthreads() ("Synchronization Functions"),
# and why the launch still completes: since Volta, bar.sync waits for every non-exited
# thread of the block ("Independent Thread Scheduling", compute capability 7.x).
CONDITIONAL_BARRIER_RULE = (
    "The CUDA C++ Programming Guide: \"__syncthreads() is allowed in conditional code but "
    "only if the conditional evaluates identically across the entire thread block, otherwise "
    "the code execution is likely to hang or produce unintended side effects.\" The emulator "
    "completed the barrier as an H200 does (compute capability 7.0 and later: a barrier "
    "waits for all non-exited threads of the block, from any __syncthreads() they call), so "
    "this result is that GPU's; another GPU or compiler may hang here or give another. "
    "Make the condition the same for every thread of the block (compute a flag, keep every "
    "thread to the end, and guard only the loads and stores).")


def warn_hazards(report: LaunchReport, block_hint: str | None = None) -> None:
    """Issue one RaceWarning for the launch's races, located at the kernel line of its first
    one (shown as ``kernel.cu:<line>``, the student's own line, not a library file), and one
    DivergentBarrierWarning for its barriers in conditional code (`BARRIER_KINDS`), with
    the CUDA guide's rule. `block_hint` (Launch.block_hint) says how the block fails to
    match the shared arrays when that explains the hazards."""
    barriers = [h for h in report.hazards if h.kind in BARRIER_KINDS]
    if barriers:
        n = len(barriers) - 1
        more = (f" ({n} more such barrier{'s' if n > 1 else ''} in this launch: "
                f".last_report.hazards lists them)" if n else "")
        warnings.warn_explicit(f"{report.kernel}: {barriers[0]}{more}.\n"
                               f"{CONDITIONAL_BARRIER_RULE}", DivergentBarrierWarning,
                               "kernel.cu", barriers[0].line or 0)
    races = [h for h in report.hazards if h.kind not in BARRIER_KINDS]
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
    (`KernelCode.thread_indexed`, from `frontend.analyses.thread_indexed_stores`)."""
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


def describe_mismatches(kernel, block, mismatches, every=None) -> str:
    """'block (32, 8, 1) has 8 threads along y, but As[TILE][TILE] is indexed with
    threadIdx.y and has 32 rows: rows 8..31 are never written. Launch block=(32, 32, 1)
    (one thread per tile element).'

    The suggested block fixes every mismatch of `every` (default: `mismatches`), also the
    ones not described: for block (1024, 1, 1) and As[32][32] written at [ty][tx], only the
    columns may have caused a fault, but the rows want 32 threads too: (32, 32, 1)."""
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
    for m in list(mismatches) + list(every or ()):
        i = "xyz".index(m.component)
        if suggested[i] == block[i]:
            suggested[i] = m.extent
    per = "one thread per tile element" if any(m.rank > 1 for m in mismatches) else \
        "one thread per element"
    return " ".join(sentences) + f" Launch block={tuple(suggested)} ({per})."
