"""Stage 3: pycparser AST -> Python closures, compiled once per kernel.

Input: the `FileAST` of stage 2. Output: a `Program` holding, for each `__global__` function,
a `KernelCode` (its parameters, shared-memory layout, local-memory size and a body closure
`run(ctx)`). Everything static is decided here, once: each expression's C type, the usual
arithmetic conversions, where each variable lives (an environment slot, shared memory or
local memory), constant folding. At run time a closure only does NumPy work on lane vectors.

The compiler is a visitor: `expr_<Node>` returns an `X` (a compiled expression), and
`stmt_<Node>` a statement closure. A construct it does not support raises
`UnsupportedFeatureError` naming the construct and the student's line.

Control flow follows the SIMT model: `ctx.mask` holds the active lanes; `if` narrows it,
loops run while any lane is active, and `break`, `continue` and `return` clear lanes (kept in
`ctx.brk`, `ctx.cont`, `ctx.ret` until the enclosing loop or function restores them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from pycparser import c_ast

from ..errors import CompileError, UnsupportedFeatureError
from . import ctypes_ as ct
from . import values as V
from .memory import LOCAL_REGION, SHARED_REGION, make_address
from .parse import Param, is_kernel, source_line
from .preprocess import SOURCE_NAME, Preprocessed

BUILTIN_VECTORS = ("threadIdx", "blockIdx", "blockDim", "gridDim")


def _line(node) -> int | None:
    c = getattr(node, "coord", None)
    return c.line if c is not None else None


def _col(node) -> int | None:
    c = getattr(node, "coord", None)
    return c.column if c is not None else None


class X:
    """A compiled expression.

    `fn(ctx)` gives its value (an array-typed expression gives its address, a struct a tuple
    of components). `ctype` is its static C type. Lvalues say where they live: `slot` (a
    variable in the function's environment, with `member` for a field of a struct
    variable) or `addr(ctx)` (memory). `const` holds the value of a constant expression.
    """

    __slots__ = ("fn", "ctype", "slot", "member", "addr", "const", "builtin")

    def __init__(self, fn, ctype, *, slot=None, member=None, addr=None, const=None, builtin=None):
        self.fn = fn
        self.ctype = ctype
        self.slot = slot
        self.member = member
        self.addr = addr
        self.const = const
        self.builtin = builtin

    @property
    def is_lvalue(self) -> bool:
        return self.slot is not None or self.addr is not None


def constant(value, t: ct.CType) -> X:
    v = t.dtype.type(value)
    return X(lambda ctx, v=v: v, t, const=v)


@dataclass
class SharedVar:
    """A `__shared__` variable: name, type and byte offset in the block's shared memory."""

    name: str
    ctype: ct.CType
    offset: int
    dynamic: bool = False
    line: int | None = None


@dataclass
class KernelCode:
    """What the executor needs to launch one kernel."""

    name: str
    params: list
    param_slots: list
    nslots: int
    run: object
    shared: list = field(default_factory=list)
    static_shared_bytes: int = 0
    local_bytes: int = 0
    line: int | None = None


@dataclass
class Program:
    kernels: dict
    pre: Preprocessed
    constants: list = field(default_factory=list)


class _Scope:
    def __init__(self, parent=None):
        self.parent = parent
        self.names: dict = {}

    def lookup(self, name):
        s = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None


class _Function:
    """Per-function compile state: environment slots and local-memory layout."""

    def __init__(self, name, return_type):
        self.name = name
        self.return_type = return_type
        self.nslots = 0
        self.ret_slot = None

    def new_slot(self) -> int:
        self.nslots += 1
        return self.nslots - 1


class TypeResolver:
    """Turns pycparser type nodes into `ctypes_` types (typedefs included)."""

    def __init__(self, pre: Preprocessed):
        self.pre = pre
        self.typedefs: dict = {}
        self.structs: dict = {}

    # -- errors
    def error(self, node, message, cls=CompileError):
        line = _line(node)
        return cls(f"{SOURCE_NAME}:{line}: {message}", line=line, column=_col(node),
                   source_line=source_line(self.pre, line))

    def unsupported(self, node, what, advice=""):
        msg = f"the CPU emulator does not support {what}"
        if advice:
            msg += f": {advice}"
        return self.error(node, msg, UnsupportedFeatureError)

    # -- types
    def add_typedef(self, node: c_ast.Typedef) -> None:
        if node.name in ct.VECTOR_TYPES:
            self.typedefs[node.name] = ct.VECTOR_TYPES[node.name]
        else:
            self.typedefs[node.name] = self.resolve(node.type)

    def const_value(self, node) -> int:
        """Value of a constant integer expression (array sizes). Overridden by Compiler."""
        if isinstance(node, c_ast.Constant):
            return int(parse_int(node.value)[0])
        raise self.error(node, "array size must be a constant expression")

    def resolve(self, node) -> ct.CType:
        if isinstance(node, c_ast.TypeDecl):
            return self.resolve(node.type)
        if isinstance(node, c_ast.IdentifierType):
            t = ct.scalar_from_names(node.names)
            if t is not None:
                return t
            if len(node.names) == 1 and node.names[0] in self.typedefs:
                return self.typedefs[node.names[0]]
            raise self.error(node, f"unknown type '{' '.join(node.names)}'")
        if isinstance(node, c_ast.PtrDecl):
            return ct.Pointer(self.resolve(node.type))
        if isinstance(node, c_ast.ArrayDecl):
            elem = self.resolve(node.type)
            length = None if node.dim is None else self.const_value(node.dim)
            if length is not None and length <= 0:
                raise self.error(node, f"array size must be positive, got {length}")
            return ct.Array(elem, length)
        if isinstance(node, c_ast.Typename):
            return self.resolve(node.type)
        if isinstance(node, c_ast.Struct):
            return self.struct_type(node)
        if isinstance(node, c_ast.Enum):
            return ct.INT
        if isinstance(node, c_ast.FuncDecl):
            raise self.unsupported(node, "function pointers")
        raise self.unsupported(node, f"the type construct {type(node).__name__}")

    def struct_type(self, node: c_ast.Struct) -> ct.CType:
        name = node.name
        if name and name.startswith("__cuda_"):
            return ct.VECTOR_TYPES[name[len("__cuda_"):]]
        if node.decls is None:
            if name in self.structs:
                return self.structs[name]
            raise self.error(node, f"unknown struct '{name}'")
        fields, offset, align = [], 0, 1
        for d in node.decls:
            t = self.resolve(d.type)
            offset = -(-offset // t.align) * t.align
            fields.append((d.name, t, offset))
            offset += t.size
            align = max(align, t.align)
        size = -(-offset // align) * align
        st = ct.Struct(name or "<anonymous struct>", tuple(fields), size, align)
        if name:
            self.structs[name] = st
        return st

    def params(self, funcdef: c_ast.FuncDef) -> list:
        args = funcdef.decl.type.args
        out = []
        if args is None:
            return out
        for p in args.params:
            if isinstance(p, c_ast.EllipsisParam):
                raise self.unsupported(p, "variadic functions")
            t = self.resolve(p.type)
            if t.is_void and p.name is None:
                continue
            out.append(Param(p.name, ct.decay(t), _line(p)))
        return out


_INT_RE = re.compile(r"^(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)([uUlL]*)$")


def parse_int(text: str):
    """Value and C type of an integer literal (C's rules for the type of a literal)."""
    m = _INT_RE.match(text)
    if not m:
        raise ValueError(text)
    digits, suffix = m.group(1), m.group(2).lower()
    if digits.lower().startswith("0x"):
        value, decimal = int(digits, 16), False
    elif digits.lower().startswith("0b"):
        value, decimal = int(digits, 2), False
    elif digits.startswith("0") and len(digits) > 1:
        value, decimal = int(digits, 8), False
    else:
        value, decimal = int(digits), True
    unsigned = "u" in suffix
    longs = suffix.count("l")
    candidates = []
    if longs == 0:
        candidates += [ct.UINT] if unsigned else ([ct.INT] if decimal else [ct.INT, ct.UINT])
    if longs <= 1:
        candidates += [ct.ULONG] if unsigned else ([ct.LONG] if decimal else [ct.LONG, ct.ULONG])
    candidates += [ct.ULLONG] if unsigned else [ct.LLONG, ct.ULLONG]
    for t in candidates:
        info = np.iinfo(t.dtype)
        if info.min <= value <= info.max:
            return value, t
    return value & 0xFFFFFFFFFFFFFFFF, ct.ULLONG


class Compiler(TypeResolver):
    """Compiles a translation unit. Use `compile_program(pre, ast)`."""

    def __init__(self, pre: Preprocessed, ast: c_ast.FileAST):
        super().__init__(pre)
        self.ast = ast
        self.functions: dict = {}        # name -> FuncDef
        self.compiled: dict = {}         # name -> (callable, return type, params)
        self.compiling: set = set()
        self.globals = _Scope()
        self.scope = self.globals
        self.fn: _Function | None = None
        self.shared: list = []
        self.shared_bytes = 0
        self.local_bytes = 0
        self.constants: list = []
        self.kernel_name = None

    # ------------------------------------------------------------------ program
    def compile_program(self) -> Program:
        for node in self.ast.ext:
            if isinstance(node, c_ast.Typedef):
                self.add_typedef(node)
            elif isinstance(node, c_ast.FuncDef):
                self.functions[node.decl.name] = node
            elif isinstance(node, c_ast.Decl):
                self.file_scope_decl(node)
            elif isinstance(node, c_ast.Pragma):
                continue
            else:
                raise self.unsupported(node, f"'{type(node).__name__}' at file scope")
        kernels = {}
        for name, node in self.functions.items():
            if is_kernel(node):
                kernels[name] = self.compile_kernel(node)
        return Program(kernels, self.pre, self.constants)

    def file_scope_decl(self, node: c_ast.Decl) -> None:
        if isinstance(node.type, c_ast.FuncDecl):
            return  # a prototype; the definition comes later
        if isinstance(node.type, c_ast.Struct):
            self.struct_type(node.type)
            return
        if isinstance(node.type, c_ast.Enum):
            self.enum_decl(node.type)
            return
        storage = node.storage or []
        t = self.resolve(node.type)
        if "_Thread_local" in storage:
            raise self.unsupported(node, "__shared__ variables at file scope",
                                   "declare them inside the kernel")
        if "const" in (node.quals or []) and node.init is not None and t.is_scalar:
            value = self.expr(node.init)
            if value.const is None:
                raise self.error(node, f"'{node.name}' needs a constant initializer")
            self.globals.names[node.name] = constant(value.const, t)
            return
        if "register" in storage:
            # __constant__ memory: a read-only global allocation made at launch time.
            init = self.static_initializer(node, t)
            index = len(self.constants)
            self.constants.append((node.name, t, init))
            self.globals.names[node.name] = self.constant_memory_var(index, t, node.name)
            return
        raise self.unsupported(node, f"the global variable '{node.name}'",
                               "use __constant__, a #define, or pass it as a parameter")

    def enum_decl(self, node: c_ast.Enum) -> None:
        value = 0
        for e in node.values.enumerators:
            if e.value is not None:
                value = self.const_value(e.value)
            self.scope.names[e.name] = constant(value, ct.INT)
            value += 1

    def static_initializer(self, node, t):
        if node.init is None:
            return None
        flat = []

        def walk(init, t):
            if isinstance(init, c_ast.InitList):
                elem = t.elem if t.is_array else None
                for item in init.exprs:
                    walk(item, elem if elem is not None else t)
            else:
                x = self.expr(init)
                if x.const is None:
                    raise self.error(init, "__constant__ initializers must be constants")
                flat.append(x.const)
        walk(node.init, t)
        base = t.base_elem if t.is_array else t
        return np.array(flat, dtype=base.dtype)

    def constant_memory_var(self, index, t, name):
        def address(ctx, index=index):
            return ctx.constant_addresses[index]
        if t.is_array:
            return X(address, t)
        return self.memory_lvalue(address, t, None)

    # ------------------------------------------------------------------ functions
    def compile_kernel(self, node: c_ast.FuncDef) -> KernelCode:
        self.shared, self.shared_bytes, self.local_bytes = [], 0, 0
        self.kernel_name = node.decl.name
        self.compiling = {node.decl.name}
        params = self.params(node)
        ftype = self.resolve(node.decl.type.type)
        if not ftype.is_void:
            raise self.error(node, f"a __global__ function must return void, not {ftype}")
        self.fn = _Function(node.decl.name, ct.VOID)
        self.scope = _Scope(self.globals)
        slots = []
        for p in params:
            slot = self.fn.new_slot()
            slots.append(slot)
            self.scope.names[p.name] = X(self.slot_reader(slot), p.ctype, slot=slot)
        body = self.stmt(node.body)
        code = KernelCode(node.decl.name, params, slots, self.fn.nslots, body,
                          list(self.shared), self.static_shared_size(), self.local_bytes,
                          _line(node))
        self.scope = self.globals
        self.fn = None
        return code

    def static_shared_size(self) -> int:
        return self._static_shared()

    def _static_shared(self) -> int:
        end = 0
        for v in self.shared:
            if not v.dynamic:
                end = max(end, v.offset + v.ctype.size)
        return end

    def device_function(self, name, node):
        """Compile (once) the __device__ function `name`; returns (call, return type, params)."""
        if name in self.compiled:
            return self.compiled[name]
        if name in self.compiling:
            raise self.unsupported(node, f"recursion (a call to '{name}' inside itself)")
        fdef = self.functions[name]
        if is_kernel(fdef):
            raise self.unsupported(node, f"calling the __global__ function '{name}' from a kernel "
                                         "(dynamic parallelism)")
        self.compiling.add(name)
        saved = (self.fn, self.scope)
        params = self.params(fdef)
        rtype = self.resolve(fdef.decl.type.type)
        self.fn = _Function(name, rtype)
        self.scope = _Scope(self.globals)
        slots = []
        for p in params:
            slot = self.fn.new_slot()
            slots.append(slot)
            self.scope.names[p.name] = X(self.slot_reader(slot), p.ctype, slot=slot)
        if not rtype.is_void:
            self.fn.ret_slot = self.fn.new_slot()
        body = self.stmt(fdef.body)
        nslots, ret_slot = self.fn.nslots, self.fn.ret_slot
        self.fn, self.scope = saved
        self.compiling.discard(name)
        zero = V.zero_of(rtype) if not rtype.is_void else None

        def call(ctx, args, body=body, nslots=nslots, slots=slots, ret_slot=ret_slot, zero=zero):
            env = [None] * nslots
            for s, a in zip(slots, args):
                env[s] = a
            if ret_slot is not None:
                env[ret_slot] = zero
            saved_env, saved_ret = ctx.env, ctx.ret
            saved_mask = ctx.mask
            ctx.env = env
            ctx.ret = np.zeros(ctx.T, dtype=bool)
            ctx.depth += 1
            if ctx.depth > 64:
                raise RecursionError
            try:
                body(ctx)
            finally:
                ctx.depth -= 1
                ctx.env, ctx.ret = saved_env, saved_ret
                ctx.set_mask(saved_mask)
            return env[ret_slot] if ret_slot is not None else None
        self.compiled[name] = (call, rtype, params)
        return self.compiled[name]

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def slot_reader(slot):
        return lambda ctx: ctx.env[slot]

    def convert(self, x: X, to: ct.CType, node=None):
        """A closure giving `x` converted to C type `to`."""
        frm = ct.decay(x.ctype)
        if to.is_struct or frm.is_struct:
            if to != frm:
                raise self.error(node, f"cannot convert {frm} to {to}")
            return x.fn
        if to.is_pointer and frm.is_arithmetic and not frm.is_integer:
            raise self.error(node, f"cannot convert {frm} to {to}")
        if frm.is_void:
            raise self.error(node, "a void value is not a number")
        conv = V.converter(frm, to)
        if conv is None:
            return x.fn
        if x.const is not None:
            v = conv(x.const)
            return lambda ctx, v=v: v
        f = x.fn
        return lambda ctx: conv(f(ctx))

    def rvalue(self, x: X) -> X:
        """Array-to-pointer decay (the address is already the value)."""
        if x.ctype.is_array:
            return X(x.fn, ct.decay(x.ctype))
        return x

    def memory_lvalue(self, addr, t: ct.CType, node) -> X:
        line = _line(node)
        if t.is_array:
            return X(addr, t)
        if t.is_struct:
            def load(ctx, addr=addr, t=t, line=line):
                return ctx.load_struct(addr(ctx), t, line)
        else:
            def load(ctx, addr=addr, t=t, line=line):
                return ctx.load(addr(ctx), t, line)
        return X(load, t, addr=addr)

    def assigner(self, target: X, node):
        """A function (ctx, value) that stores `value` (already of target's type) into target."""
        line = _line(node)
        if target.builtin is not None or (target.slot is None and target.addr is None):
            raise self.error(node, "this expression cannot be assigned to")
        if target.addr is not None:
            addr, t = target.addr, target.ctype
            if t.is_struct:
                return lambda ctx, v: ctx.store_struct(addr(ctx), t, v, line)
            return lambda ctx, v: ctx.store(addr(ctx), t, v, line)
        slot, member = target.slot, target.member
        if member is None:
            def store(ctx, v, slot=slot):
                if ctx.full:
                    ctx.env[slot] = v
                else:
                    ctx.env[slot] = V.where(ctx.mask, v, ctx.env[slot])
            return store

        def store_member(ctx, v, slot=slot, member=member):
            parts = list(ctx.env[slot])
            parts[member] = v if ctx.full else np.where(ctx.mask, v, parts[member])
            ctx.env[slot] = tuple(parts)
        return store_member

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
        if node.type == "char":
            body = text[1:-1].encode().decode("unicode_escape")
            return constant(ord(body), ct.CHAR)
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
            return x
        if name in BUILTIN_VECTORS:
            return X(None, ct.UINT3, builtin=name)
        if name == "warpSize":
            return constant(32, ct.INT)
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

    def expr_StructRef(self, node) -> X:
        base = self.expr(node.name)
        fname = node.field.name
        if base.builtin is not None:
            if node.type != "." or fname not in "xyz" or len(fname) != 1:
                raise self.error(node, f"{base.builtin} has fields x, y and z")
            i = "xyz".index(fname)
            attr = {"threadIdx": "tid", "blockIdx": "bid", "blockDim": "bdim",
                    "gridDim": "gdim"}[base.builtin]
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
        else:
            addr = lambda ctx: bfn(ctx) + ifn(ctx) * size  # noqa: E731
        return self.memory_lvalue(addr, elem, node)

    def expr_UnaryOp(self, node) -> X:
        op = node.op
        if op == "sizeof":
            if isinstance(node.expr, c_ast.Typename):
                t = self.resolve(node.expr.type)
            else:
                t = self.expr(node.expr).ctype
            return constant(t.size, ct.ULONG)
        if op in ("++", "--", "p++", "p--"):
            return self.increment(node)
        x = self.expr(node.expr)
        if op == "&":
            if x.ctype.is_array:
                return X(x.fn, ct.Pointer(x.ctype))
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
                return constant(-rt.dtype.type(x.const), rt)
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
            delta = t.dtype.type(step)
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
        if op in V.COMPARE:
            cmp = V.COMPARE[op]
            if a.const is not None and b.const is not None:
                return constant(bool(cmp(t.dtype.type(a.const), t.dtype.type(b.const))), ct.BOOL)
            return X(lambda ctx: cmp(fa(ctx), fb(ctx)), ct.BOOL)
        fop = V.arith_op(op, t)
        if fop is None:
            raise self.error(node, f"operator {op} cannot be used on {t} (use fmodf for floats)")
        if a.const is not None and b.const is not None:
            with np.errstate(all="ignore"):
                return constant(fop(t.dtype.type(a.const), t.dtype.type(b.const)), t)
        if t.is_floating and op in "+-*/":
            def flop(ctx):
                ctx.flops += ctx.nactive
                return fop(fa(ctx), fb(ctx))
            return X(flop, t)
        return X(lambda ctx: fop(fa(ctx), fb(ctx)), t)

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
            return a if bool(c.const) else b

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
        target = self.expr(node.lvalue)
        value = self.expr(node.rvalue)
        t = target.ctype
        if t.is_array:
            raise self.error(node, "cannot assign to a whole array; assign its elements")
        op = node.op
        if op == "=":
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
            # a[i] += v: evaluate the address once.
            addr, line = target.addr, _line(node)
            cell = {}
            tmp = X(lambda ctx: cell["v"], t)
            saved = self.scope.lookup
            combined = self.binary_on(fake, binop, tmp, value)
            fc = self.convert(combined, t, node)
            is_struct = t.is_struct

            def update(ctx):
                a = addr(ctx)
                cell["v"] = ctx.load(a, t, line) if not is_struct else ctx.load_struct(a, t, line)
                v = fc(ctx)
                ctx.store(a, t, v, line)
                return v
            del saved
            return X(update, t)
        combined = self.binary_on(fake, binop, target, value)
        fc = self.convert(combined, t, node)
        store = self.assigner(target, node)

        def update_var(ctx):
            v = fc(ctx)
            store(ctx, v)
            return v
        return X(update_var, t)

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
        if name in self.functions:
            call, rtype, params = self.device_function(name, node)
            if len(args) != len(params):
                raise self.error(node, f"'{name}' takes {len(params)} arguments, "
                                       f"{len(args)} given")
            fargs = [self.convert(self.rvalue(self.expr(a)), p.ctype, a)
                     for a, p in zip(args, params)]
            return X(lambda ctx: call(ctx, [f(ctx) for f in fargs]), rtype)
        return compile_builtin_call(self, node, name, args)

    def expr_InitList(self, node):
        raise self.error(node, "a brace initializer can only initialise a declared variable")

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
        if "_Thread_local" in storage:
            return self.shared_decl(node, t, dynamic="extern" in storage)
        if "static" in storage:
            raise self.unsupported(node, "static local variables")
        if "register" in storage:
            raise self.unsupported(node, "__constant__ variables inside a function",
                                   "declare them at file scope")
        if t.is_array:
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
            return declare
        if isinstance(node.init, c_ast.InitList):
            if not t.is_struct:
                raise self.error(node, "a brace initializer needs an array or struct")
            parts = [self.convert(self.expr(e), f[1], e)
                     for e, f in zip(node.init.exprs, t.fields)]
            parts += [lambda ctx, z=f[1].dtype.type(0): z for f in t.fields[len(parts):]]
            store = self.assigner(x, node)
            return lambda ctx: store(ctx, tuple(p(ctx) for p in parts))
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
            align = max(t.align, 1)
            offset = -(-self._static_shared() // align) * align
            var = SharedVar(node.name, t, offset, False, _line(node))
            self.shared.append(var)
        address = np.int64(make_address(SHARED_REGION, var.offset))
        if t.is_array:
            self.scope.names[node.name] = X(lambda ctx, a=address: a, t)
        else:
            self.scope.names[node.name] = self.memory_lvalue(lambda ctx, a=address: a, t, node)
        return lambda ctx: None

    def local_array_decl(self, node, t):
        if t.length is None:
            raise self.error(node, f"the local array '{node.name}' needs a size")
        align = max(t.align, 4)
        offset = -(-self.local_bytes // align) * align
        self.local_bytes = offset + t.size
        address = np.int64(make_address(LOCAL_REGION, offset))
        x = X(lambda ctx, a=address: a, t)
        self.scope.names[node.name] = x
        if node.init is None:
            return lambda ctx: None
        if not isinstance(node.init, c_ast.InitList):
            raise self.error(node, "initialise an array with { ... }")
        stores = []
        base = t.base_elem
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
        line = _line(node)
        for i in range(total):
            fv = (self.convert(self.expr(flat[i]), base, node) if i < len(flat)
                  else (lambda ctx, z=base.dtype.type(0): z))
            a = np.int64(address + i * base.size)
            stores.append((a, fv))

        def init_array(ctx):
            for a, fv in stores:
                ctx.store(a, base, fv(ctx), line)
        return init_array

    def stmt_If(self, node):
        c = self.expr(node.cond)
        fc = self.convert(c, ct.BOOL, node)
        then = self.stmt(node.iftrue) if node.iftrue is not None else None
        other = self.stmt(node.iffalse) if node.iffalse is not None else None
        jumps = _has_jump(node)

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
                then(ctx)
            if other is not None:
                ctx.set_mask(saved & ~cond)
                if ctx.any:
                    other(ctx)
            if jumps:
                ctx.set_mask(saved & ~ctx.jumped())
            else:
                ctx.restore(saved, saved_state)
        return if_

    def loop(self, node, init, cond, step, body, test_first=True):
        fcond = self.convert(self.expr(cond), ct.BOOL, node) if cond is not None else None
        fstep = self.expr(step).fn if step is not None else None
        line = _line(node)

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
            try:
                while True:
                    ctx.step(line)
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
                    if ctx.brk.any() or ctx.ret.any() or ctx.cont.any():
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
            if ctx.ret.any():
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


def compile_program(pre: Preprocessed, ast: c_ast.FileAST) -> Program:
    """Stage 3 entry point: compile every kernel of a translation unit."""
    return Compiler(pre, ast).compile_program()
