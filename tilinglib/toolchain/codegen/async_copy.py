"""Asynchronous copies into shared memory: CUDA's `cuda::barrier` and `cuda::memcpy_async`
(<cuda/barrier>), the `__pipeline_*` primitives (<cuda_pipeline.h>) and
`cooperative_groups::memcpy_async` / `wait` (<cooperative_groups/memcpy_async.h>).

Input: a call of one of the built-ins the prelude declares for them (toolchain/frontend/prelude.py:
`CUDA_BARRIER`, `PIPELINE_PRIMITIVES`, `CG_MEMCPY_ASYNC`; a barrier's method arrives as
`cuda::barrier::<method>(&bar, ...)`). Output: its compiled `X`.

What the emulator makes of them (docs/frontend.md, "Asynchronous copies"):

- A copy reads its source at the call and writes its destination when the copy
  completes: at the `arrive_and_wait()` of the barrier it was given (just before the
  barrier), at the `__pipeline_wait_prior(n)` that covers its batch, at
  `cooperative_groups::wait`. Both ends are bounds-checked at the call, at the student's
  line, and counted like any load and store (the launch's global-load and shared-store
  counters, one access per thread per chunk of 4, 8 or 16 bytes; the store at the call's
  line). A GPU may land the data at any time up to that point, so a read of the
  destination before the wait sees the old bytes here (and the race checker reports an
  uninitialised read, or a race with the store), as it may on the GPU. A copy never
  waited for in the kernel lands when the kernel ends (`complete_at_exit`), as on a GPU.
- A `cuda::barrier<cuda::thread_scope_block>` initialised with the block's thread count
  is the block's barrier: `arrive_and_wait()` is `__syncthreads()` (for the race checker
  and the barrier counter too). The emulator keeps the expected count in the barrier's
  8 bytes, so a barrier used before `init` is reported.
- `arrive()` / `wait(token)` split that barrier: the phase completes (copies, race
  checker, counter) when the block's last thread arrives, which is exact when no thread
  touches shared memory between its arrival and its wait; the wait checks that.
- What it cannot run exactly is refused with what to write instead: another scope, an
  expected count other than the block's size, shared accesses inside a split phase,
  `arrive_and_drop()`, a group other than the whole block.
"""

from __future__ import annotations

import re

import numpy as np

from ...errors import BarrierError, KernelRuntimeError
from ..model import c_types as ct
from ..model import memory as M
from .closures import X, _line
from ...gpu import ceil_div

BLOCK_SCOPE = 2                       # cuda::thread_scope_block (libcu++: __ATOMIC_BLOCK)
_SCOPES = {0: "thread_scope_system", 1: "thread_scope_device", 2: "thread_scope_block",
           3: "thread_scope_thread"}
_CHUNK_TYPES = {1: ct.UCHAR, 2: ct.USHORT, 4: ct.UINT, 8: ct.ULLONG,
                16: ct.VECTOR_TYPES["uint4"]}
MAX_CHUNKS = 65536                    # chunks one memcpy_async may copy per thread
MAX_PENDING_BYTES = 256 << 20         # what the copies not yet complete may hold, per batch
MAX_PENDING_CHUNKS = 1 << 16          # and how many chunk records (each ~500 bytes even for
                                      # one thread: a small block's bytes bound no memory)
_WAITS = {"barrier": "cuda::memcpy_async", "pipeline": "__pipeline_memcpy_async",
          "group": "cooperative_groups::memcpy_async"}
_WAIT_ADVICE = {"barrier": "bar.arrive_and_wait()", "pipeline": "__pipeline_commit() and "
                "__pipeline_wait_prior(n)", "group": "cooperative_groups::wait(block)"}
_WHOLE_BLOCK = ("cooperative_groups::thread_block",)


# ---------------------------------------------------------------------------- compile time
def _struct_name(t) -> str:
    return re.sub(r"^(struct|class)\s+", "", str(t))


def _check_scope(comp, node, t, what) -> None:
    """`t` must be cuda::barrier<thread_scope_block>: a `CompileError` for another type, an
    `UnsupportedFeatureError` for another scope (at the student's line)."""
    m = re.fullmatch(r"cuda::barrier<(\d+)>", _struct_name(t))
    if m is None:
        raise comp.error(node, f"{what}: the barrier argument must be a cuda::barrier, "
                               f"not {t}")
    scope = int(m.group(1))
    if scope != BLOCK_SCOPE:
        raise comp.unsupported(
            node, f"cuda::barrier<cuda::{_SCOPES.get(scope, scope)}> (the emulator runs "
                  f"barriers of one thread block only)",
            "declare it '__shared__ cuda::barrier<cuda::thread_scope_block> bar;' and "
            "initialise it with the block's thread count")


def _barrier(comp, node, arg, what):
    """The barrier argument (an lvalue of type cuda::barrier<scope>): its address closure."""
    x = comp.expr(arg)
    _check_scope(comp, node, x.ctype, what)
    if x.addr is None:
        raise comp.error(node, f"{what}: the barrier must be a variable in shared memory")
    return x.addr


def _pointer(comp, node, arg, what):
    x = comp.rvalue(comp.expr(arg))
    if not x.ctype.is_pointer:
        raise comp.error(node, f"{what} takes pointers to the destination and the source, "
                               f"not {x.ctype}")
    target = x.ctype.target
    align = 1 if isinstance(target, ct.Void) else max(1, min(16, target.align))
    return x.fn, align


def _size(comp, node, arg):
    """The size argument: (closure giving bytes, alignment it promises). A
    `cuda::aligned_size_t<N>` promises N; a plain integer nothing beyond the pointers'."""
    x = comp.rvalue(comp.expr(arg))
    m = re.fullmatch(r"cuda::aligned_size_t<(\d+)[uUlL]*>", _struct_name(x.ctype))
    if m is not None:
        fn = x.fn
        return (lambda ctx: fn(ctx)[0]), int(m.group(1))
    if not x.ctype.is_integer:
        raise comp.error(node, f"the size of a memcpy_async is a number of bytes (or a "
                               f"cuda::aligned_size_t<N>), not {x.ctype}")
    return comp.convert(x, ct.ULONG, node), 1


def _group(comp, node, arg, what):
    x = comp.expr(arg)
    name = _struct_name(x.ctype)
    if name not in _WHOLE_BLOCK:
        raise comp.unsupported(
            node, f"{what} with the group '{name}' (the emulator runs these collectives for "
                  f"a whole thread block)",
            "pass cooperative_groups::this_thread_block(), or let each thread copy its own "
            "part with cuda::memcpy_async(dst, src, size, bar)")


def _chunk(alignment: int) -> int:
    """The bytes of one access of a copy whose addresses and size are multiples of
    `alignment`: the largest of 16, 8, 4, 2, 1 that divides it."""
    for c in (16, 8, 4, 2, 1):
        if alignment % c == 0:
            return c
    return 1


def _memcpy_async(comp, node, name, args):
    """cuda::memcpy_async(dst, src, size, bar), cuda::memcpy_async(group, dst, src, size,
    bar) and cooperative_groups::memcpy_async(group, dst, src, count): one name for all
    three, told apart by their arguments."""
    line = _line(node)
    if len(args) == 4 and comp.rvalue(comp.expr(args[0])).ctype.is_pointer:
        fdst, a1 = _pointer(comp, node, args[0], "cuda::memcpy_async")
        fsrc, a2 = _pointer(comp, node, args[1], "cuda::memcpy_async")
        fsize, a3 = _size(comp, node, args[2])
        fbar = _barrier(comp, node, args[3], "cuda::memcpy_async")
        chunk = _chunk(max(a1, a2, a3) if a3 > 1 else min(a1, a2))

        def per_thread(ctx):
            words = _check_initialised(ctx, fbar(ctx), line, "cuda::memcpy_async")
            _no_pending_arrival(ctx, words, line, "cuda::memcpy_async")
            if words is not None:
                _copy(ctx, fdst(ctx), fsrc(ctx), fsize(ctx), chunk, line,
                      "cuda::memcpy_async", "barrier", words)
        return X(per_thread, ct.VOID)
    if len(args) in (4, 5):
        what = "cuda::memcpy_async" if len(args) == 5 else "cooperative_groups::memcpy_async"
        _group(comp, node, args[0], what)
        fdst, a1 = _pointer(comp, node, args[1], what)
        fsrc, a2 = _pointer(comp, node, args[2], what)
        fsize, a3 = _size(comp, node, args[3])
        fbar = _barrier(comp, node, args[4], what) if len(args) == 5 else None
        chunk = _chunk(max(a1, a2, a3) if a3 > 1 else min(a1, a2))

        def collective(ctx):
            kind, key = "group", None
            if fbar is not None:
                kind, key = "barrier", _check_initialised(ctx, fbar(ctx), line, what)
                if key is None:
                    return
            _copy_collective(ctx, fdst(ctx), fsrc(ctx), fsize(ctx), chunk, line, what, kind,
                             key)
        return X(collective, ct.VOID)
    raise comp.error(node, f"memcpy_async takes (dst, src, size, barrier), (group, dst, src, "
                           f"size, barrier) or (group, dst, src, count); {len(args)} "
                           f"argument(s) given")


def _init(comp, node, name, args):
    if len(args) != 2:
        raise comp.error(node, "init(&bar, expected) takes 2 arguments")
    fbar = _barrier_pointer(comp, node, args[0], "init(&bar, block.size())")
    fexp = comp.convert(comp.rvalue(comp.expr(args[1])), ct.LLONG, node)
    line = _line(node)
    return X(lambda ctx: _run_init(ctx, fbar(ctx), fexp(ctx), line), ct.VOID)


def _arrive_and_wait(comp, node, name, args):
    if len(args) != 1:
        raise comp.error(node, "arrive_and_wait() takes no arguments")
    fbar = _barrier_pointer(comp, node, args[0], "arrive_and_wait()")
    line = _line(node)

    def arrive_and_wait(ctx):
        words = _check_initialised(ctx, fbar(ctx), line, "arrive_and_wait()",
                                   one_per_block=True)
        _no_pending_arrival(ctx, words, line, "arrive_and_wait()")
        _none_returned(ctx, line, "arrive_and_wait()")
        if words is not None and ctx.memory.async_copies:
            # the phase completes: so do the copies this barrier tracks (before the barrier,
            # so the race checker orders their stores before what follows it)
            mask = ctx.mask
            complete(ctx, lambda rec: (rec.key == words) & mask if rec.kind == "barrier"
                     else None)
        ctx.barriers.syncthreads(line, ctx.mask, ctx.kernel_ret,
                                 what="cuda::barrier::arrive_and_wait()")
    return X(arrive_and_wait, ct.VOID)


def _arrive(comp, node, name, args):
    """bar.arrive(): the thread's arrival at the barrier's phase; returns the token
    `wait` takes (its __phase: the barrier's word). The phase completes when every thread
    of the block has arrived (async_copy._Phase)."""
    if len(args) not in (1, 2):
        raise comp.error(node, "arrive() takes at most one argument (the update count)")
    fbar = _barrier_pointer(comp, node, args[0], "arrive()")
    fupdate = comp.convert(comp.rvalue(comp.expr(args[1])), ct.LLONG, node) \
        if len(args) == 2 else None
    token_t = comp.structs.get("cuda::__barrier_arrival_token")
    if token_t is None:
        raise comp.error(node, "arrive(): cuda::barrier's arrival_token is not declared")
    line = _line(node)

    def arrive(ctx):
        if fupdate is not None and _uniform(ctx, fupdate(ctx), line, "arrive", "update") != 1:
            _raise(ctx, line, f"bar.arrive(n) at kernel.cu:{line}: the emulator counts one "
                              f"arrival per thread; write bar.arrive()")
        words = _check_initialised(ctx, fbar(ctx), line, "arrive()", one_per_block=True)
        if words is not None:
            _none_returned(ctx, line, "arrive()")
            _arrive_lanes(ctx, words, line)
        return (words.astype(np.uint64) if words is not None
                else np.zeros(ctx.T, dtype=np.uint64),)
    return X(arrive, token_t)


def _wait(comp, node, name, args):
    if len(args) != 2:
        raise comp.error(node, "wait(token) takes 1 argument: the token arrive() gave")
    fbar = _barrier_pointer(comp, node, args[0], "wait(token)")
    ftoken = comp.rvalue(comp.expr(args[1])).fn
    line = _line(node)

    def wait(ctx):
        words = _check_initialised(ctx, fbar(ctx), line, "wait()", one_per_block=True)
        if words is not None:
            _wait_lanes(ctx, words, ftoken(ctx)[0], line)
    return X(wait, ct.VOID)


def _arrive_and_drop(comp, node, name, args):
    raise comp.unsupported(
        node, "cuda::barrier's arrive_and_drop() (the emulator runs a block-scope barrier "
              "as a barrier of all of the block's threads)",
        "keep every thread arriving: write bar.arrive_and_wait()")


def _barrier_pointer(comp, node, arg, what):
    """A pointer to a block-scope cuda::barrier (init's first argument, a method's
    object): its closure."""
    x = comp.rvalue(comp.expr(arg))
    if not x.ctype.is_pointer:
        raise comp.error(node, f"{what} takes the barrier's address, not {x.ctype}")
    _check_scope(comp, node, x.ctype.target, what)
    return x.fn


def _move(comp, node, name, args):
    """std::move(x): x (the emulator copies values; a move is a copy)."""
    if len(args) != 1:
        raise comp.error(node, "std::move takes 1 argument")
    return comp.rvalue(comp.expr(args[0]))


def _pipeline_memcpy_async(comp, node, name, args):
    if len(args) not in (3, 4):
        raise comp.error(node, "__pipeline_memcpy_async(dst_shared, src_global, "
                               "size_and_align[, zfill]) takes 3 or 4 arguments")
    what = "__pipeline_memcpy_async"
    fdst, _ = _pointer(comp, node, args[0], what)
    fsrc, _ = _pointer(comp, node, args[1], what)
    size = comp.rvalue(comp.expr(args[2]))
    if size.const is not None and int(size.const) not in (4, 8, 16):
        raise comp.error(node, f"__pipeline_memcpy_async copies 4, 8 or 16 bytes "
                               f"(size_and_align), not {int(size.const)}: copy larger "
                               f"pieces with several calls of 16 bytes")
    fsize = comp.convert(size, ct.ULONG, node)
    fzfill = comp.convert(comp.rvalue(comp.expr(args[3])), ct.ULONG, node) \
        if len(args) == 4 else None
    line = _line(node)

    def pipeline_copy(ctx):
        n = _uniform(ctx, fsize(ctx), line, what, "size_and_align")
        if n not in (4, 8, 16):
            _raise(ctx, line, f"{what} at kernel.cu:{line} copies 4, 8 or 16 bytes "
                              f"(size_and_align), not {n}")
        zfill = fzfill(ctx) if fzfill else 0
        lanes = _lanes(ctx)
        z = zfill[lanes] if isinstance(zfill, np.ndarray) else np.full(lanes.shape[0], zfill)
        if np.any(z > n):
            i = int(np.argmax(z > n))
            _raise(ctx, line, f"{what} at kernel.cu:{line}: zfill ({int(z[i])}) is more "
                              f"than the {n} bytes copied", int(lanes[i]))
        dst, src = fdst(ctx), fsrc(ctx)
        _require_space(ctx, dst, M.SHARED_REGION, line,
                       f"the destination of {what} must be __shared__ memory")
        batch = _commits(ctx)            # the batch the copy joins: commits so far
        values = np.unique(z).tolist()
        for zf in values:                # lanes of one zfill together (usually all of them)
            m = None if len(values) == 1 and ctx.full else ctx.mask.copy()
            if len(values) > 1:
                m = np.zeros(ctx.T, dtype=bool)
                m[lanes[z == zf]] = True
            kept = n - int(zf)           # bytes read; the rest of the n bytes are zeros
            if kept:
                _require_global(ctx, src, line, f"the source of {what} must be global "
                                                 f"memory", mask=m)
                _copy(ctx, dst, src, kept, _chunk(kept) if kept != n else n, line, what,
                      "pipeline", batch, mask=m)
            if zf:
                _zero(ctx, dst + np.int64(kept), int(zf), line, "pipeline", batch, mask=m)
    return X(pipeline_copy, ct.VOID)


def _commits(ctx) -> np.ndarray:
    """Each thread's count of __pipeline_commit() calls (a copy issued now joins batch
    number commits, 0-based)."""
    mem = ctx.memory
    if mem.pipeline_commits is None:
        mem.pipeline_commits = np.zeros(ctx.T, dtype=np.int64)
    return mem.pipeline_commits.copy()


def _pipeline_commit(comp, node, name, args):
    if args:
        raise comp.error(node, "__pipeline_commit() takes no arguments")

    def commit(ctx):
        _commits(ctx)
        ctx.memory.pipeline_commits[ctx.mask] += 1
    return X(commit, ct.VOID)


def _pipeline_wait_prior(comp, node, name, args):
    if len(args) != 1:
        raise comp.error(node, "__pipeline_wait_prior(prior) takes 1 argument")
    f = comp.convert(comp.rvalue(comp.expr(args[0])), ct.ULONG, node)

    def wait_prior(ctx):
        """The thread's batches but the `prior` newest are complete: their stores now.
        `prior` is a size_t, as in CUDA: -1 (say `STAGES - 2` with one stage) is 2^64 - 1,
        which waits for nothing."""
        if not ctx.memory.async_copies:
            return
        prior = np.minimum(np.asarray(f(ctx)).astype(np.uint64),
                           np.uint64(1 << 62)).astype(np.int64)
        commits, mask = _commits(ctx), ctx.mask
        complete(ctx, lambda rec: (rec.key < commits - prior) & mask
                 if rec.kind == "pipeline" else None)
    return X(wait_prior, ct.VOID)


def _cg_wait(comp, node, name, args):
    if len(args) != 1:
        raise comp.error(node, "cooperative_groups::wait(group) takes 1 argument")
    _group(comp, node, args[0], "cooperative_groups::wait")
    line = _line(node)

    def wait(ctx):
        """The group's copies complete (cooperative groups issues them as pipeline copies:
        those too), then the block synchronises."""
        if ctx.memory.async_copies:
            mask = ctx.mask
            complete(ctx, lambda rec: mask if rec.kind in ("group", "pipeline") else None)
        ctx.barriers.syncthreads(line, ctx.mask, ctx.kernel_ret,
                                 what="cooperative_groups::wait(block)")
    return X(wait, ct.VOID)


HANDLERS = {
    "memcpy_async": _memcpy_async,
    "init": _init,
    "cuda::barrier::arrive_and_wait": _arrive_and_wait,
    "cuda::barrier::arrive": _arrive,
    "cuda::barrier::wait": _wait,
    "cuda::barrier::arrive_and_drop": _arrive_and_drop,
    "move": _move,
    "__pipeline_memcpy_async": _pipeline_memcpy_async,
    "__pipeline_commit": _pipeline_commit,
    "__pipeline_wait_prior": _pipeline_wait_prior,
    "wait": _cg_wait,
}


# ---------------------------------------------------------------------------- run time
def _raise(ctx, line, message, lane=None):
    if lane is None:
        lane = int(np.argmax(ctx.mask)) if ctx.any else 0
    block, thread = ctx.coords(lane)
    raise KernelRuntimeError(f"{message}\n  in {ctx.kernel_name}, by thread {thread} in block "
                             f"{block}", kernel=ctx.kernel_name, line=line, block=block,
                             thread=thread)


def _lanes(ctx):
    return np.arange(ctx.T) if ctx.full else np.flatnonzero(ctx.mask)


def _uniform(ctx, value, line, what, arg) -> int:
    """`value` (a scalar or one per thread) as one int over the active lanes; different
    values are an error naming `arg`."""
    if not isinstance(value, np.ndarray):
        return int(value)
    v = value[_lanes(ctx)]
    if v.shape[0] == 0:
        return 0
    if np.any(v != v[0]):
        _raise(ctx, line, f"{what} at kernel.cu:{line}: the threads pass different values "
                          f"of {arg} ({int(v.min())} and {int(v.max())}): the emulator "
                          f"copies one size per call; call it once per size")
    return int(v[0])


def _require_space(ctx, addr, region, line, message):
    a = addr[_lanes(ctx)] if isinstance(addr, np.ndarray) else np.array([addr])
    bad = (a >> M.REGION_SHIFT) != region
    if a.shape[0] and np.any(bad):
        lane = int(_lanes(ctx)[int(np.argmax(bad))]) if isinstance(addr, np.ndarray) else None
        _raise(ctx, line, f"{message} (kernel.cu:{line})", lane)


def _require_global(ctx, addr, line, message, mask=None):
    lanes = _lanes(ctx) if mask is None else np.flatnonzero(mask)
    a = addr[lanes] if isinstance(addr, np.ndarray) else np.array([addr])
    bad = (a >> M.REGION_SHIFT) < M.FIRST_GLOBAL_REGION
    if a.shape[0] and np.any(bad):
        lane = int(lanes[int(np.argmax(bad))]) if isinstance(addr, np.ndarray) else None
        _raise(ctx, line, f"{message} (kernel.cu:{line})", lane)


class _Pending:
    """Chunks of one asynchronous copy call that have not completed: `mask` (the lanes
    whose chunk is pending), `kind` and `key` (what completes it: "barrier" and each lane's
    barrier word, "pipeline" and each lane's batch number, "group" and None), `dst` (one
    address per lane), `flat` (the destination's byte index in the batch's shared storage
    per lane, or None outside shared memory), `t` (the chunk's C type), `value` (read at
    the call) and `line`."""

    __slots__ = ("mask", "kind", "key", "dst", "flat", "t", "value", "line")

    def __init__(self, mask, kind, key, dst, flat, t, value, line):
        self.mask, self.kind, self.key, self.dst, self.flat = mask, kind, key, dst, flat
        self.t, self.value, self.line = t, value, line


def _full(ctx, v, dtype=np.int64):
    return v if isinstance(v, np.ndarray) else np.full(ctx.T, v, dtype=dtype)


def _issue(ctx, dst, src, t, mask, kind, key, line, zeros=False):
    """One chunk of an asynchronous copy in the lanes of `mask` (None: all): the source is
    read now (a counted, bounds-checked load), the destination checked now and written when
    the copy completes (`complete`), as a counted store at the call's line."""
    mem = ctx.memory
    if zeros:
        value = tuple(f[1].dtype.type(0) for f in t.fields) if t.is_struct else \
            t.dtype.type(0)
    elif t.is_struct:
        value = mem.load_struct(src, t, line, mask)
    else:
        value = mem.load(src, t, line, mask)
    flat = mem.check_write(dst, t, line, mask)
    if len(mem.async_copies) * ctx.T * (t.size + 17) > MAX_PENDING_BYTES or \
            len(mem.async_copies) >= MAX_PENDING_CHUNKS:
        _raise(ctx, line, f"{_WAITS[kind]} at kernel.cu:{line}: more copies issued and not "
                          f"yet waited for than the emulator holds ({len(mem.async_copies):,} "
                          f"calls' chunks): wait for them ({_WAIT_ADVICE[kind]}) before "
                          f"issuing more")
    lanes_mask = np.ones(ctx.T, dtype=bool) if mask is None else mask.copy()
    if flat is not None:
        mem.async_mark(flat, t.size, line, 1)
    mem.async_copies.append(_Pending(lanes_mask, kind, key, _full(ctx, dst), flat, t, value,
                                     line))


def complete(ctx, done_of) -> None:
    """Complete the pending chunks that `done_of(record)` (a bool per lane, or None) says
    are done: their stores, in the order the copies were issued."""
    mem = ctx.memory
    keep = []
    for rec in mem.async_copies:
        done = done_of(rec)
        if done is not None:
            done = done & rec.mask
            if done.any():
                if rec.flat is not None:     # no longer pending: its own store is no hazard
                    mem.async_mark(np.where(done, rec.flat, -1), rec.t.size, rec.line, -1)
                if rec.t.is_struct:
                    mem.store_struct(rec.dst, rec.t, rec.value, rec.line, done)
                else:
                    mem.store(rec.dst, rec.t, rec.value, rec.line, done)
                rec.mask = rec.mask & ~done
        if rec.mask.any():
            keep.append(rec)
    mem.async_copies = keep


def complete_at_exit(ctx) -> None:
    """The kernel's end (of a batch of blocks): every copy still pending lands, as on a
    GPU, where a grid completes only when its memory operations have (a copy into global
    memory that no thread waited for is in the output; one into shared memory is counted
    as the stores it made)."""
    if ctx.memory.async_copies:
        complete(ctx, lambda rec: rec.mask)


def copy_pieces(ctx, size, chunk, line, what, mask=None):
    """How each active thread (or those of `mask`: None, all) copies `size` bytes (an int,
    or one per thread) as accesses of `chunk` bytes, halved until it divides every size:
    yields (byte offset, the C type of one piece, the lanes that copy it: a mask, or None
    for all of `mask`). One piece per thread and chunk: the accesses a copy is counted as.
    Raises KernelRuntimeError (`what` at `line`) past MAX_CHUNKS pieces per thread."""
    if isinstance(size, np.ndarray):
        lanes = np.arange(ctx.T) if mask is None else np.flatnonzero(mask)
        sizes = size[lanes].astype(np.uint64) if lanes.shape[0] else np.zeros(0, np.uint64)
        top = int(sizes.max()) if sizes.shape[0] else 0
    else:
        sizes, top = None, int(size)
    while chunk > 1 and (top % chunk or (sizes is not None and np.any(sizes % chunk))):
        chunk //= 2
    n = top // chunk
    if n > MAX_CHUNKS:
        _raise(ctx, line, f"{what} at kernel.cu:{line} copies {top:,} bytes per thread, "
                          f"over the emulator's {MAX_CHUNKS * chunk:,}: copy in smaller "
                          f"pieces", lane=None if mask is None or not mask.any()
                          else int(np.argmax(mask)))
    t = _CHUNK_TYPES[chunk]
    for i in range(n):
        m = mask
        if sizes is not None:
            m = np.zeros(ctx.T, dtype=bool)
            m[lanes] = sizes > i * chunk
            if not m.any():
                break
        yield np.int64(i) * np.int64(chunk), t, m


def _copy(ctx, dst, src, size, chunk, line, what, kind, key, mask=None):
    """Each active thread (or those of `mask`) copies `size` bytes (an int, or one per
    thread) from `src` to `dst`, `chunk` bytes per access (one access per thread per
    chunk), completing when `kind`/`key` says (`_Pending`)."""
    mask = (None if ctx.full else ctx.mask) if mask is None else mask
    for off, t, m in copy_pieces(ctx, size, chunk, line, what, mask):
        _issue(ctx, dst + off, src + off, t, m, kind, key, line)


def _zero(ctx, dst, nbytes, line, kind, key, mask=None):
    """Fill `nbytes` at `dst` with zeros in each active thread (or those of `mask`: a
    zfill), completing with the copy."""
    mask = (None if ctx.full else ctx.mask) if mask is None else mask
    chunk = _chunk(nbytes)
    t = _CHUNK_TYPES[chunk]
    for i in range(nbytes // chunk):
        off = np.int64(i * chunk)
        _issue(ctx, dst + off, None, t, mask, kind, key, line, zeros=True)


def _copy_collective(ctx, dst, src, size, chunk, line, what, kind, key):
    """A copy by the whole block: every thread of each block passes the same arguments,
    and thread rank r copies chunks r, r + blockDim, r + 2 * blockDim, ... (counted per
    thread, as each thread's accesses)."""
    w = ctx.warps
    here = np.bincount(w.blk[ctx.mask], minlength=w.nblocks)
    # every thread of the block, those that returned too: thread rank r copies chunks r,
    # r + blockDim, ..., so a thread that returned leaves its chunks uncopied (on a GPU too)
    want = np.bincount(w.blk, minlength=w.nblocks)
    partial = (here > 0) & (here < want)
    if partial.any():
        b = int(np.argmax(partial))
        missing = int(np.flatnonzero((w.blk == b) & ~ctx.mask)[0])
        block, thread = ctx.coords(missing)
        how = ("has returned, so its part of the copy is never made: put the early return's "
               "work under an if instead" if ctx.kernel_ret[missing] else
               "did not: call it outside any if that not every thread enters")
        raise BarrierError(
            f"{what} at kernel.cu:{line} in {ctx.kernel_name} is a copy by the whole block, "
            f"but {int(here[b])} of the {int(want[b])} threads of block {block} called it "
            f"(thread {thread} {how})", kernel=ctx.kernel_name, line=line, block=block,
            thread=thread)
    lanes = _lanes(ctx)
    if lanes.shape[0] == 0:
        return
    vals = [np.broadcast_to(np.asarray(v).astype(np.int64), (ctx.T,)) for v in
            (dst, src, size)]
    blk = w.blk[lanes]
    for v, arg in zip(vals, ("destination", "source", "size")):
        first = np.full(w.nblocks, -1, dtype=np.int64)
        first[blk[::-1]] = v[lanes][::-1]            # the first active lane's value per block
        bad = v[lanes] != first[blk]
        if np.any(bad):
            _raise(ctx, line, f"{what} at kernel.cu:{line}: the threads of a block pass "
                              f"different {arg}s; a collective copy takes the same arguments "
                              f"in every thread of the group", int(lanes[int(np.argmax(bad))]))
    d, s, n = vals
    top = int(n[lanes].astype(np.uint64).max())      # a size_t of 2^63 or more is no less
    while chunk > 1 and np.any(n[lanes] % chunk):
        chunk //= 2
    nchunks = n // chunk
    tpb = np.int64(ctx.tpb)
    rank = w.tib.astype(np.int64)
    rounds = ceil_div(top // chunk, int(tpb))
    if rounds > MAX_CHUNKS:
        _raise(ctx, line, f"{what} at kernel.cu:{line} copies {top:,} bytes, over the "
                          f"emulator's {MAX_CHUNKS * chunk * ctx.tpb:,} per block")
    t = _CHUNK_TYPES[chunk]
    for j in range(rounds):
        index = rank + j * tpb
        m = ctx.mask & (index < nchunks)
        if not m.any():
            break
        off = index * np.int64(chunk)
        _issue(ctx, d + off, s + off, t, m, kind, key, line)


def _run_init(ctx, bar, expected, line):
    """init(&bar, expected) in the active threads: the expected count must be the block's
    thread count; it is kept in the barrier's word (marking it initialised)."""
    found = ctx.memory.barrier_state(bar, line, "init", None if ctx.full else ctx.mask)
    if found is None:
        return
    lanes, view, words = found
    lanes = np.arange(ctx.T) if lanes is None else lanes
    exp = expected[lanes] if isinstance(expected, np.ndarray) else np.full(lanes.shape[0],
                                                                          expected)
    bad = exp != ctx.tpb
    if np.any(bad):
        i = int(np.argmax(bad))
        _raise(ctx, line, f"init(&bar, {int(exp[i])}) at kernel.cu:{line}: the block has "
                          f"{ctx.tpb} threads, and the emulator runs a block-scope "
                          f"cuda::barrier only as the barrier of the whole block. Initialise "
                          f"it with the block's thread count: init(&bar, block.size()) (or "
                          f"blockDim.x * blockDim.y * blockDim.z)", int(lanes[i]))
    ctx.memory.track_barrier(found[0], words, line, write=True)
    view[words] = np.uint64(ctx.tpb)


def _check_initialised(ctx, bar, line, what, one_per_block=False):
    """Check that the barriers at `bar` (one address per active lane) were initialised;
    returns each lane's barrier word index (-1 in inactive lanes), or None when no lane is
    active."""
    found = ctx.memory.barrier_state(bar, line, what, None if ctx.full else ctx.mask)
    if found is None:
        return None
    lanes, view, words = found
    lanes = np.arange(ctx.T) if lanes is None else lanes
    unset = view[words] == 0
    if np.any(unset):
        i = int(np.argmax(unset))
        _raise(ctx, line, f"{what} at kernel.cu:{line} uses a cuda::barrier that was not "
                          f"initialised in this block: one thread calls init(&bar, "
                          f"block.size()) (if (block.thread_rank() == 0)), then "
                          f"__syncthreads(), before any thread uses the barrier",
               int(lanes[i]))
    ctx.memory.track_barrier(found[0], words, line, write=False)
    if one_per_block:
        blk = ctx.warps.blk[lanes]
        first = np.full(ctx.nblocks, -1, dtype=np.int64)
        first[blk[::-1]] = words[::-1]
        bad = words != first[blk]
        if np.any(bad):
            _raise(ctx, line, f"{what} at kernel.cu:{line}: the threads of a block arrive "
                              f"at different barriers at once; the emulator runs a block-scope "
                              f"barrier as the whole block's barrier, so all of its threads "
                              f"arrive at the same one", int(lanes[int(np.argmax(bad))]))
    out = np.full(ctx.T, -1, dtype=np.int64)
    out[lanes] = words
    return out


# ---------------------------------------------------------------------------- split phases
class _Phase:
    """A barrier phase entered by `arrive()` in one batch: which lanes have arrived and not
    yet waited (`arrived`), whether it completed, per block (`done`, by block index), and
    the shared-memory accesses counted when the first thread arrived (`accesses`): the
    emulator runs a phase exactly when no thread touches shared memory between its
    arrival and its wait (then the phase is a __syncthreads() at its completion)."""

    __slots__ = ("arrived", "done", "accesses", "line")

    def __init__(self, T, nblocks, accesses, line):
        self.arrived = np.zeros(T, dtype=bool)
        self.done = np.zeros(nblocks, dtype=bool)
        self.accesses = accesses
        self.line = line


def _none_returned(ctx, line, what) -> None:
    """A block-scope barrier initialised with the block's thread count completes when all
    of them arrive: a thread that returned never does (on a GPU the block hangs, where a
    __syncthreads() would go on). A `BarrierError` for a block reaching `what` with
    returned threads."""
    w = ctx.warps
    if not ctx.kernel_ret.any():
        return
    here = np.bincount(w.blk[ctx.mask], minlength=w.nblocks) > 0
    gone = np.bincount(w.blk[ctx.kernel_ret], minlength=w.nblocks) > 0
    bad = here & gone
    if bad.any():
        b = int(np.argmax(bad))
        lane = int(np.flatnonzero((w.blk == b) & ctx.kernel_ret)[0])
        block, thread = ctx.coords(lane)
        raise BarrierError(
            f"{what} at kernel.cu:{line} in {ctx.kernel_name}: thread {thread} of block "
            f"{block} has returned, so it never arrives, and the barrier (initialised with "
            f"the block's thread count) never completes: on a GPU the block hangs. Keep every "
            f"thread to the barrier (put the early return's work under an if instead)",
            kernel=ctx.kernel_name, line=line, block=block, thread=thread)


def _shared_accesses(ctx) -> int:
    c = ctx.counters
    return c.shared_load_instructions + c.shared_store_instructions + c.shared_atomic_instructions


def _no_pending_arrival(ctx, words, line, what):
    phases = ctx.memory.split_phases
    if words is None or not phases:
        return
    for w, ph in phases.items():
        bad = ph.arrived & (words == w)
        if bad.any():
            _raise(ctx, line, f"{what} at kernel.cu:{line} on a barrier this thread arrived "
                              f"at (arrive() at kernel.cu:{ph.line}) and has not waited for: "
                              f"call bar.wait(std::move(token)) first", int(np.argmax(bad)))


def _arrive_lanes(ctx, words, line):
    mem, w = ctx.memory, ctx.warps
    lanes = _lanes(ctx)
    base = _shared_accesses(ctx)
    for word in np.unique(words[lanes]).tolist():
        here = np.zeros(ctx.T, dtype=bool)
        here[lanes] = words[lanes] == word
        ph = mem.split_phases.get(word)
        if ph is None:
            ph = mem.split_phases[word] = _Phase(ctx.T, ctx.nblocks, base, line)
        again = here & ph.arrived
        if again.any():
            _raise(ctx, line, f"arrive() at kernel.cu:{line}: this thread already arrived at "
                              f"the barrier (kernel.cu:{ph.line}) and has not waited: call "
                              f"bar.wait(std::move(token)) before arriving again",
                   int(np.argmax(again)))
        blk = int(w.blk[int(np.argmax(here))])
        if ph.done[blk]:
            _raise(ctx, line, f"arrive() at kernel.cu:{line}: the barrier's previous phase "
                              f"(arrive() at kernel.cu:{ph.line}) is still being waited for "
                              f"by other threads of the block: let every thread wait before "
                              f"any arrives again", int(np.argmax(here)))
        ph.arrived |= here
        alive = (w.blk == blk) & ~ctx.kernel_ret
        if np.all(ph.arrived[alive]):
            # every thread of the block has arrived: the phase completes, and with it the
            # copies the barrier tracks
            words_now = words
            complete(ctx, lambda rec: (rec.key == words_now) & (w.blk == blk)
                     if rec.kind == "barrier" else None)
            ctx.barriers.phase_completed(np.array([blk]))
            ph.done[blk] = True
    # the stores of the copies that completed here are the copies', not accesses made
    # between some thread's arrival and its wait
    landed = _shared_accesses(ctx) - base
    if landed:
        for ph in mem.split_phases.values():
            ph.accesses += landed


def _wait_lanes(ctx, words, token, line):
    mem, w = ctx.memory, ctx.warps
    lanes = _lanes(ctx)
    token = np.broadcast_to(np.asarray(token, dtype=np.int64), (ctx.T,))
    bad = token[lanes] != words[lanes]
    if np.any(bad):
        _raise(ctx, line, f"wait(token) at kernel.cu:{line}: the token is not this "
                          f"barrier's (it came from arrive() on another one)",
               int(lanes[int(np.argmax(bad))]))
    for word in np.unique(words[lanes]).tolist():
        here = np.zeros(ctx.T, dtype=bool)
        here[lanes] = words[lanes] == word
        ph = mem.split_phases.get(word)
        missing = here if ph is None else here & ~ph.arrived
        if missing.any():
            _raise(ctx, line, f"wait(token) at kernel.cu:{line}: this thread has not arrived "
                              f"at the barrier (call token = bar.arrive() first)",
                   int(np.argmax(missing)))
        blk = int(w.blk[int(np.argmax(here))])
        if not ph.done[blk]:
            lane = int(np.flatnonzero((w.blk == blk) & ~ph.arrived & ~ctx.kernel_ret)[0])
            block, thread = ctx.coords(lane)
            raise BarrierError(
                f"wait(token) at kernel.cu:{line} in {ctx.kernel_name}: thread {thread} of "
                f"block {block} has not arrived at the barrier (arrive() at kernel.cu:"
                f"{ph.line}) when the others wait. On a GPU they would wait for it; the "
                f"emulator runs the block's threads together, so every thread must arrive "
                f"before any waits: move arrive() out of the condition",
                kernel=ctx.kernel_name, line=line, block=block, thread=thread)
        if _shared_accesses(ctx) != ph.accesses:
            _raise(ctx, line, f"wait(token) at kernel.cu:{line}: shared memory was accessed "
                              f"between arrive() (kernel.cu:{ph.line}) and this wait. The "
                              f"emulator runs a split barrier exactly only when no thread "
                              f"touches shared memory in between (those accesses are ordered "
                              f"with no other thread's): move them before arrive() or after "
                              f"wait(), or write bar.arrive_and_wait()", int(np.argmax(here)))
        ph.arrived &= ~here
        if not ph.arrived.any():
            del mem.split_phases[word]
