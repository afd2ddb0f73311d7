"""Static checks on a kernel's source, for the grader (`tilinglib.grading`).

Two mistakes cannot be caught by running a kernel on sizes a CPU can afford, so the grader
reads the source for them instead:

- `int_overflow_risks`: a product of two 32-bit integers that are not compile-time constants
  (``row * K``) whose value ends up in a global-memory address. It wraps around once the
  matrix has more than 2**31 elements (an 8 GiB float matrix: a real size on a 141 GB GPU,
  far beyond what the emulator can hold). Computing the product in 64 bits
  (``(size_t)row * K``) is the fix. Products of built-in indices and sizes only
  (``blockIdx.y * blockDim.y``) are bounded by the launch and are not reported. The
  ``__device__`` functions the kernel calls are read too (a product in a helper whose int
  result is an index), and so is a 64-bit product cast back to 32 bits
  (``(int)((size_t)row * K)``).
- `uninitialized_locals`: a local scalar declared without a value that some path may read
  before assigning it (``float sum; ... sum += ...``). On a GPU it holds whatever the
  register held; the emulator starts it at 0, so the answer would look right there.

Input: CUDA C source and nvcc-style options. Output: lists of `Finding(line, text)`.
Both walk pycparser's AST (stage 2 of the emulator).

The emulator's compiler uses the two AST analyses underneath as well, for its run-time
warnings (docs/emulator.md, "Diagnostics"): `unset_reads` (definite assignment: which reads
of which locals may see them unset; only those are checked per thread at run time) and
`thread_indexed_stores` (which index positions of each `__shared__` array every store fills
with one threadIdx component; compared with the launch's block).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pycparser import c_ast

from .frontend.parse import is_kernel, parse
from .frontend.preprocess import preprocess

__all__ = ["Finding", "UnsetRead", "int_overflow_risks", "thread_component",
           "thread_indexed_stores", "uninitialized_locals", "unset_reads"]

_WIDE = {"long", "size_t", "ptrdiff_t", "int64_t", "uint64_t", "intptr_t", "uintptr_t",
         "double", "float"}  # float/double: not an int product at all
_FLOATING = {"float", "double", "half"}
_BUILTINS = {"threadIdx", "blockIdx", "blockDim", "gridDim"}
_THIS = re.compile(r"\bthis\.")       # a method's member, as the student wrote it: ld


@dataclass(frozen=True)
class Finding:
    """One thing the static checks found: the student's source `line` and what it is."""

    line: int | None
    text: str


def _line(node) -> int | None:
    coord = getattr(node, "coord", None)
    return getattr(coord, "line", None)


def _type_names(type_node) -> tuple[list[str], bool, bool]:
    """(names of the base type, is_pointer, is_array) of a declaration's type."""
    pointer = array = False
    t = type_node
    while not isinstance(t, (c_ast.TypeDecl, c_ast.IdentifierType)):
        if isinstance(t, c_ast.PtrDecl):
            pointer = True
        elif isinstance(t, c_ast.ArrayDecl):
            array = True
        t = getattr(t, "type", None)
        if t is None:
            return [], pointer, array
    if isinstance(t, c_ast.TypeDecl):
        t = t.type
    names = list(getattr(t, "names", []) or [])
    return names, pointer, array


def _kind(names: list[str]) -> str:
    """'float', 'wide' (64-bit integer) or 'int' (32 bits or less) for a base type."""
    if any(n in _FLOATING for n in names):
        return "float"
    if names.count("long") >= 1 or any(n in _WIDE for n in names):
        return "wide"
    return "int"


def _struct_of(type_node) -> str | None:
    """The struct name of a declaration's type when it is a struct value (not a pointer to
    one, not an array of them), else None."""
    t = type_node
    if isinstance(t, c_ast.TypeDecl) and isinstance(t.type, c_ast.Struct):
        return t.type.name
    return None


def _declared_kind(decl) -> tuple[str, bool, bool]:
    """(kind, is_pointer, is_array) of a declaration: 'pointer', 'array', 'struct:NAME' or
    a `_kind`."""
    names, pointer, array = _type_names(decl.type)
    if pointer:
        return "pointer", True, False
    if array:
        return "array", False, True
    struct = _struct_of(decl.type)
    if struct is not None:
        return f"struct:{struct}", False, False
    return _kind(names), False, False


def _is_constant_decl(decl, constants: set) -> bool:
    """A const (or constexpr: the front end writes both as const) integer scalar whose
    initialiser is a compile-time constant: ``constexpr int TILE = 16;``."""
    if not isinstance(decl, c_ast.Decl) or not decl.name or decl.init is None:
        return False
    t = decl.type
    if not isinstance(t, c_ast.TypeDecl) or "const" not in (t.quals or []) + (decl.quals or []):
        return False
    kind = _declared_kind(decl)[0]
    return kind in ("int", "wide") and _is_constant(decl.init, constants)


def _program_facts(ast) -> tuple[dict, set]:
    """({struct name: {field: kind}}, names of the file's integer constants): fields of each
    struct, for ``this.p[...]`` in a method; constants (``constexpr int TILE = 16;``, ``static
    const int TILE = 16;``, ``enum { TILE = 16 };``, a ``static constexpr`` member), which are
    no more a 32-bit product's risk than a ``#define``."""
    structs: dict = {}
    constants: set = set()
    for n in _walk(ast):
        if isinstance(n, c_ast.Struct) and n.name and n.decls:
            fields = structs.setdefault(n.name, {})
            for d in n.decls:
                if isinstance(d, c_ast.Decl) and d.name:
                    fields[d.name] = _declared_kind(d)[0]
        elif isinstance(n, c_ast.Enumerator):
            constants.add(n.name)
    for n in getattr(ast, "ext", []):
        if _is_constant_decl(n, constants):
            constants.add(n.name)
    return structs, constants


class _Kernel:
    """Symbol table and helpers for one kernel (or device function) definition. `structs`
    and `constants` come from `_program_facts`."""

    def __init__(self, func: c_ast.FuncDef, structs: dict | None = None,
                 constants: set | None = None):
        self.func = func
        self.structs = structs or {}
        self.constants = set(constants or ())
        self.kinds: dict[str, str] = {}
        self.pointers: set[str] = set()
        self.arrays: set[str] = set()
        params = func.decl.type.args.params if func.decl.type.args else []
        for p in params:
            if isinstance(p, c_ast.Decl) and p.name:
                self._declare(p)
        for node in _walk(func.body):
            if isinstance(node, c_ast.Decl) and node.name:
                self._declare(node)
                if _is_constant_decl(node, self.constants):
                    self.constants.add(node.name)

    def _declare(self, decl) -> None:
        kind, pointer, array = _declared_kind(decl)
        self.kinds[decl.name] = kind
        if pointer:
            self.pointers.add(decl.name)
        elif array:
            self.arrays.add(decl.name)

    def field_kind(self, e) -> str | None:
        """The kind of the struct field `e` (a StructRef ``s.f``), if `s` is a struct whose
        fields are known."""
        if not isinstance(e, c_ast.StructRef):
            return None
        base = self.kind(e.name)
        if base.startswith("struct:"):
            return self.structs.get(base[len("struct:"):], {}).get(e.field.name)
        return None

    # -------------------------------------------------------------- expression types
    def kind(self, e) -> str:
        if isinstance(e, c_ast.Constant):
            if e.type in ("float", "double"):
                return "float"
            return "wide" if "l" in e.value.lower() else "int"
        if isinstance(e, c_ast.ID):
            return self.kinds.get(e.name, "int")
        if isinstance(e, c_ast.StructRef):
            field = self.field_kind(e)
            if field is not None:
                return field
        if isinstance(e, c_ast.Cast):
            names, pointer, _ = _type_names(e.to_type.type)
            return "pointer" if pointer else _kind(names)
        if isinstance(e, c_ast.BinaryOp):
            if e.op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||"):
                return "int"
            a, b = self.kind(e.left), self.kind(e.right)
            for k in ("pointer", "float", "wide"):
                if k in (a, b):
                    return k
            return "int"
        if isinstance(e, c_ast.TernaryOp):
            a, b = self.kind(e.iftrue), self.kind(e.iffalse)
            for k in ("pointer", "float", "wide"):
                if k in (a, b):
                    return k
            return "int"
        if isinstance(e, c_ast.UnaryOp):
            if e.op == "sizeof":
                return "wide"
            if e.op == "&":
                return "pointer"
            return self.kind(e.expr)
        if isinstance(e, c_ast.ArrayRef):
            base = e.name
            while isinstance(base, c_ast.ArrayRef):
                base = base.name
            return "float" if isinstance(base, c_ast.ID) else "int"
        return "int"

    def is_constant(self, e) -> bool:
        """Built only of literals, operators, casts and the program's integer constants."""
        return _is_constant(e, self.constants)

    def is_pointer(self, e) -> bool:
        return self.kind(e) == "pointer" or (isinstance(e, c_ast.ID) and e.name in self.arrays)

    def is_global_pointer(self, e) -> bool:
        return self.kind(e) == "pointer"


def _walk(node):
    """Every node under `node` (itself included), in source order."""
    if node is None:
        return
    yield node
    for _, child in node.children():
        yield from _walk(child)


def _is_constant(e, constants=frozenset()) -> bool:
    """Built only of literals, operators, casts and the names in `constants`."""
    return all(isinstance(n, (c_ast.Constant, c_ast.BinaryOp, c_ast.UnaryOp, c_ast.Cast,
                              c_ast.Typename, c_ast.TypeDecl, c_ast.IdentifierType))
               or (isinstance(n, c_ast.ID) and n.name in constants)
               for n in _walk(e))


def _is_small(e) -> bool:
    """Built only from constants and threadIdx/blockIdx/blockDim/gridDim: bounded by the
    launch, so a product of two of these cannot overflow for a grid that launches."""
    if isinstance(e, c_ast.StructRef):
        return isinstance(e.name, c_ast.ID) and e.name.name in _BUILTINS
    if isinstance(e, c_ast.ID):
        return e.name in _BUILTINS
    if isinstance(e, (c_ast.FuncCall, c_ast.ArrayRef, c_ast.Assignment)):
        return False
    return all(_is_small(child) for _, child in e.children())


def _ids(e) -> set[str]:
    if isinstance(e, c_ast.StructRef):
        return _ids(e.name)
    if isinstance(e, c_ast.ID):
        return {e.name}
    return set().union(*(_ids(c) for _, c in e.children())) if e.children() else set()


def _kernels(source: str, options, kernel: str | None = None) -> list[c_ast.FuncDef]:
    """The kernels of `source`; only `kernel` if given, found as get_function finds it
    (`_kernel_named`)."""
    ast = parse(preprocess(source, options))
    want = _kernel_named(ast, kernel)
    return [n for n in ast.ext if isinstance(n, c_ast.FuncDef) and is_kernel(n)
            and (kernel is None or n.decl.name == want)]


def _kernel_named(ast, kernel: str | None) -> str | None:
    """The name in `ast` of the kernel get_function(`kernel`) runs: 'sgemm' is 'ns::sgemm'
    when the kernel is in a namespace, 'k<16U>' is 'k<16>'. Matching the name as written
    instead let a kernel inside a namespace run for its points and skip every source check."""
    if kernel is None:
        return None
    found = ast.kernel_name(kernel) if hasattr(ast, "kernel_name") else None
    return found if found is not None else kernel


def _risky_products(k: _Kernel, e) -> list:
    out = []
    for n in _walk(e):
        if (isinstance(n, c_ast.BinaryOp) and n.op == "*" and k.kind(n) == "int"
                and not k.is_constant(n.left) and not k.is_constant(n.right)
                and not (_is_small(n.left) and _is_small(n.right))):
            out.append(n)
    return out


def _address_expressions(k: _Kernel):
    """Expressions whose value becomes (part of) a global-memory address."""
    for n in _walk(k.func.body):
        if isinstance(n, c_ast.ArrayRef) and ((isinstance(n.name, c_ast.ID)
                                               and n.name.name in k.pointers)
                                              or k.field_kind(n.name) == "pointer"):
            yield n.subscript
        elif isinstance(n, c_ast.BinaryOp) and n.op in ("+", "-"):
            if k.is_global_pointer(n.left):
                yield n.right
            elif k.is_global_pointer(n.right):
                yield n.left
        elif isinstance(n, c_ast.Assignment) and n.op in ("+=", "-=") \
                and isinstance(n.lvalue, c_ast.ID) and n.lvalue.name in k.pointers:
            yield n.rvalue


def _assignments(k: _Kernel) -> dict[str, list]:
    """name -> the expressions assigned to it (initialisers and `=`, `+=`, ... right sides)."""
    out: dict[str, list] = {}
    for n in _walk(k.func.body):
        if isinstance(n, c_ast.Decl) and n.name and n.init is not None:
            out.setdefault(n.name, []).append(n.init)
        elif isinstance(n, c_ast.Assignment) and isinstance(n.lvalue, c_ast.ID):
            out.setdefault(n.lvalue.name, []).append(n.rvalue)
        elif isinstance(n, c_ast.Assignment) and isinstance(n.lvalue, c_ast.StructRef):
            # a field, under its struct's name (a read of s.f is a read of s, see _ids): a
            # constructor's 'v(r * cols + c)' is 'this.v = r * cols + c', then 'return this'
            base = n.lvalue
            while isinstance(base, c_ast.StructRef):
                base = base.name
            if isinstance(base, c_ast.ID):
                out.setdefault(base.name, []).append(n.rvalue)
    return out


def _wide_products(k: _Kernel, e) -> list:
    """Products computed in 64 bits of two values that are not compile-time constants."""
    return [n for n in _walk(e)
            if isinstance(n, c_ast.BinaryOp) and n.op == "*" and k.kind(n) == "wide"
            and not k.is_constant(n.left) and not k.is_constant(n.right)
            and not (_is_small(n.left) and _is_small(n.right))]


def _holds_wide_product(k: _Kernel, assigned: dict, e, seen: set) -> bool:
    """Whether 64-bit `e` holds a 64-bit index product, itself or through the variables it
    reads."""
    if _wide_products(k, e):
        return True
    for name in _ids(e) - seen:
        seen.add(name)
        if k.kinds.get(name) == "wide" and any(
                _holds_wide_product(k, assigned, v, seen) for v in assigned.get(name, [])):
            return True
    return False


def _truncations(k: _Kernel, assigned: dict, e) -> list:
    """Casts to a 32-bit integer type of a 64-bit value holding an index product:
    ``(int)((size_t)row * K)`` computes the product in 64 bits, then throws the top half away."""
    return [n for n in _walk(e)
            if isinstance(n, c_ast.Cast) and k.kind(n) == "int"
            and k.kind(n.expr) == "wide" and _holds_wide_product(k, assigned, n.expr, set())]


def _returns(func: c_ast.FuncDef) -> list:
    return [n.expr for n in _walk(func.body) if isinstance(n, c_ast.Return) and n.expr]


def _calls(e, functions: dict) -> list[str]:
    """Names of the functions defined in the source that `e` calls."""
    return [n.name.name for n in _walk(e) if isinstance(n, c_ast.FuncCall)
            and isinstance(n.name, c_ast.ID) and n.name.name in functions]


def _reachable(func: c_ast.FuncDef, functions: dict) -> list[str]:
    """`func`'s name and the names of the source's functions it calls, directly or not."""
    order, todo = [], [func.decl.name]
    while todo:
        name = todo.pop()
        if name in order:
            continue
        order.append(name)
        todo.extend(_calls(functions[name].body, functions))
    return order


def int_overflow_risks(source: str, options=None, kernel: str | None = None) -> list[Finding]:
    """32-bit index arithmetic that feeds a global-memory address, in kernel `kernel` (all
    kernels if None) and the ``__device__`` functions it calls.

    Found: a product of two non-constant 32-bit integers (``row * K``) in an expression whose
    value reaches an address (a subscript of a pointer, pointer arithmetic), directly, through
    local variables, or as the result of a device function used in an address
    (``A[at(row, K, k)]`` with ``int at(int r, int w, int c) { return r * w + c; }``); and a
    64-bit product brought back to 32 bits on its way there (``(int)((size_t)row * K)``, or
    ``int off = (size_t)row * K;``). Products of constants and launch-bounded built-ins
    (``blockIdx.y * blockDim.y``) are not reported.

    Returns `Finding`s sorted by line; the text is the product's source, with what it is
    when that is not a plain product. Raises the emulator's `CompileError` if the source does
    not parse."""
    from pycparser.c_generator import CGenerator

    ast = parse(preprocess(source, options))
    functions = {n.decl.name: n for n in ast.ext if isinstance(n, c_ast.FuncDef)}
    structs, constants = _program_facts(ast)
    contexts: dict[str, tuple] = {}

    def context(name):
        if name not in contexts:
            k = _Kernel(functions[name], structs, constants)
            contexts[name] = (k, _assignments(k))
        return contexts[name]

    findings: list[Finding] = []
    seen = set()

    def found(node, text):
        if id(node) not in seen:
            seen.add(id(node))
            findings.append(Finding(_line(node), text))

    want = _kernel_named(ast, kernel)
    for func in functions.values():
        if not is_kernel(func) or (kernel is not None and func.decl.name != want):
            continue
        names = _reachable(func, functions)
        work = [(name, e) for name in names for e in _address_expressions(context(name)[0])]
        visited: set = set()
        while work:
            fname, e = work.pop()
            k, assigned = context(fname)
            where = "" if fname == func.decl.name else f" (in {fname}())"
            for p in _risky_products(k, e):
                found(p, _THIS.sub("", CGenerator().visit(p)) + where)
            for c in _truncations(k, assigned, e):
                found(c, f"{CGenerator().visit(c)}{where}: a 64-bit product cast back to "
                         f"32 bits")
            for name in _ids(e):
                if (fname, name) in visited:
                    continue
                visited.add((fname, name))
                for value in assigned.get(name, []):
                    work.append((fname, value))
                    if k.kinds.get(name) == "int" and k.kind(value) == "wide" \
                            and _holds_wide_product(k, assigned, value, set()):
                        found(value, f"{name} = {CGenerator().visit(value)}{where}: a 64-bit "
                                     f"product stored in a 32-bit int")
            for callee in _calls(e, functions):
                if ("return", callee) not in visited:
                    visited.add(("return", callee))
                    work.extend((callee, r) for r in _returns(functions[callee]))
    findings.sort(key=lambda f: (f.line or 0, f.text))
    return findings


def uninitialized_locals(source: str, options=None, kernel: str | None = None) -> list[Finding]:
    """Local scalars of kernel `kernel` (all kernels if None), and of the functions it calls,
    that may be read before they are given a value, one `Finding(line, name)` per variable:
    its first such read.

    The rule is `unset_reads` (definite assignment, as in the C# and Java languages): a read
    is reported unless every path from the declaration to it assigns the variable. Raises the
    emulator's `CompileError` if the source does not parse."""
    findings: list[Finding] = []
    ast = parse(preprocess(source, options))
    functions = {n.decl.name: n for n in ast.ext if isinstance(n, c_ast.FuncDef)}
    for func in _kernels(source, options, kernel):
        seen = set()
        # and the __device__ functions it calls: 'T s; return s;' in a template helper, or
        # 'auto sum = zero();', hid the unset accumulator from a check of the kernel alone
        for name in _reachable(func, functions):
            for r in unset_reads(functions[name]):
                if id(r.decl) not in seen:
                    seen.add(id(r.decl))
                    findings.append(Finding(r.line, r.name))
    return findings


# ----------------------------------------------------------------------------- definite assignment

@dataclass(frozen=True)
class UnsetRead:
    """A read of the local scalar `name` (declared by `decl`, without a value) at `node` (a
    pycparser `ID`), on some path from the declaration to which nothing assigns it."""

    name: str
    decl: c_ast.Decl
    node: c_ast.ID
    line: int | None


def unset_reads(func: c_ast.FuncDef) -> list[UnsetRead]:
    """The reads of local scalars in `func` that are not definitely assigned, in source order.

    Definite assignment over the AST: the set of variables assigned on every path is carried
    through statements, intersected where paths join (after `if`/`else`, `?:`, `switch`, at
    a loop's exit and its `break`s), and a `return`, `break` or `continue` ends a path. A
    loop body is analysed with the state on entry to the loop (what the first iteration
    sees), which is sound for every later iteration. The right side of `&&`/`||` may not run,
    so what it assigns does not count afterwards. Parameters, `__shared__` variables and
    arrays are not tracked (the emulator checks local arrays element by element at run
    time). The analysis is conservative: a read it reports may still be set at run time on
    every path the program really takes (`if (i > 0) use(x); x = ...;` in a loop); the
    emulator confirms each reported read per thread when it runs (docs/emulator.md)."""
    da = _DefiniteAssignment()
    da.stmt(func.body, frozenset())
    out = [UnsetRead(da.tracked[key].name, da.tracked[key], node, _line(node))
           for key, node in da.reads]
    out.sort(key=lambda r: (r.line or 0, getattr(r.node.coord, "column", 0) or 0))
    return out


def _always_true(cond) -> bool:
    """A loop condition that never fails (`for (;;)`, `while (1)`, `while (true)`): the loop
    ends only by `break` (or `return`)."""
    if cond is None:
        return True
    if isinstance(cond, c_ast.Constant) and cond.type == "int":
        try:
            return int(cond.value.rstrip("uUlL"), 0) != 0
        except ValueError:
            return False
    return isinstance(cond, c_ast.ID) and cond.name == "true"


def _meet(*states):
    """Variables assigned on every one of `states` (None: a path that never gets here)."""
    live = [s for s in states if s is not None]
    if not live:
        return None
    out = live[0]
    for s in live[1:]:
        out = out & s
    return out


class _DefiniteAssignment:
    """The walk behind `unset_reads`. A state is a frozenset of declarations (by id) that are
    definitely assigned, or None for code no path reaches."""

    def __init__(self):
        self.scopes: list[dict] = [{}]
        self.tracked: dict[int, c_ast.Decl] = {}
        self.reads: list[tuple[int, c_ast.ID]] = []
        self.breaks: list[list] = []
        self.continues: list[list] = []

    def _resolve(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def _read(self, node, s):
        key = self._resolve(node.name)
        if key is not None and s is not None and key not in s:
            self.reads.append((key, node))

    @staticmethod
    def _assign(s, key):
        return s if s is None or key is None else s | {key}

    @staticmethod
    def _base_var(e):
        """The variable a `v`, `v.x` or `v.a.b` lvalue names (None for memory lvalues)."""
        while isinstance(e, c_ast.StructRef) and e.type == ".":
            e = e.name
        return e.name if isinstance(e, c_ast.ID) else None

    # -- expressions
    def expr(self, e, s):
        if e is None:
            return s
        if isinstance(e, c_ast.ID):
            self._read(e, s)
            return s
        if isinstance(e, c_ast.Assignment):
            name = self._base_var(e.lvalue)
            if name is not None and self._resolve(name) is not None:
                if e.op != "=":                 # x += v reads x
                    self._read_lvalue(e.lvalue, s)
                s = self.expr(e.rvalue, s)
                return self._assign(s, self._resolve(name))
            s = self.expr(e.lvalue, s)
            return self.expr(e.rvalue, s)
        if isinstance(e, c_ast.UnaryOp):
            if e.op == "sizeof":
                return s
            if e.op in ("++", "--", "p++", "p--"):
                name = self._base_var(e.expr)
                if name is not None and self._resolve(name) is not None:
                    self._read_lvalue(e.expr, s)
                    return self._assign(s, self._resolve(name))
            return self.expr(e.expr, s)
        if isinstance(e, c_ast.BinaryOp):
            s = self.expr(e.left, s)
            if e.op in ("&&", "||"):
                self.expr(e.right, s)
                return s
            return self.expr(e.right, s)
        if isinstance(e, c_ast.TernaryOp):
            s = self.expr(e.cond, s)
            return _meet(self.expr(e.iftrue, s), self.expr(e.iffalse, s))
        if isinstance(e, c_ast.StructRef):
            return self.expr(e.name, s)
        if isinstance(e, c_ast.Cast):
            return self.expr(e.expr, s)
        if isinstance(e, c_ast.FuncCall):
            for a in (e.args.exprs if e.args is not None else []):
                s = self.expr(a, s)
            return s
        if isinstance(e, (c_ast.Typename, c_ast.Constant)):
            return s
        for _, child in e.children():
            s = self.expr(child, s)
        return s

    def _read_lvalue(self, lv, s):
        """The read of `x` (or of `v` in `v.x`) by a compound assignment or `++`/`--`."""
        while isinstance(lv, c_ast.StructRef):
            lv = lv.name
        if isinstance(lv, c_ast.ID):
            self._read(lv, s)

    # -- statements
    def stmt(self, n, s):
        if n is None:
            return s
        method = getattr(self, "stmt_" + type(n).__name__, None)
        if method is not None:
            return method(n, s)
        return self.expr(n, s)

    def stmt_Compound(self, n, s):
        self.scopes.append({})
        for item in n.block_items or []:
            s = self.stmt(item, s)
        self.scopes.pop()
        return s

    def stmt_Decl(self, n, s):
        if n.name is None or isinstance(n.type, c_ast.FuncDecl):
            return s
        storage = n.storage or []
        _, pointer, array = _type_names(n.type)
        if n.init is not None:
            s = self.expr(n.init, s)
        if array or "_Thread_local" in storage or "extern" in storage or "static" in storage:
            self.scopes[-1][n.name] = None          # not tracked (and hides an outer name)
            return s
        key = id(n)
        self.scopes[-1][n.name] = key
        if n.init is not None:
            return self._assign(s, key)
        self.tracked[key] = n
        return s if s is None else s - {key}

    def stmt_DeclList(self, n, s):
        for d in n.decls:
            s = self.stmt_Decl(d, s)
        return s

    def stmt_If(self, n, s):
        s = self.expr(n.cond, s)
        return _meet(self.stmt(n.iftrue, s), self.stmt(n.iffalse, s) if n.iffalse else s)

    def _loop_body(self, body, s):
        self.breaks.append([])
        self.continues.append([])
        end = self.stmt(body, s)
        return end, self.breaks.pop(), self.continues.pop()

    def stmt_For(self, n, s):
        self.scopes.append({})
        s = self.stmt(n.init, s)
        head = self.expr(n.cond, s)
        end, breaks, continues = self._loop_body(n.stmt, head)
        self.expr(n.next, _meet(end, *continues))
        self.scopes.pop()
        return _meet(None if _always_true(n.cond) else head, *breaks)

    def stmt_While(self, n, s):
        head = self.expr(n.cond, s)
        _, breaks, _ = self._loop_body(n.stmt, head)
        return _meet(None if _always_true(n.cond) else head, *breaks)

    def stmt_DoWhile(self, n, s):
        end, breaks, continues = self._loop_body(n.stmt, s)
        after = self.expr(n.cond, _meet(end, *continues))
        return _meet(after, *breaks)

    def stmt_Break(self, n, s):
        if self.breaks:
            self.breaks[-1].append(s)
        return None

    def stmt_Continue(self, n, s):
        if self.continues:
            self.continues[-1].append(s)
        return None

    def stmt_Return(self, n, s):
        self.expr(n.expr, s)
        return None

    def stmt_Goto(self, n, s):
        return None

    def stmt_Switch(self, n, s):
        s = self.expr(n.cond, s)
        self.breaks.append([])
        self.scopes.append({})
        cur, has_default = None, False
        items = n.stmt.block_items if isinstance(n.stmt, c_ast.Compound) else [n.stmt]
        for item in items or []:
            cur, d = self._case(item, cur, s)
            has_default = has_default or d
        self.scopes.pop()
        breaks = self.breaks.pop()
        return _meet(cur, *breaks, None if has_default else s)

    def _case(self, item, cur, entry):
        """One item of a switch body: a label joins the switch's entry state."""
        if isinstance(item, (c_ast.Case, c_ast.Default)):
            cur = _meet(cur, entry)
            has_default = isinstance(item, c_ast.Default)
            for st in item.stmts or []:
                cur, d = self._case(st, cur, entry)
                has_default = has_default or d
            return cur, has_default
        return self.stmt(item, cur), False

    def stmt_Label(self, n, s):
        return self.stmt(n.stmt, None)

    def stmt_Typedef(self, n, s):
        return s

    def stmt_Pragma(self, n, s):
        return s

    def stmt_EmptyStatement(self, n, s):
        return s


# ----------------------------------------------------------------------------- thread-indexed shared arrays

def thread_component(e, aliases: dict) -> str | None:
    """'x', 'y' or 'z' when `e` is exactly one threadIdx component: `threadIdx.y`, a cast of
    it, or a local alias (`int ty = threadIdx.y;`, never assigned again); else None."""
    while isinstance(e, c_ast.Cast):
        e = e.expr
    if isinstance(e, c_ast.StructRef) and e.type == "." and isinstance(e.name, c_ast.ID) \
            and e.name.name == "threadIdx" and e.field.name in ("x", "y", "z"):
        return e.field.name
    if isinstance(e, c_ast.ID):
        return aliases.get(e.name)
    return None


def _thread_aliases(func: c_ast.FuncDef) -> dict:
    """Locals declared as a plain threadIdx component and never assigned afterwards."""
    found: dict = {}
    bad: set = set()
    for n in _walk(func.body):
        if isinstance(n, c_ast.Decl) and n.name:
            c = thread_component(n.init, {}) if n.init is not None else None
            if c is None or found.get(n.name, c) != c:
                bad.add(n.name)
            else:
                found[n.name] = c
        elif isinstance(n, c_ast.Assignment) and isinstance(n.lvalue, c_ast.ID):
            bad.add(n.lvalue.name)
        elif isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--", "&") \
                and isinstance(n.expr, c_ast.ID):
            bad.add(n.expr.name)
    if func.decl.type.args is not None:
        bad |= {p.name for p in func.decl.type.args.params if getattr(p, "name", None)}
    return {k: v for k, v in found.items() if k not in bad}


def _chain(e):
    """(base, [index, ...]) of `a[i][j]`, outermost index first."""
    idx = []
    while isinstance(e, c_ast.ArrayRef):
        idx.append(e.subscript)
        e = e.name
    return e, idx[::-1]


def _walk_parents(node, parent=None):
    if node is None:
        return
    yield node, parent
    for _, child in node.children():
        yield from _walk_parents(child, node)


def thread_indexed_stores(func: c_ast.FuncDef, ranks: dict) -> dict:
    """For the `__shared__` arrays named in `ranks` (name -> number of dimensions): which
    index positions every store into the array fills with one threadIdx component.

    Returns name -> (component or None per position, outermost first), e.g.
    ``{"As": ("y", "x")}`` for a kernel whose only stores are ``As[ty][tx] = ...`` with
    ``int ty = threadIdx.y, tx = threadIdx.x``. A store is an assignment (``=``, ``+=``,
    ...), ``++``/``--`` or an atomic on ``&As[...]...``; a position gets a component only if
    every store has that same component there. An array that is used otherwise than by
    full subscripts (its address taken, passed to a function, a row used as a pointer) is
    left out, since it may be written through a pointer."""
    aliases = _thread_aliases(func)
    stores: dict = {name: [] for name in ranks}
    escaped: set = set()
    bases: set = set()
    atomic_targets: set = set()      # `&s[i]` as the first argument of atomicAdd(...) etc.
    for n in _walk(func.body):
        if isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID) \
                and n.name.name.startswith("atomic") and n.args is not None and n.args.exprs:
            first = n.args.exprs[0]
            if isinstance(first, c_ast.UnaryOp) and first.op == "&":
                atomic_targets.add(id(first))
    for n, parent in _walk_parents(func.body):
        if isinstance(n, c_ast.ArrayRef) and not (isinstance(parent, c_ast.ArrayRef)
                                                  and parent.name is n):
            base, idx = _chain(n)
            if isinstance(base, c_ast.ID) and base.name in ranks:
                bases.add(id(base))
                if len(idx) != ranks[base.name]:
                    escaped.add(base.name)
        target = None
        if isinstance(n, c_ast.Assignment):
            target = n.lvalue
        elif isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--"):
            target = n.expr
        elif isinstance(n, c_ast.UnaryOp) and n.op == "&":
            if id(n) in atomic_targets:
                target = n.expr
            else:
                base, _ = _chain(n.expr)
                if isinstance(base, c_ast.ID) and base.name in ranks:
                    escaped.add(base.name)
        if target is not None:
            base, idx = _chain(target)
            if isinstance(base, c_ast.ID) and base.name in ranks:
                stores[base.name].append(idx)
    for n in _walk(func.body):
        if isinstance(n, c_ast.ID) and n.name in ranks and id(n) not in bases:
            escaped.add(n.name)
    out = {}
    for name, idxs in stores.items():
        if name in escaped or not idxs:
            continue
        comps = []
        for p in range(ranks[name]):
            cs = {thread_component(ix[p], aliases) if p < len(ix) else None for ix in idxs}
            comps.append(cs.pop() if len(cs) == 1 else None)
        out[name] = tuple(comps)
    return out
