"""Stage 3, expressions: C expressions -> `X` closures (a mixin of `compiler.Compiler`).

Input: pycparser expression nodes. Output: an `X` per node: its static C type, whether it
is an lvalue and where it lives, a constant value when it has one, and `fn(ctx)` computing
its value on lane vectors with C's conversions (values.py) and memory accesses (execute.py).
Dispatch is by node class: `expr_<Node>`; an unknown node is an `UnsupportedFeatureError`.
"""

from __future__ import annotations

import re

import numpy as np
from pycparser import c_ast

from ..model import c_types as ct
from ..model import values as V
from ..frontend.preprocess import FloatMode
from .closures import (BUILTIN_VECTORS, LiteralError, X, _line, char_constant, constant,
                       parse_int)
from ...gpu import WARP_SIZE


_BUILTIN_ATTRS = {"threadIdx": "tid", "blockIdx": "bid", "blockDim": "bdim", "gridDim": "gdim"}


class ExpressionsMixin:
    """`expr_<Node>` methods; needs the helpers of `compiler.Compiler` (convert, rvalue,
    memory_lvalue, assigner, error, unsupported, resolve, device_function)."""

    @property
    def float_mode(self):
        """nvcc's floating-point options for this module (`preprocess.FloatMode`)."""
        mode = getattr(self.pre, "float_mode", None)
        return mode if mode is not None else FloatMode()

    # ------------------------------------------------------------------ expressions
    def expr(self, node) -> X:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.unsupported(node, f"the expression {type(node).__name__}")
        return method(node)

    def const_value(self, node) -> int:
        x = self.expr(node)
        if x.const is None or not ct.decay(x.ctype).is_integer:
            raise self.error(node, "array size must be a constant integer expression "
                                   "(a number, or a #define / -D macro)")
        return int(x.const)

    def expr_Constant(self, node) -> X:
        text = node.value
        if node.type == "string":
            return X(lambda ctx, s=text: s, ct.Pointer(ct.CHAR), const=text)
        if node.type == "char" or text.endswith("'"):     # pycparser: 'ab' is an int
            try:
                value, t = char_constant(text)
            except LiteralError as exc:
                raise self.error(node, str(exc)) from None
            return constant(value, t)
        if node.type in ("float", "double") or re.search(r"[.eEpP]", text) and not \
                text.lower().startswith("0x"):
            is_float = text[-1] in "fF"
            value = float(text.rstrip("fFlL"))
            return constant(value, ct.FLOAT if is_float else ct.DOUBLE)
        try:
            value, t = parse_int(text)
        except ValueError:
            raise self.error(node, f"cannot read the number '{text}'") from None
        return constant(value, t)

    def expr_ID(self, node) -> X:
        name = node.name
        x = self.scope.lookup(name)
        if x is not None:
            if self.fn is not None and id(node) in self.fn.unset_reads \
                    and x.slot in self.fn.shadows:
                return self.checked_read(x, node)
            if x.addr is not None and x.parts is None and x.const is None:
                # a variable in memory (a struct with array members, an address-taken
                # local): its accesses are reported at this line, not at its declaration
                return self.memory_lvalue(x.addr, x.ctype, node)
            return x
        if name in BUILTIN_VECTORS:
            attr = _BUILTIN_ATTRS[name]
            return X(lambda ctx, attr=attr: getattr(ctx, attr), ct.UINT3, builtin=name)
        if name == "warpSize":
            return constant(WARP_SIZE, ct.INT)
        if name in ("true", "false"):
            return constant(name == "true", ct.BOOL)
        if name in ("INFINITY", "HUGE_VALF"):
            return constant(np.inf, ct.FLOAT)
        if name == "NAN":
            return constant(np.nan, ct.FLOAT)
        if name == "FLT_MAX":
            return constant(np.finfo(np.float32).max, ct.FLOAT)
        if name == "INT_MAX":
            return constant(2**31 - 1, ct.INT)
        if name == "INT_MIN":
            return constant(-2**31, ct.INT)
        raise self.error(node, f"'{name}' is not declared")

    def checked_read(self, x: X, node) -> X:
        """`x` (a local that definite assignment cannot prove set here) read with a check:
        threads that have not given it a value yet make the launch warn, once per site."""
        shadow, name, t, decl_line = self.fn.shadows[x.slot]
        slot, line = x.slot, _line(node)
        site = (name, line, decl_line, t)

        def read(ctx):
            state = ctx.env[shadow]
            if state is not True:
                bad = V.unset_lanes(state, ctx)
                if bad is not None:
                    ctx.unset_read(site, bad)
            return ctx.env[slot]
        return X(read, x.ctype, slot=x.slot, member=x.member, const=x.const)

    def expr_StructRef(self, node) -> X:
        base = self.expr(node.name)
        fname = node.field.name
        if base.builtin is not None:
            if node.type != "." or fname not in "xyz" or len(fname) != 1:
                raise self.error(node, f"{base.builtin} has fields x, y and z")
            i = "xyz".index(fname)
            attr = _BUILTIN_ATTRS[base.builtin]
            return X(lambda ctx, attr=attr, i=i: getattr(ctx, attr)[i], ct.UINT)
        if node.type == "->":
            pt = ct.decay(base.ctype)
            if not pt.is_pointer or not pt.target.is_struct:
                raise self.error(node, f"'->' needs a pointer to a struct, not {base.ctype}")
            st = pt.target
            found = st.field(fname)
            if found is None:
                raise self.error(node, f"{st} has no field '{fname}'")
            ftype, offset = found
            bfn = base.fn
            return self.memory_lvalue(lambda ctx: bfn(ctx) + offset, ftype, node)
        st = base.ctype
        if not st.is_struct:
            raise self.error(node, f"'.{fname}' needs a struct, not {st}")
        found = st.field(fname)
        if found is None:
            raise self.error(node, f"{st} has no field '{fname}'")
        ftype, offset = found
        if base.addr is None and st.holds_aggregates:
            # A struct value with array or struct fields (`make().v[i]`, `(c ? a : b).v`):
            # copied to a temporary in local memory, where its fields have addresses.
            address, bfn, line = self.local_address(st), base.fn, _line(node)

            def spill(ctx, a=address):
                ctx.store_struct(a, st, bfn(ctx), line)
                return a
            base = X(spill, st, addr=spill)
        if base.addr is not None:
            baddr = base.addr
            return self.memory_lvalue(lambda ctx: baddr(ctx) + offset, ftype, node)
        index = [f[0] for f in st.fields].index(fname)
        bfn = base.fn
        return X(lambda ctx: bfn(ctx)[index], ftype,
                 slot=base.slot if base.member is None else None,
                 member=index if base.slot is not None and base.member is None else None)

    def expr_ArrayRef(self, node) -> X:
        base = self.expr(node.name)
        index = self.expr(node.subscript)
        bt = ct.decay(base.ctype)
        if not bt.is_pointer:
            if ct.decay(index.ctype).is_pointer:
                base, index, bt = index, base, ct.decay(index.ctype)
            else:
                raise self.error(node, f"cannot index a value of type {base.ctype}")
        if not ct.decay(index.ctype).is_integer:
            raise self.error(node.subscript, f"an array index must be an integer, "
                                             f"not {index.ctype}")
        elem = bt.target
        if elem.is_void:
            raise self.error(node, "cannot index a void pointer")
        size = elem.size
        bfn = base.fn
        ifn = self.convert(index, ct.LONG, node)
        if index.const is not None:
            delta = np.int64(int(index.const) * size)
            addr = lambda ctx: bfn(ctx) + delta  # noqa: E731
        elif ct.decay(index.ctype).size <= 4:
            # A 32-bit index times an int64 scalar is an int64 product: one NumPy operation
            # for the conversion and the scaling, exact for every 32-bit value.
            raw, size64 = index.fn, np.int64(size)
            addr = lambda ctx: bfn(ctx) + np.multiply(raw(ctx), size64)  # noqa: E731
        else:
            addr = lambda ctx: bfn(ctx) + ifn(ctx) * size  # noqa: E731
        return self.memory_lvalue(addr, elem, node, parts=self._index_parts(base, index, size))

    @staticmethod
    def _index_parts(base, index, size):
        """`X.parts` of `base[index]`: (base fn, element index fn, size), folding
        `a[i][j]` into one index of the innermost elements; None for 64-bit indices."""
        if not ct.decay(index.ctype).size <= 4:
            return None
        raw = index.fn
        if index.const is not None:
            c = np.int64(int(index.const))
            raw = lambda ctx: c  # noqa: E731
        if base.parts is None or not base.ctype.is_array:
            return (base.fn, raw, size)
        b0, i0, unit = base.parts
        if unit % size:
            return None
        k = np.int64(unit // size)
        return (b0, lambda ctx: np.multiply(i0(ctx), k) + raw(ctx), size)

    def expr_UnaryOp(self, node) -> X:
        op = node.op
        if op in ("sizeof", "_Alignof"):
            if isinstance(node.expr, c_ast.Typename):
                t = self.resolve(node.expr.type)
            else:
                t = self.expr(node.expr).ctype
            return constant(t.size if op == "sizeof" else t.align, ct.ULONG)
        if op in ("++", "--", "p++", "p--"):
            return self.increment(node)
        x = self.expr(node.expr)
        if op == "&":
            if x.ctype.is_array:
                return X(x.fn, ct.Pointer(x.ctype))
            if x.addr is None and x.ctype.is_struct and x.slot is None:
                # the address of a temporary object (a method that gets its object by
                # address, called on a returned struct): a copy in local memory
                address, fn, t, line = self.local_address(x.ctype), x.fn, x.ctype, _line(node)

                def temporary(ctx, a=address):
                    ctx.store_struct(a, t, fn(ctx), line)
                    return a
                return X(temporary, ct.Pointer(x.ctype))
            if x.addr is None:
                raise self.unsupported(node, "taking the address of a local variable",
                                       "use a local array of one element, or shared memory")
            return X(x.addr, ct.Pointer(x.ctype))
        if op == "*":
            pt = ct.decay(x.ctype)
            if not pt.is_pointer:
                raise self.error(node, f"cannot dereference a value of type {x.ctype}")
            return self.memory_lvalue(x.fn, pt.target, node)
        t = ct.decay(x.ctype)
        if op == "!":
            f = self.convert(x, ct.BOOL, node)
            if x.const is not None:
                return constant(not bool(x.const), ct.BOOL)
            return X(lambda ctx: np.logical_not(f(ctx)), ct.BOOL)
        if not t.is_arithmetic:
            raise self.error(node, f"operator {op} needs a number, not {t}")
        rt = ct.integer_promote(t)
        f = self.convert(x, rt, node)
        if op == "+":
            return X(f, rt, const=None if x.const is None else rt.dtype.type(x.const))
        if op == "-":
            if x.const is not None:
                with np.errstate(over="ignore"):        # -INT_MIN wraps, as on the GPU
                    return constant(-rt.dtype.type(x.const), rt)
            entry = self._products().get(id(node.expr)) if rt.is_floating else None
            if entry is not None and entry[2] == rt:
                self._products()[id(node)] = entry[:3] + (not entry[3],)
            return X(lambda ctx: np.negative(f(ctx)), rt)
        if op == "~":
            if not rt.is_integer:
                raise self.error(node, "operator ~ needs an integer")
            if x.const is not None:
                return constant(np.invert(rt.dtype.type(x.const)), rt)
            return X(lambda ctx: np.invert(f(ctx)), rt)
        raise self.unsupported(node, f"the unary operator {op}")

    def increment(self, node) -> X:
        target = self.expr(node.expr)
        t = ct.decay(target.ctype)
        store = self.assigner(target, node)
        step = 1 if "+" in node.op else -1
        post = node.op.startswith("p")
        if t.is_pointer:
            delta = np.int64(step * t.target.size)
        else:
            delta = np.array(step).astype(t.dtype)[()]   # -1 wraps for unsigned types
        load = target.fn
        addr = target.addr
        if addr is not None:
            # Evaluate the address once: load and store the same element.
            t_ = t
            line = _line(node)

            def inc_mem(ctx):
                a = addr(ctx)
                old = ctx.load(a, t_, line)
                new = (old + delta).astype(t_.dtype) if isinstance(old, np.ndarray) else \
                    t_.dtype.type(old + delta)
                ctx.store(a, t_, new, line)
                return old if post else new
            return X(inc_mem, t)

        def inc(ctx):
            old = load(ctx)
            new = (old + delta).astype(t.dtype) if isinstance(old, np.ndarray) else \
                t.dtype.type(old + delta)
            store(ctx, new)
            return old if post else new
        return X(inc, t)

    def expr_BinaryOp(self, node) -> X:
        op = node.op
        if op in ("&&", "||"):
            return self.logical(node)
        a = self.rvalue(self.expr(node.left))
        b = self.rvalue(self.expr(node.right))
        ta, tb = a.ctype, b.ctype
        if ta.is_pointer or tb.is_pointer:
            return self.pointer_op(node, op, a, b)
        if not (ta.is_arithmetic and tb.is_arithmetic):
            raise self.error(node, f"operator {op} cannot combine {ta} and {tb}")
        t = ct.usual_arithmetic_conversion(ta, tb)
        if op in ("<<", ">>"):
            t = ct.integer_promote(ta)
            fa, fb = self.convert(a, t, node), self.convert(b, t, node)
        else:
            fa, fb = self.convert(a, t, node), self.convert(b, t, node)
        ftz = t == ct.FLOAT and self.float_mode.ftz
        if op in V.COMPARE:
            cmp = V.COMPARE[op]
            if a.const is not None and b.const is not None:
                return constant(bool(cmp(t.dtype.type(a.const), t.dtype.type(b.const))), ct.BOOL)
            if ftz:     # setp.ftz.f32: denormal operands compare as zero
                return X(lambda ctx: cmp(V.flush32(fa(ctx)), V.flush32(fb(ctx))), ct.BOOL)
            return X(lambda ctx: cmp(fa(ctx), fb(ctx)), ct.BOOL)
        fop = V.arith_op(op, t)
        if fop is None:
            raise self.error(node, f"operator {op} cannot be used on {t} (use fmodf for floats)")
        if op == "/" and t == ct.FLOAT:
            exact = fop
            if not self.float_mode.prec_div:
                fop = lambda x, y: V.canonical_nan(V.approx_div32(x, y))  # noqa: E731
            else:
                fop = lambda x, y: V.canonical_nan(exact(x, y))  # noqa: E731
        if t == ct.FLOAT and op in "+-*":
            ieee = fop
            fop = lambda x, y: V.canonical_nan(ieee(x, y))  # noqa: E731
        if ftz and op in "+-*/":
            plain = fop
            fop = lambda x, y: V.flush32(plain(V.flush32(x), V.flush32(y)))  # noqa: E731
        if a.const is not None and b.const is not None:
            with np.errstate(all="ignore"):
                return constant(fop(t.dtype.type(a.const), t.dtype.type(b.const)), t)
        if t.is_floating and op == "*":
            self._products()[id(node)] = (fa, fb, t, False)
        if t.is_floating and op in "+-" and self.float_mode.fmad:
            fused = self.contracted(node, t, fa, fb)
            if fused is not None:
                return fused
        if t.is_floating and op in "+-*/":
            def flop(ctx):
                ctx.flops += ctx.nactive
                return fop(fa(ctx), fb(ctx))
            return X(flop, t)
        return X(lambda ctx: fop(fa(ctx), fb(ctx)), t)

    def _products(self) -> dict:
        """id(node) -> (x fn, y fn, type, negated) for each compiled float `x * y` and
        `-(x * y)`: the operands an enclosing add or subtract fuses with (`contracted`)."""
        table = getattr(self, "_product_table", None)
        if table is None:
            table = self._product_table = {}
        return table

    def contracted(self, node, t, fa, fb) -> X | None:
        """`x * y + z`, `z + x * y`, `x * y - z`, `z - x * y` (and `-(x * y) + z`) of type
        `t` as one fused multiply-add, as nvcc compiles them under -fmad=true (its
        default): NVVM emits fma.rn for a product that feeds an add or subtract, and ptxas
        fuses the remaining mul.f32/add.f32 pairs. When both sides are products, the left
        one is fused (LLVM's DAG combiner tries the left operand first). `fa`, `fb`: the
        compiled operands, converted to `t`. None when neither operand is such a product
        of type `t`. Counts 2 FLOPs per lane, as `x * y + z` does unfused and as Nsight
        Compute counts an FFMA."""
        products = self._products()
        op = node.op
        for side, other in (("left", fb), ("right", fa)):
            entry = products.get(id(getattr(node, side)))
            if entry is not None and entry[2] == t:
                break
        else:
            return None
        fx, fy, _, neg = entry
        # the product's sign: negated by -(x*y) or by `z - x * y`; the addend's by `x*y - z`
        neg_p = neg ^ (op == "-" and side == "right")
        neg_z = op == "-" and side == "left"
        fz = other
        dtype = t.dtype
        ftz = t == ct.FLOAT and self.float_mode.ftz
        flush = V.flush32 if ftz else (lambda v: v)

        def ffma(ctx):
            ctx.flops += 2 * ctx.nactive
            a, c = fx(ctx), fz(ctx)
            if neg_p:
                a = np.negative(a)
            if neg_z:
                c = np.negative(c)
            return V.canonical_nan(flush(V.fma(flush(a), flush(fy(ctx)), flush(c), dtype)))
        return X(ffma, t)

    def pointer_op(self, node, op, a, b) -> X:
        ta, tb = a.ctype, b.ctype
        if op in V.COMPARE:
            cmp = V.COMPARE[op]
            fa, fb = self.convert(a, ct.LONG, node), self.convert(b, ct.LONG, node)
            return X(lambda ctx: cmp(fa(ctx), fb(ctx)), ct.BOOL)
        if op == "-" and ta.is_pointer and tb.is_pointer:
            size = ta.target.size
            fa, fb = a.fn, b.fn
            return X(lambda ctx: ((fa(ctx) - fb(ctx)) // size).astype(np.int64)
                     if isinstance(fa(ctx), np.ndarray) else np.int64((fa(ctx) - fb(ctx)) // size),
                     ct.LONG)
        if op in ("+", "-"):
            if tb.is_pointer:
                if op == "-":
                    raise self.error(node, "cannot subtract a pointer from a number")
                a, b, ta, tb = b, a, tb, ta
            if not tb.is_integer:
                raise self.error(node, f"pointer arithmetic needs an integer, not {tb}")
            size = ta.target.size if not ta.target.is_void else 1
            fp, fi = a.fn, self.convert(b, ct.LONG, node)
            sign = 1 if op == "+" else -1
            return X(lambda ctx: fp(ctx) + sign * fi(ctx) * size, ta)
        raise self.error(node, f"operator {op} cannot be used on pointers")

    def logical(self, node) -> X:
        a = self.expr(node.left)
        b = self.expr(node.right)
        fa, fb = self.convert(a, ct.BOOL, node), self.convert(b, ct.BOOL, node)
        is_and = node.op == "&&"
        if a.const is not None and b.const is not None:
            va, vb = bool(a.const), bool(b.const)
            return constant((va and vb) if is_and else (va or vb), ct.BOOL)

        def logic(ctx):
            left = fa(ctx)
            if not isinstance(left, np.ndarray):
                if bool(left) != is_and:
                    return np.bool_(left)
                return fb(ctx)
            # Evaluate the right side only in lanes that need it (C short-circuit).
            saved = ctx.mask
            ctx.set_mask(saved & left if is_and else saved & ~left)
            try:
                right = fb(ctx) if ctx.any else np.bool_(False)
            finally:
                ctx.set_mask(saved)
            return (left & right) if is_and else (left | right)
        return X(logic, ct.BOOL)

    def expr_TernaryOp(self, node) -> X:
        c = self.expr(node.cond)
        a = self.rvalue(self.expr(node.iftrue))
        b = self.rvalue(self.expr(node.iffalse))
        if a.ctype.is_arithmetic and b.ctype.is_arithmetic:
            t = ct.usual_arithmetic_conversion(a.ctype, b.ctype)
        elif a.ctype == b.ctype:
            t = a.ctype
        elif a.ctype.is_pointer and b.ctype.is_integer:
            t = a.ctype
        elif b.ctype.is_pointer and a.ctype.is_integer:
            t = b.ctype
        else:
            raise self.error(node, f"the two sides of ?: differ: {a.ctype} and {b.ctype}")
        fc = self.convert(c, ct.BOOL, node)
        fa, fb = self.convert(a, t, node), self.convert(b, t, node)
        if c.const is not None:
            # the arm chosen, converted to the type of the whole (`1 ? i : f` is a float)
            chosen, fchosen = (a, fa) if bool(c.const) else (b, fb)
            const = None
            if chosen.const is not None and t.is_scalar:
                conv = V.converter(ct.decay(chosen.ctype), t)
                const = conv(chosen.const) if conv else chosen.const
            return X(fchosen, t, const=const)

        def ternary(ctx):
            cond = fc(ctx)
            if not isinstance(cond, np.ndarray):
                return fa(ctx) if cond else fb(ctx)
            saved = ctx.mask
            try:
                ctx.set_mask(saved & cond)
                va = fa(ctx) if ctx.any else None
                ctx.set_mask(saved & ~cond)
                vb = fb(ctx) if ctx.any else None
            finally:
                ctx.set_mask(saved)
            if va is None:
                return vb
            if vb is None:
                return va
            return V.where(cond, va, vb)
        return X(ternary, t)

    def expr_Cast(self, node) -> X:
        t = self.resolve(node.to_type)
        x = self.expr(node.expr)
        if t.is_void:
            f = x.fn
            return X(f, ct.VOID)
        f = self.convert(x, t, node)
        const = None
        if x.const is not None and t.is_scalar:
            const = V.converter(ct.decay(x.ctype), t)(x.const) if V.converter(
                ct.decay(x.ctype), t) else x.const
        return X(f, t, const=const)

    def expr_Assignment(self, node) -> X:
        if isinstance(node.lvalue, c_ast.TernaryOp):
            raise self.unsupported(node, "assigning to a '?:' (c ? x : y = v)",
                                   "write an if: if (c) x = v; else y = v;")
        target = self.expr(node.lvalue)
        if isinstance(node.rvalue, c_ast.InitList) and node.op == "=":
            return self.assign_init_list(node, target)
        value = self.expr(node.rvalue)
        t = target.ctype
        if t.is_array:
            raise self.error(node, "cannot assign to a whole array; assign its elements")
        op = node.op
        if op == "=":
            copy = self.struct_copier(target, value, node)
            if copy is not None:
                return copy
            fv = self.convert(value, ct.decay(t), node)
            store = self.assigner(target, node)

            def assign(ctx):
                v = fv(ctx)
                store(ctx, v)
                return v
            return X(assign, t)
        binop = op[:-1]
        fake = c_ast.BinaryOp(binop, node.lvalue, node.rvalue, node.coord)
        if target.addr is not None:
            # a[i] += v: evaluate the address once. The loaded value waits in an environment
            # slot of its own (per call and per Context: under schedule="adversarial" another
            # warp may run this statement while this one's right-hand side is being loaded).
            addr, line = target.addr, _line(node)
            slot = self.fn.new_slot()
            tmp = X(self.slot_reader(slot), t)
            combined = self.binary_on(fake, binop, tmp, value)
            fc = self.convert(combined, t, node)
            is_struct = t.is_struct

            def update(ctx):
                a = addr(ctx)
                ctx.env[slot] = (ctx.load(a, t, line) if not is_struct else
                                 ctx.load_struct(a, t, line))
                v = fc(ctx)
                ctx.store(a, t, v, line)
                return v
            return X(update, t)
        combined = self.binary_on(fake, binop, target, value)
        fc = self.convert(combined, t, node)
        store = self.assigner(target, node)

        def update_var(ctx):
            v = fc(ctx)
            store(ctx, v)
            return v
        return X(update_var, t)

    def struct_copier(self, target: X, value: X, node) -> X | None:
        """`a = b` of two structs with array or struct members, both in memory: a copy that
        also carries which members have a value (`Context.copy_struct`); None otherwise."""
        t = target.ctype
        if not (t.is_struct and t.holds_aggregates and value.ctype == t
                and target.addr is not None and value.addr is not None):
            return None
        taddr, vaddr, line = target.addr, value.addr, _line(node)

        def copy(ctx):
            ctx.copy_struct(taddr(ctx), vaddr(ctx), t, line)
        return X(copy, ct.VOID)

    def binary_on(self, node, op, a: X, b: X) -> X:
        """Compile `a op b` for already-compiled operands (used by compound assignment)."""
        saved = self.expr
        pre = {id(node.left): a, id(node.right): b}

        def patched(n):
            if id(n) in pre:
                return pre[id(n)]
            return saved(n)
        self.expr = patched
        try:
            return self.expr_BinaryOp(node)
        finally:
            self.expr = saved

    def expr_ExprList(self, node) -> X:
        xs = [self.expr(e) for e in node.exprs]
        fns = [x.fn for x in xs]

        def comma(ctx):
            v = None
            for f in fns:
                v = f(ctx)
            return v
        return X(comma, xs[-1].ctype)

    def expr_FuncCall(self, node) -> X:
        from .builtins import compile_builtin_call

        if not isinstance(node.name, c_ast.ID):
            raise self.unsupported(node, "calls through function pointers")
        name = node.name.name
        args = node.args.exprs if node.args is not None else []
        if name in getattr(self.ast, "failed", {}) and name not in self.functions:
            exc = self.ast.failed[name]     # a function the front end could not lower
            if exc.line is None:            # in the prelude: name the student's call
                what = re.sub(r"^kernel\.cu:\w*: (the CPU emulator does not support )?", "",
                              str(exc).split("\n")[0])
                raise self.unsupported(node, f"{what} (in '{name}', called here)")
            raise exc
        if name in self.functions:
            call, rtype, params = self.device_function(name, node)
            if len(args) != len(params):
                raise self.error(node, f"'{name}' takes {len(params)} arguments, "
                                       f"{len(args)} given")
            fargs = [self.convert(self.rvalue(self.expr(a)), p.ctype, a)
                     for a, p in zip(args, params)]
            line = _line(node)
            if line is not None and _line(self.functions[name]) is None:
                # A call of the front end's prelude (cooperative groups), whose statements
                # have no line: a barrier or tile error inside it names this call's line.
                def prelude_call(ctx):
                    ctx.call_line = line
                    return call(ctx, [f(ctx) for f in fargs])
                return X(prelude_call, rtype)
            return X(lambda ctx: call(ctx, [f(ctx) for f in fargs]), rtype)
        return compile_builtin_call(self, node, name, args)

    def assign_init_list(self, node, target: X) -> X:
        """`target = { ... }`: a struct or array member given a brace list (a constructor's
        `: v{}` or `: e{x, y, z}`); what the list leaves out is zero."""
        t = target.ctype
        if t.is_array or target.addr is not None:
            base = target.fn if t.is_array else target.addr
            stores = self.aggregate_init(node.rvalue, t, 0, node)
            line = _line(node)

            def assign_list(ctx):
                a = base(ctx)
                for off, lt, fv in stores:
                    if lt.is_struct:
                        ctx.store_struct(a + off, lt, fv(ctx), line)
                    else:
                        ctx.store(a + off, lt, fv(ctx), line)
            return X(assign_list, ct.VOID)
        value = self.init_value(node.rvalue, t)
        store = self.assigner(target, node)

        def assign(ctx):
            v = value(ctx)
            store(ctx, v)
            return v
        return X(assign, t)

    def init_value(self, init, t):
        """A closure giving the value of type `t` (nested tuples for structs and arrays) that
        the brace list `init` gives: `{x, y}`, `{ {1, 2}, 3 }`, `{}`."""
        if not isinstance(init, c_ast.InitList):
            if t.is_array:
                raise self.error(init, "initialise an array member with { ... }")
            return self.convert(self.rvalue(self.expr(init)), t, init)
        if t.is_struct:
            types = [f[1] for f in t.fields]
        elif t.is_array:
            types = [t.elem] * (t.length or 0)
        else:
            types = [t]
        if len(init.exprs) > len(types):
            raise self.error(init, f"too many initializers for {t} "
                                   f"({len(init.exprs)} > {len(types)})")
        parts = [self.init_value(e, mt) for e, mt in zip(init.exprs, types)]
        parts += [lambda ctx, z=V.zero_of(mt): z for mt in types[len(parts):]]
        if not (t.is_struct or t.is_array):
            return parts[0]
        return lambda ctx: tuple(p(ctx) for p in parts)

    def expr_CompoundLiteral(self, node) -> X:
        """`(T){ ... }`: the front end's `return {lo, hi};`, `T{x, y}`, `f({1, 2})`."""
        t = self.resolve(node.type)
        if t.is_array:
            raise self.unsupported(node, "an array-valued brace list here",
                                   "declare a local array with it, then use the array")
        return X(self.init_value(node.init, t), t)

    def expr_InitList(self, node):
        raise self.error(node, "a brace initializer can only initialise a declared variable")
