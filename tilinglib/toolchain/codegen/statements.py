"""Stage 3, statements: C statements -> closures run(ctx) (a mixin of `compiler.Compiler`).

Input: pycparser statement nodes. Output: closures that run a statement for the active
lanes of a batch, following the SIMT model: `if` narrows `ctx.mask`, loops run while any
lane is active, `break`/`continue`/`return` clear lanes until the enclosing loop or
function restores them. Declarations place variables in environment slots, shared memory
or local memory.
"""

from __future__ import annotations

import numpy as np
from pycparser import c_ast

from ..frontend.lower import CONSTANT_MARK, SHARED_MARK
from ..model import c_types as ct
from ..model import values as V
from .closures import SharedVar, X, _line, _Scope
from ..model.memory import LOCAL_REGION, LocalVar, make_address, shared_address
from ...gpu import ceil_div, round_up


class StatementsMixin:
    """`stmt_<Node>` methods; needs the helpers of `compiler.Compiler`."""

    # ------------------------------------------------------------------ statements
    def stmt(self, node):
        """Compile a statement. Returns a closure run(ctx)."""
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        x = self.expr(node)      # an expression statement
        f = x.fn
        return lambda ctx: (f(ctx), None)[1]

    def stmt_Compound(self, node):
        saved = self.scope
        self.scope = _Scope(saved)
        items = []
        for item in node.block_items or []:
            items.append((self.stmt(item), _has_jump(item)))
        self.scope = saved
        plain = [s for s, _ in items]
        if not any(j for _, j in items):
            def block_plain(ctx):
                for s in plain:
                    s(ctx)
            return block_plain

        def block(ctx):
            for s, jumps in items:
                s(ctx)
                if jumps and not ctx.any:
                    return
        return block

    def stmt_EmptyStatement(self, node):
        return lambda ctx: None

    def stmt_Pragma(self, node):
        return lambda ctx: None

    def stmt_DeclList(self, node):
        stmts = [self.stmt_Decl(d) for d in node.decls]

        def decls(ctx):
            for s in stmts:
                s(ctx)
        return decls

    def stmt_Decl(self, node):
        storage = node.storage or []
        if isinstance(node.type, c_ast.Struct) and node.name is None:
            self.struct_type(node.type)
            return lambda ctx: None
        if isinstance(node.type, c_ast.Enum):
            self.enum_decl(node.type)
            return lambda ctx: None
        if isinstance(node.type, c_ast.FuncDecl):
            return lambda ctx: None
        t = self.resolve(node.type)
        if SHARED_MARK in storage:
            return self.shared_decl(node, t, dynamic="extern" in storage)
        if "static" in storage:
            raise self.unsupported(node, "static local variables")
        if CONSTANT_MARK in storage:
            raise self.unsupported(node, "__constant__ variables inside a function",
                                   "declare them at file scope")
        if t.is_array or (t.is_struct and t.holds_aggregates) or \
                node.name in self.fn.address_taken:
            return self.local_array_decl(node, t)
        slot = self.fn.new_slot()
        x = X(self.slot_reader(slot), t, slot=slot)
        if "const" in (node.quals or []) and node.init is not None and t.is_scalar:
            init = self.expr(node.init)
            if init.const is not None:
                c = V.converter(ct.decay(init.ctype), t)
                x = X(x.fn, t, slot=slot, const=c(init.const) if c else init.const)
        self.scope.names[node.name] = x
        zero = V.zero_of(t)
        if node.init is None:
            def declare(ctx, slot=slot, zero=zero):
                if ctx.env[slot] is None:
                    ctx.env[slot] = zero
            if id(node) not in self.fn.unset_decls:
                return declare
            # Definite assignment could not prove it set before every read: track, per
            # thread, whether it has a value (expr_ID checks the reads, assigner sets it).
            shadow = self.fn.new_slot()
            self.fn.shadows[slot] = (shadow, node.name, t, _line(node))

            def declare_checked(ctx, shadow=shadow):
                declare(ctx)
                ctx.env[shadow] = V.mark_unset(ctx.env[shadow], ctx)
            return declare_checked
        if isinstance(node.init, c_ast.InitList):
            if not t.is_struct:
                raise self.error(node, "a brace initializer needs an array or struct")
            parts = [self.convert(self.expr(e), f[1], e)
                     for e, f in zip(node.init.exprs, t.fields)]
            parts += [lambda ctx, z=f[1].dtype.type(0): z for f in t.fields[len(parts):]]
            store = self.assigner(x, node)

            def init_list(ctx, slot=slot, zero=zero):
                if ctx.env[slot] is None:       # first reached by part of the threads
                    ctx.env[slot] = zero
                store(ctx, tuple(p(ctx) for p in parts))
            return init_list
        # The variable is in scope for its own initializer only in the (unusual) self-reference.
        fv = self.convert(self.rvalue(self.expr(node.init)), t, node)
        store = self.assigner(x, node)

        def init(ctx, slot=slot, zero=zero):
            if ctx.env[slot] is None:
                ctx.env[slot] = zero
            store(ctx, fv(ctx))
        return init

    def shared_decl(self, node, t, dynamic):
        if not t.is_array and dynamic:
            raise self.error(node, "extern __shared__ needs an array: extern __shared__ float s[];")
        if dynamic:
            var = SharedVar(node.name, t, 0, True, _line(node))
            self.shared.append(var)

            def dyn_addr(ctx):
                return ctx.dynamic_shared_address
            self.scope.names[node.name] = X(dyn_addr, t) if t.is_array else \
                self.memory_lvalue(dyn_addr, t, node)
            return lambda ctx: None
        if node.init is not None:
            raise self.error(node, "__shared__ variables cannot have an initializer; "
                                   "assign them in the kernel, then __syncthreads()")
        existing = [v for v in self.shared if v.name == node.name and v.line == _line(node)]
        if existing:
            var = existing[0]
        else:
            align = max(t.align, 1, self.alignas(node))
            offset = round_up(self.static_shared_size(), align)
            var = SharedVar(node.name, t, offset, False, _line(node))
            self.shared.append(var)
        address = np.int64(shared_address(self.shared.index(var) + 1, var.offset))
        if t.is_array:
            self.scope.names[node.name] = X(lambda ctx, a=address: a, t)
        else:
            self.scope.names[node.name] = self.memory_lvalue(lambda ctx, a=address: a, t, node)
        return lambda ctx: None

    def local_address(self, t, align=1) -> np.int64:
        """Room for a value of type `t` in each thread's local memory (a local array, a
        struct with array or struct fields, a temporary copy of one), aligned to `align`
        at least (alignas); its address. A value of 16 bytes or more starts at a multiple of
        16: nvcc keeps such arrays in registers, where `reinterpret_cast<float4*>(&a[4])[0]`
        always works, so the emulator's local memory must not make that access misaligned."""
        align = max(t.align, 4, align, 16 if t.size >= 16 else 1)
        offset = round_up(self.local_bytes, align)
        self.local_bytes = offset + t.size
        return np.int64(make_address(LOCAL_REGION, offset))

    def local_array_decl(self, node, t):
        """A local array, a struct with array or struct fields (`Frag f;`), or a variable
        whose address is taken (`float3 q; q += p;` with `operator+=(float3&, float3)`): its
        bytes in the thread's local memory, each element checked for reads before writes
        when it is declared without a value."""
        if t.is_array and t.length is None:
            raise self.error(node, f"the local array '{node.name}' needs a size")
        address = self.local_address(t, self.alignas(node))
        offset = int(address - make_address(LOCAL_REGION, 0))
        x = X(lambda ctx, a=address: a, t) if t.is_array else \
            self.memory_lvalue(lambda ctx, a=address: a, t, node)
        self.scope.names[node.name] = x
        self.local_vars.append(LocalVar(node.name, t, offset, _line(node),
                                        self.declared_text(node.name, _line(node), t)))
        if node.init is None:
            # Elements are checked at run time for reads before writes (Context.load);
            # entering the declaration makes them unset again for the active threads.
            self.check_local = True
            words = (offset // 4, ceil_div(offset + t.size, 4))

            def declare_array(ctx, words=words):
                if ctx.local_set is not None:
                    ctx.forget_local(*words)
            return declare_array
        line = _line(node)
        if not isinstance(node.init, c_ast.InitList):
            if t.is_array:
                raise self.error(node, "initialise an array with { ... }")
            value = self.rvalue(self.expr(node.init))                          # Frag g = f;
            copy = self.struct_copier(x, value, node)
            if copy is not None:
                return copy.fn
            fv = self.convert(value, t, node)
            store = self.assigner(x, node)
            return lambda ctx: store(ctx, fv(ctx))
        if t.is_array and (t.base_elem.is_scalar or t.base_elem.is_pointer):
            stores = self.flat_array_init(node, t, address)
        else:
            stores = self.aggregate_init(node.init, t, int(address), node)

        def init_array(ctx):
            for a, lt, fv in stores:
                if lt.is_struct:
                    ctx.store_struct(a, lt, fv(ctx), line)
                else:
                    ctx.store(a, lt, fv(ctx), line)
        return init_array

    def flat_array_init(self, node, t, address):
        """(address, type, value) stores of an array of scalars' initializer, read in order
        of its elements (nested lists one after another), zeros after the last."""
        flat = []

        def walk(init, at):
            if isinstance(init, c_ast.InitList):
                for item in init.exprs:
                    walk(item, at.elem if at.is_array else at)
            else:
                flat.append(init)
        walk(node.init, t)
        total = int(np.prod(t.shape))
        if len(flat) > total:
            raise self.error(node, f"too many initializers for '{node.name}' ({len(flat)} > {total})")
        base = t.base_elem
        stores = []
        for i in range(total):
            fv = (self.convert(self.expr(flat[i]), base, node) if i < len(flat)
                  else (lambda ctx, z=base.dtype.type(0): z))
            stores.append((np.int64(address + i * base.size), base, fv))
        return stores

    def aggregate_init(self, init, t, address, node) -> list:
        """(address, type, value) stores (a scalar's, or a struct value's) of the initializer
        `init` of a `t` (a struct or an array of structs) at `address`: `{ {1, 2, 3, 4}, 4 }`,
        `{}`, `{f, g}` (a struct value for a struct member). clang writes the list fully
        braced; what it leaves out is zero."""
        stores = []

        def zero(at, a):
            for off, lt in ct.leaves(at):
                stores.append((np.int64(a + off), lt, lambda ctx, z=V.zero_of(lt): z))

        def walk(item, at, a):
            if item is None:
                zero(at, a)
            elif isinstance(item, c_ast.InitList):
                members = ct.brace_members(at)
                if len(item.exprs) > len(members):
                    raise self.error(item, f"too many initializers for {at} "
                                           f"({len(item.exprs)} > {len(members)})")
                for k, (mt, moff) in enumerate(members):
                    walk(item.exprs[k] if k < len(item.exprs) else None, mt, a + moff)
            elif at.is_struct:
                stores.append((np.int64(a), at, self.convert(self.rvalue(self.expr(item)), at,
                                                             item)))
            elif at.is_array:
                raise self.error(item, "initialise an array member with { ... }")
            else:
                stores.append((np.int64(a), at, self.convert(self.rvalue(self.expr(item)), at,
                                                             item)))
        walk(init, t, address)
        return stores

    def stmt_If(self, node):
        c = self.expr(node.cond)
        fc = self.convert(c, ct.BOOL, node)
        bfns = getattr(self, "barrier_fns", frozenset())
        in_then = node.iftrue is not None and calls_barrier(node.iftrue, bfns)
        in_else = node.iffalse is not None and calls_barrier(node.iffalse, bfns)
        # the threads that skip the barrier's branch leave the kernel without another
        # barrier (compiler.exit_ifs): a GPU counts them as arrived (barriers.py)
        exits = id(node) in getattr(self, "exit_ifs", ())
        if in_then and in_else:
            split = (barrier_segments(node.iftrue, bfns), barrier_segments(node.iffalse, bfns))
            if None not in split:
                return self._if_with_barriers_in_both_branches(node, fc, *split, exits)
        then = self.stmt(node.iftrue) if node.iftrue is not None else None
        other = self.stmt(node.iffalse) if node.iffalse is not None else None
        jumps = _has_jump(node)
        mark_else = exits and in_then and not in_else
        mark_then = exits and in_else and not in_then

        def if_(ctx):
            cond = fc(ctx)
            if not isinstance(cond, np.ndarray):
                if cond:
                    if then is not None:
                        then(ctx)
                elif other is not None:
                    other(ctx)
                return
            saved = ctx.mask
            saved_state = ctx.state()
            ctx.set_mask(saved & cond)
            if ctx.any and then is not None:
                if mark_else:
                    before = ctx.will_exit
                    ctx.will_exit = _union(before, saved & ~cond)
                    then(ctx)
                    ctx.will_exit = before
                else:
                    then(ctx)
            if other is not None:
                ctx.set_mask(saved & ~cond)
                if ctx.any:
                    if mark_then:
                        before = ctx.will_exit
                        ctx.will_exit = _union(before, saved & cond & ~ctx.jumped())
                        other(ctx)
                        ctx.will_exit = before
                    else:
                        other(ctx)
            if jumps:
                ctx.set_mask(saved & ~ctx.jumped())
            else:
                ctx.restore(saved, saved_state)
        return if_

    def _if_with_barriers_in_both_branches(self, node, fc, then_split, else_split, exits):
        """An if whose two branches call `__syncthreads()` as statements of their own
        (SGEMM_CUDA's kernel 11: half the block loads while the other half computes). On a
        GPU of compute capability 7.0 or later every `__syncthreads()` of a block is the one
        barrier 0: the threads of the two branches wait for each other at their k-th
        barriers. The emulator runs the branches piece by piece, barrier to barrier, and
        completes the k-th barriers of both as one (barriers.py: a hazard, the CUDA guide's
        rule in the warning). A branch with fewer barriers leaves its threads at the end of
        the if: a BarrierError, unless they leave the kernel without another barrier
        (`exits`), which the GPU counts as arriving."""
        def compile_branch(split):
            parts, lines = split
            saved = self.scope
            self.scope = _Scope(saved)
            compiled = [[(self.stmt(item), _has_jump(item)) for item in part] for part in parts]
            self.scope = saved
            return compiled, lines

        then_parts, then_lines = compile_branch(then_split)
        else_parts, else_lines = compile_branch(else_split)
        jumps = _has_jump(node)
        n = max(len(then_lines), len(else_lines))

        def run(ctx, part):
            for s, j in part:
                s(ctx)
                if j and not ctx.any:
                    return

        def one_way(ctx, parts, lines):
            for i, part in enumerate(parts):
                if ctx.any:
                    run(ctx, part)
                if i < len(lines):
                    ctx.syncthreads(lines[i])

        def if_both(ctx):
            cond = fc(ctx)
            if not isinstance(cond, np.ndarray):
                one_way(ctx, then_parts if cond else else_parts,
                        then_lines if cond else else_lines)
                return
            saved, saved_state = ctx.mask, ctx.state()
            m_then, m_else = saved & cond, saved & ~cond
            if not m_then.any() or not m_else.any():
                ctx.set_mask(m_then if m_then.any() else m_else)
                one_way(ctx, then_parts if m_then.any() else else_parts,
                        then_lines if m_then.any() else else_lines)
            else:
                none = np.zeros(ctx.T, dtype=bool)
                for i in range(n + 1):
                    if i < len(then_parts) and m_then.any():
                        ctx.set_mask(m_then)
                        run(ctx, then_parts[i])
                        m_then = ctx.mask
                    if i < len(else_parts) and m_else.any():
                        ctx.set_mask(m_else)
                        run(ctx, else_parts[i])
                        m_else = ctx.mask
                    if i == n:
                        break
                    lt = then_lines[i] if i < len(then_lines) else None
                    le = else_lines[i] if i < len(else_lines) else None
                    at_then = m_then if lt is not None else none
                    at_else = m_else if le is not None else none
                    will = ctx.will_exit
                    if exits:   # a branch that is done: its threads leave the kernel
                        will = _union(will, (m_then if lt is None else none)
                                      | (m_else if le is None else none))
                    arrived = at_then | at_else
                    ctx.set_mask(arrived)
                    ctx.barriers.syncthreads(lt if lt is not None else le, arrived,
                                             ctx.kernel_ret, will_exit=will,
                                             branches=((lt, at_then), (le, at_else)))
            if jumps:
                ctx.set_mask(saved & ~ctx.jumped())
            else:
                ctx.restore(saved, saved_state)
        return if_both

    def loop(self, node, init, cond, step, body, test_first=True):
        fcond = self.convert(self.expr(cond), ct.BOOL, node) if cond is not None else None
        fstep = self.expr(step).fn if step is not None else None
        line = _line(node)
        # Without break, continue or return in the body, no lane can leave mid-iteration:
        # skip the per-iteration checks for them.
        jumps = _has_jump(node.stmt)

        def run_loop(ctx):
            if init is not None:
                init(ctx)
            outer = ctx.mask
            outer_state = ctx.state()
            saved_brk, saved_cont = ctx.brk, ctx.cont
            ctx.brk = np.zeros(ctx.T, dtype=bool)
            ctx.cont = np.zeros(ctx.T, dtype=bool)
            active = outer
            first = True
            trips = 0
            try:
                while True:
                    trips += 1
                    ctx.step(line, trips)
                    if fcond is not None and (test_first or not first):
                        c = fcond(ctx)
                        if isinstance(c, np.ndarray):
                            active = active & c
                            ctx.set_mask(active)
                        elif not c:
                            break
                        if not ctx.any:
                            break
                    first = False
                    body(ctx)
                    if jumps and (ctx.brk.any() or ctx.ret.any() or ctx.cont.any()):
                        active = active & ~ctx.brk & ~ctx.ret
                        ctx.cont[:] = False
                        ctx.set_mask(active)
                        if not ctx.any:
                            break
                    elif ctx.mask is not active:
                        ctx.set_mask(active)
                    if fstep is not None:
                        fstep(ctx)
            finally:
                ctx.brk, ctx.cont = saved_brk, saved_cont
                ctx.leave_loop(line)
            if jumps and ctx.ret.any():
                ctx.set_mask(outer & ~ctx.jumped())
            else:
                ctx.restore(outer, outer_state)
        return run_loop

    def stmt_For(self, node):
        saved = self.scope
        self.scope = _Scope(saved)
        init = None
        if node.init is not None:
            init = self.stmt(node.init)
        body = self.stmt(node.stmt)
        run = self.loop(node, init, node.cond, node.next, body)
        self.scope = saved
        return run

    def stmt_While(self, node):
        return self.loop(node, None, node.cond, None, self.stmt(node.stmt))

    def stmt_DoWhile(self, node):
        return self.loop(node, None, node.cond, None, self.stmt(node.stmt), test_first=False)

    def stmt_Break(self, node):
        def brk(ctx):
            ctx.brk |= ctx.mask
            ctx.set_mask(np.zeros(ctx.T, dtype=bool))
        return brk

    def stmt_Continue(self, node):
        def cont(ctx):
            ctx.cont |= ctx.mask
            ctx.set_mask(np.zeros(ctx.T, dtype=bool))
        return cont

    def stmt_Return(self, node):
        fn = self.fn
        if node.expr is not None:
            if fn.ret_slot is None:
                raise self.error(node, f"'{fn.name}' returns void: write 'return;'")
            value = self.convert(self.rvalue(self.expr(node.expr)), fn.return_type, node)
            store = self.assigner(X(None, fn.return_type, slot=fn.ret_slot), node)
        elif fn.ret_slot is not None:
            raise self.error(node, f"'{fn.name}' must return a {fn.return_type}")
        else:
            value = store = None

        def ret(ctx):
            if value is not None:
                store(ctx, value(ctx))
            ctx.ret |= ctx.mask
            ctx.set_mask(np.zeros(ctx.T, dtype=bool))
        return ret

    def stmt_Switch(self, node):
        x = self.expr(node.cond)
        t = ct.integer_promote(ct.decay(x.ctype))
        fx = self.convert(x, t, node)
        if not isinstance(node.stmt, c_ast.Compound):
            raise self.unsupported(node, "a switch without braces")
        # Flatten: a list of (case values or 'default', statements).
        groups = []
        for item in node.stmt.block_items or []:
            while isinstance(item, (c_ast.Case, c_ast.Default)):
                if isinstance(item, c_ast.Case):
                    label = self.const_value(item.expr)
                else:
                    label = "default"
                groups.append([label, []])
                body = item.stmts or []
                if len(body) == 1 and isinstance(body[0], (c_ast.Case, c_ast.Default)):
                    item = body[0]
                    continue
                groups[-1][1].extend(body)
                item = None
            if item is not None:
                if not groups:
                    raise self.error(item, "a statement before the first case label")
                groups[-1][1].append(item)
        saved = self.scope
        self.scope = _Scope(saved)
        compiled = [(label, [self.stmt(s) for s in stmts]) for label, stmts in groups]
        self.scope = saved
        labels = [label for label, _ in compiled if label != "default"]

        def switch(ctx):
            v = fx(ctx)
            outer = ctx.mask
            saved_brk = ctx.brk
            ctx.brk = np.zeros(ctx.T, dtype=bool)
            entered = np.zeros(ctx.T, dtype=bool)
            matched_any = np.zeros(ctx.T, dtype=bool)
            for label in labels:
                matched_any = matched_any | (v == t.dtype.type(label))
            try:
                for label, stmts in compiled:
                    hit = ~matched_any if label == "default" else (v == t.dtype.type(label))
                    entered = entered | (outer & hit)  # fall-through keeps lanes entered
                    ctx.set_mask(entered & ~ctx.brk & ~ctx.jumped())
                    if ctx.any:
                        for s in stmts:
                            s(ctx)
                            if not ctx.any:
                                break
            finally:
                ctx.brk = saved_brk
            ctx.set_mask(outer & ~ctx.jumped())
        return switch

    def stmt_Label(self, node):
        raise self.unsupported(node, "labels and goto")

    def stmt_Goto(self, node):
        raise self.unsupported(node, "goto")

    def stmt_Typedef(self, node):
        self.add_typedef(node)
        return lambda ctx: None


_JUMPS = (c_ast.Break, c_ast.Continue, c_ast.Return)

# The calls that are a block barrier (builtins.py, async_copy.py: each waits for the block).
BARRIER_CALLS = frozenset({"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                           "__syncthreads_or", "cuda::barrier::arrive_and_wait",
                           "cuda::barrier::arrive", "cooperative_groups::wait"})


def _union(a, b):
    """The lanes of `a` (None: none) and of `b`."""
    return b if a is None else a | b


def calls_barrier(node, barrier_fns=frozenset()) -> bool:
    """Whether statement or expression `node` calls a block barrier, directly or through
    one of the functions `barrier_fns` (`barrier_functions`)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        if isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID) and (
                n.name.name in BARRIER_CALLS or n.name.name in barrier_fns):
            return True
        stack.extend(child for _, child in n.children())
    return False


def barrier_functions(functions: dict) -> frozenset:
    """The names of the functions (name -> FuncDef) that call a block barrier, directly or
    through each other."""
    found: set = set()
    changed = True
    while changed:
        changed = False
        for name, fdef in functions.items():
            if name not in found and calls_barrier(fdef.body, found):
                found.add(name)
                changed = True
    return frozenset(found)


def _is_syncthreads(item) -> bool:
    return (isinstance(item, c_ast.FuncCall) and isinstance(item.name, c_ast.ID)
            and item.name.name == "__syncthreads" and not (item.args and item.args.exprs))


def barrier_segments(branch, barrier_fns):
    """A branch of an if cut at its `__syncthreads();` statements: ([statements before the
    first, between the first and the second, ..., after the last], [the barriers' lines]);
    None if a barrier is anywhere else in it (in a loop, another if, a function it calls)."""
    items = (branch.block_items or []) if isinstance(branch, c_ast.Compound) else [branch]
    parts, lines = [[]], []
    for item in items:
        if _is_syncthreads(item):
            lines.append(_line(item))
            parts.append([])
        elif calls_barrier(item, barrier_fns):
            return None
        else:
            parts[-1].append(item)
    return parts, lines


def exit_ifs(body, barrier_fns) -> frozenset:
    """The ids of the `if` statements of a kernel's `body` after which the kernel ends
    without another barrier: not inside a loop or a switch, and no statement after them
    (in each enclosing block, up to the kernel's end) calls a barrier. A thread that skips
    such an if's barrier leaves the kernel before reaching one, and a GPU counts a thread
    that exited as arrived."""
    found = set()

    def walk(items, tail):
        # later[i]: whether a statement after items[i] (in this block) calls a barrier;
        # one pass from the end, each statement walked once
        later, seen = [tail] * len(items), tail
        for i in range(len(items) - 1, -1, -1) if not tail else ():
            later[i] = seen
            seen = seen or calls_barrier(items[i], barrier_fns)
        for i, s in enumerate(items):
            after = later[i]
            if isinstance(s, c_ast.If):
                if not after:
                    found.add(id(s))
                for branch in (s.iftrue, s.iffalse):
                    if branch is not None:
                        walk((branch.block_items or []) if isinstance(branch, c_ast.Compound)
                             else [branch], after)
            elif isinstance(s, c_ast.Compound):
                walk(s.block_items or [], after)

    walk((body.block_items or []) if isinstance(body, c_ast.Compound) else [body], False)
    return frozenset(found)


def _has_jump(node) -> bool:
    """Whether a statement may clear lanes (break, continue or return inside it)."""
    if isinstance(node, _JUMPS):
        return True
    if isinstance(node, c_ast.FuncCall):
        return False
    for _, child in node.children():
        if _has_jump(child):
            return True
    return False
