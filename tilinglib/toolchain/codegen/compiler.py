"""Stage 3: pycparser AST -> Python closures, compiled once per kernel.

Input: the `FileAST` of stage 2. Output: a `Program` holding, for each `__global__` function,
a `KernelCode` (its parameters, shared-memory layout, local-memory size and a body closure
`run(ctx)`). Everything static is decided here, once: each expression's C type, the usual
arithmetic conversions, where each variable lives (an environment slot, shared memory or
local memory), constant folding. At run time a closure only does NumPy work on lane vectors.

The compiler is a visitor: `expr_<Node>` (expressions.py) returns an `X` (a compiled
expression, closures.py), and `stmt_<Node>` (statements.py) a statement closure; this module
holds the program, functions, types and the helpers both use. A construct it does not support raises
`UnsupportedFeatureError` naming the construct and the student's line.

Control flow follows the SIMT model: `ctx.mask` holds the active lanes; `if` narrows it,
loops run while any lane is active, and `break`, `continue` and `return` clear lanes (kept in
`ctx.brk`, `ctx.cont`, `ctx.ret` until the enclosing loop or function restores them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pycparser import c_ast

from ..frontend import analyses
from ...errors import CompileError, UnsupportedFeatureError
from ..model import c_types as ct
from ..model import values as V
from ..frontend.program import Param, is_kernel, parse, source_line
from ..frontend.preprocess import SOURCE_NAME, Preprocessed, preprocess
from ..frontend.lower import CONSTANT_MARK, DEVICE_MARK, SHARED_MARK
from .closures import X, _col, _line, _Scope, constant, parse_int
from .expressions import ExpressionsMixin
from .statements import StatementsMixin, barrier_functions, exit_ifs
from ...gpu import round_up


def _first_call(node):
    """The first function call inside expression `node` (pycparser), or None."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, c_ast.FuncCall):
            return n
        stack.extend(child for _, child in n.children())
    return None


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
    # Launch-time checks (execute.py): shared (or local) array -> the threadIdx component that fills
    # each index position (thread_indexed_stores), each array's declaration as the student
    # wrote it ("As[TILE][TILE + PAD]"), the local arrays, and whether any of them is
    # declared without a value (then local memory is checked for reads before writes).
    thread_indexed: dict = field(default_factory=dict)
    shared_text: dict = field(default_factory=dict)
    local_vars: list = field(default_factory=list)
    check_local: bool = False


@dataclass
class Program:
    kernels: dict
    pre: Preprocessed
    constants: list = field(default_factory=list)
    # kernels of the source that cannot run here -> the CompileError that says why (a
    # construct the emulator lacks in them or in a function they call); raised by
    # get_function, so that a whole file's other kernels still run
    kernel_errors: dict = field(default_factory=dict)



class _Function:
    """Per-function compile state: environment slots and local-memory layout."""

    def __init__(self, name, return_type):
        self.name = name
        self.return_type = return_type
        self.nslots = 0
        self.ret_slot = None
        # Reads before writes (analyses.unset_reads): the declarations and reads that
        # definite assignment cannot clear, and slot -> (shadow slot, name, type, line) of
        # the variables checked at run time.
        self.unset_decls: set = set()
        self.unset_reads: set = set()
        self.shadows: dict = {}
        self.prologue: list = []          # closures run on entry (_with_prologue)
        self.address_taken: set = set()   # locals whose address is taken (in local memory)

    def new_slot(self) -> int:
        self.nslots += 1
        return self.nslots - 1


class TypeResolver:
    """Turns pycparser type nodes into `c_types` types (typedefs included)."""

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
            a = max(t.align, self.alignas(d))
            offset = round_up(offset, a)
            fields.append((d.name, t, offset))
            offset += t.size
            align = max(align, a)
        size = round_up(offset, align)
        st = ct.Struct(name or "<anonymous struct>", tuple(fields), size, align)
        if name:
            self.structs[name] = st
        return st

    def alignas(self, decl) -> int:
        """The alignment `alignas(n)` asks of declaration `decl` (1 without one)."""
        out = 1
        for a in getattr(decl, "align", None) or []:
            value = self.const_value(a.alignment)
            if value <= 0 or value & (value - 1):
                raise self.error(decl, f"alignas({value}): an alignment is a power of 2")
            out = max(out, value)
        return out

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


def kernel_signatures(source: str, options=None) -> dict:
    """The `__global__` functions of `source`, as {name: [Param, ...]} in declaration order
    (a template's instantiations by their text, ``'k<128, float>'``).

    Types are resolved with the emulator's C type rules (`TypeResolver`, typedefs included),
    so a caller can check Python arguments against them. Raises `CompileError` if the source
    does not compile."""
    pre = preprocess(source, options)
    ast = parse(pre)
    resolver = TypeResolver(pre)
    out = {}
    for node in ast.ext:
        if isinstance(node, c_ast.Typedef):
            resolver.add_typedef(node)
        elif isinstance(node, c_ast.Decl) and isinstance(node.type, c_ast.Struct):
            resolver.struct_type(node.type)
        elif isinstance(node, c_ast.FuncDef) and is_kernel(node):
            out[node.decl.name] = resolver.params(node)
    return out



class Compiler(ExpressionsMixin, StatementsMixin, TypeResolver):
    """Compiles a translation unit. Use `compile_program(pre, ast)`."""

    def __init__(self, pre: Preprocessed, ast: c_ast.FileAST):
        super().__init__(pre)
        self.ast = ast
        self.functions: dict = {}        # name -> FuncDef
        self.barrier_fns: frozenset = frozenset()   # functions that call a block barrier
        self.exit_ifs: frozenset = frozenset()      # the kernel's ifs it leaves after
        self.compiled: dict = {}         # name -> (callable, return type, params)
        self.compiling: set = set()
        self.globals = _Scope()
        self.scope = self.globals
        self.fn: _Function | None = None
        self.shared: list = []
        self.shared_bytes = 0
        self.local_bytes = 0
        self.constants: list = []
        self.file_shared: list = []      # (Decl, type, is extern) of file-scope __shared__
        self.kernel_name = None
        self.local_vars: list = []       # LocalVar of this kernel's local arrays
        self.check_local = False         # a local array declared without a value

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
        kernels, errors = {}, {}
        failed = getattr(self.ast, "failed", {})
        self.barrier_fns = barrier_functions(self.functions)
        for name, exc in failed.items():
            if name in getattr(self.ast, "kernel_names", {}):
                errors[name] = exc
        for name, node in self.functions.items():
            if is_kernel(node):
                try:
                    kernels[name] = self.compile_kernel(node)
                except UnsupportedFeatureError as exc:
                    errors[name] = exc        # a construct the emulator lacks
        if errors and not kernels:
            # no kernel runs: the source is refused at the first such construct met
            raise next(iter(failed.values())) if failed else next(iter(errors.values()))
        return Program(kernels, self.pre, self.constants, errors)

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
        if SHARED_MARK in storage:
            # Laid out again in every kernel (compile_kernel): each block has its own copy.
            self.file_shared.append((node, t, "extern" in storage))
            return
        if "const" in (node.quals or []) and node.init is not None and t.is_scalar:
            call = _first_call(node.init)
            try:
                value = self.expr(node.init)
            except CompileError:
                if call is None:
                    raise
                value = None
            if call is not None and (value is None or value.const is None):
                # nvcc evaluates a constexpr function at compile time here; the emulator
                # folds arithmetic only
                raise self.unsupported(
                    call, f"a function call in the value of the constant '{node.name}' "
                          f"(a constexpr function evaluated at compile time)",
                    "write the value as arithmetic (a ternary for max/min) or a #define")
            if value.const is None:
                raise self.error(node, f"'{node.name}' needs a constant initializer")
            self.globals.names[node.name] = constant(value.const, t)
            return
        if CONSTANT_MARK in storage:
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
            # int, or (an enumerator of a wider enumeration, which the front end casts to
            # its type) the 64-bit type that holds it
            t = ct.INT if -2**31 <= value < 2**31 else ct.LLONG if value < 2**63 else ct.ULLONG
            self.scope.names[e.name] = constant(value, t)
            value += 1

    def static_initializer(self, node, t):
        """The bytes (a uint8 array of sizeof(t)) a `__constant__` variable starts with:
        its brace list laid out as nvcc lays out `t` (structs with array members, arrays
        of float4, ...), zeros where the list stops; None without an initializer."""
        if node.init is None:
            return None
        buf = bytearray(t.size)

        def walk(item, at, off):
            if item is None:
                return
            if isinstance(item, c_ast.InitList):
                members = ct.brace_members(at)
                if len(item.exprs) > len(members):
                    raise self.error(item, f"too many initializers for {at} "
                                           f"({len(item.exprs)} > {len(members)})")
                for sub, (mt, moff) in zip(item.exprs, members):
                    walk(sub, mt, off + moff)
                return
            if not (at.is_scalar or at.is_pointer):
                raise self.error(item, "__constant__ initializers must be constants "
                                       "in braces")
            x = self.expr(item)
            if x.const is None:
                raise self.error(item, "__constant__ initializers must be constants")
            conv = V.converter(ct.decay(x.ctype), at)
            value = conv(x.const) if conv else x.const
            buf[off:off + at.size] = np.asarray(value).astype(at.dtype).tobytes()
        walk(node.init, t, 0)
        return np.frombuffer(bytes(buf), dtype=np.uint8)

    def constant_memory_var(self, index, t, name):
        def address(ctx, index=index):
            return ctx.constant_addresses[index]
        if t.is_array:
            return X(address, t)
        return self.memory_lvalue(address, t, None)

    # ------------------------------------------------------------------ functions
    def compile_kernel(self, node: c_ast.FuncDef) -> KernelCode:
        self.shared, self.shared_bytes, self.local_bytes = [], 0, 0
        self.local_vars, self.check_local = [], False
        # __device__ functions are compiled again for each kernel: their local arrays and
        # structs are laid out in this kernel's local memory (compiled for a kernel before,
        # `float a[2]` in one sat over the next kernel's own local arrays)
        self.compiled = {}
        self.kernel_name = node.decl.name
        self.compiling = {node.decl.name}
        params = self.params(node)
        ftype = self.resolve(node.decl.type.type)
        if not ftype.is_void:
            raise self.error(node, f"a __global__ function must return void, not {ftype}")
        # File-scope __shared__ declarations, in a scope of this kernel's own.
        self.scope = _Scope(self.globals)
        for decl, t, dynamic in self.file_shared:
            self.shared_decl(decl, t, dynamic)
        slots = self._enter_function(node.decl.name, ct.VOID, params, parent=self.scope,
                                     taken=address_taken(node.body))
        self._find_unset_reads(node)
        self.exit_ifs = exit_ifs(node.body, self.barrier_fns)
        body = self._with_prologue(self.stmt(node.body))
        ranks = {v.name: len(v.ctype.shape) for v in self.shared
                 if not v.dynamic and v.ctype.is_array}
        # Local arrays too: one filled at threadIdx-built indices was meant to be shared.
        ranks.update({v.name: len(v.ctype.shape) for v in self.local_vars
                      if v.ctype.is_array and v.name not in ranks})
        code = KernelCode(node.decl.name, params, slots, self.fn.nslots, body,
                          list(self.shared), self.static_shared_size(), self.local_bytes,
                          _line(node),
                          thread_indexed=analyses.thread_indexed_stores(node, ranks),
                          shared_text={v.name: self.declared_text(v.name, v.line, v.ctype)
                                       for v in self.shared},
                          local_vars=list(self.local_vars), check_local=self.check_local)
        self.scope = self.globals
        self.fn = None
        return code

    def _enter_function(self, name, rtype, params, parent=None, taken=frozenset()) -> list:
        """Start compiling a function body: a fresh frame and scope (inside `parent`, by
        default the file scope), one slot per parameter. `taken`: the names whose address
        the body takes (`address_taken`). Returns the parameters' slots."""
        self.fn = _Function(name, rtype)
        self.fn.address_taken = set(taken)
        self.scope = _Scope(parent if parent is not None else self.globals)
        slots = []
        for p in params:
            slot = self.fn.new_slot()
            slots.append(slot)
            if (p.ctype.is_struct and p.ctype.holds_aggregates) or p.name in taken:
                # A struct with array or struct fields (`Params p`, `Frag f`) lives in local
                # memory: the function starts by storing the value it was passed there.
                address = self.local_address(p.ctype)
                x = self.memory_lvalue(lambda ctx, a=address: a, p.ctype, None)
                store = self.assigner(x, None)
                self.fn.prologue.append(lambda ctx, slot=slot, store=store:
                                        store(ctx, ctx.env[slot]))
                self.scope.names[p.name] = x
                continue
            self.scope.names[p.name] = X(self.slot_reader(slot), p.ctype, slot=slot)
        return slots

    def _with_prologue(self, body):
        """`body` after the function's prologue (storing struct parameters in local memory)."""
        prologue = list(self.fn.prologue)
        if not prologue:
            return body

        def run(ctx):
            for s in prologue:
                s(ctx)
            body(ctx)
        return run

    def static_shared_size(self) -> int:
        """Bytes of static __shared__ memory laid out so far (the end of the last array)."""
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
        if DEVICE_MARK not in (fdef.decl.funcspec or []):
            raise self.error(node, f"'{name}' is a host function: a kernel can only call "
                                   f"functions marked __device__ (nvcc: calling a __host__ "
                                   f"function from a __global__ function is not allowed). "
                                   f"Write '__device__' before its return type.")
        self.compiling.add(name)
        saved = (self.fn, self.scope)
        params = self.params(fdef)
        rtype = self.resolve(fdef.decl.type.type)
        slots = self._enter_function(name, rtype, params, taken=address_taken(fdef.body))
        self._find_unset_reads(fdef)
        if not rtype.is_void:
            self.fn.ret_slot = self.fn.new_slot()
        body = self._with_prologue(self.stmt(fdef.body))
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

    def _find_unset_reads(self, funcdef) -> None:
        """Mark, for the function being compiled, the locals that definite assignment cannot
        prove set before a read; only those get a run-time check (statements.stmt_Decl,
        expressions.expr_ID, assigner)."""
        for r in analyses.unset_reads(funcdef):
            self.fn.unset_decls.add(id(r.decl))
            self.fn.unset_reads.add(id(r.node))

    def declared_text(self, name, line, t) -> str:
        """`As[TILE][TILE + PAD]` as the declaration at `line` spells it (macros and all),
        else the sizes as numbers (`As[32][33]`)."""
        import re
        text = self.pre.source_lines[line - 1] if line and 0 < line <= len(
            self.pre.source_lines) else ""
        m = re.search(r"\b" + re.escape(name) + r"\s*((?:\[[^\[\]]*\]\s*)+)", text)
        if m:
            return name + re.sub(r"\s+(?=\[)", "", m.group(1).strip())
        dims = t.shape if t.is_array else ()
        return name + "".join(f"[{d if d is not None else ''}]" for d in dims)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def slot_reader(slot):
        return lambda ctx: ctx.env[slot]

    def convert(self, x: X, to: ct.CType, node=None):
        """A closure giving `x` converted to C type `to`."""
        frm = ct.decay(x.ctype)
        if to.is_struct or frm.is_struct:
            same_layout = to.is_struct and frm.is_struct and \
                [f[1:] for f in to.fields] == [f[1:] for f in frm.fields]
            if to != frm and not same_layout:     # uint3 -> dim3 is allowed
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

    def memory_lvalue(self, addr, t: ct.CType, node, parts=None) -> X:
        """An lvalue in memory at `addr(ctx)`; `parts` (see `X.parts`) enables the fast load
        of a scalar element through a uniform base pointer."""
        line = _line(node)
        if t.is_array:
            return X(addr, t, parts=parts)
        if parts is not None and t.is_scalar:
            return X(self._indexed_load(parts, t, line), t, addr=addr, parts=parts)
        if t.is_struct:
            def load(ctx, addr=addr, t=t, line=line):
                return ctx.load_struct(addr(ctx), t, line)
        else:
            def load(ctx, addr=addr, t=t, line=line):
                return ctx.load(addr(ctx), t, line)
        return X(load, t, addr=addr)

    @staticmethod
    def _indexed_load(parts, t, line):
        """Load closure for `base[index]`: Context.load_fast when the base is one pointer
        for all threads and every thread is active, else the general Context.load (with the
        base and index already evaluated, so side effects in them happen once)."""
        bfn, ifn, unit = parts
        unit64 = np.int64(unit)
        site = object()          # this load's key in the per-batch cache of sector counts

        def load(ctx):
            base, i = bfn(ctx), ifn(ctx)
            if ctx.full and type(i) is np.ndarray and type(base) is np.int64:
                v = ctx.load_fast(base, i, t, line, site)
                if v is not None:
                    return v
            return ctx.load(base + np.multiply(i, unit64), t, line)
        return load

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
        shadow = self.fn.shadows.get(slot, (None,))[0] if self.fn is not None else None
        if member is None:
            def store(ctx, v, slot=slot):
                if ctx.full:
                    ctx.env[slot] = v
                else:
                    ctx.env[slot] = V.where(ctx.mask, v, ctx.env[slot])
            if shadow is None:
                return store

            def store_checked(ctx, v, shadow=shadow):
                store(ctx, v)
                ctx.env[shadow] = V.mark_set(ctx.env[shadow], ctx)
            return store_checked

        def store_member(ctx, v, slot=slot, member=member):
            parts = list(ctx.env[slot])
            parts[member] = v if ctx.full else np.where(ctx.mask, v, parts[member])
            ctx.env[slot] = tuple(parts)
        if shadow is None:
            return store_member

        def store_member_checked(ctx, v, shadow=shadow):
            # A field of a struct counts as setting it (float2 v; v.x = ...; v.y = ...).
            store_member(ctx, v)
            ctx.env[shadow] = V.mark_set(ctx.env[shadow], ctx)
        return store_member_checked


def address_taken(body) -> set:
    """Names of the variables whose address `body` takes (`&q`, `&q.x`, `&s.v[i]`, and the
    front end's `&x` for `x` bound to a reference): they are placed in local memory, where
    they have one. By name, so a shadowing variable of the same name goes there too
    (slower, never wrong)."""
    names = set()
    stack = [body]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        if isinstance(n, c_ast.UnaryOp) and n.op == "&":
            target = n.expr
            while isinstance(target, (c_ast.StructRef, c_ast.ArrayRef)) and not (
                    isinstance(target, c_ast.StructRef) and target.type == "->"):
                target = target.name
            if isinstance(target, c_ast.ID):
                names.add(target.name)
        stack.extend(child for _, child in n.children())
    return names


def compile_program(pre: Preprocessed, ast: c_ast.FileAST) -> Program:
    """Stage 3 entry point: compile every kernel of a translation unit."""
    return Compiler(pre, ast).compile_program()
