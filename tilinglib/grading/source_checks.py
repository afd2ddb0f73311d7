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

The AST analyses underneath (`unset_reads`, `thread_indexed_stores`) live in the front end
(`tilinglib.toolchain.frontend.analyses`), since the emulator's compiler uses them too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pycparser import c_ast

from ..toolchain.frontend.analyses import UnsetRead, thread_component, thread_indexed_stores, unset_reads
from ..toolchain.frontend.analyses import line_of as _line
from ..toolchain.frontend.analyses import type_names as _type_names
from ..toolchain.frontend.analyses import walk as _walk
from ..toolchain.frontend.program import is_kernel, parse
from ..toolchain.frontend.preprocess import preprocess

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
