"""Static checks on a kernel's source, for the grader (`tilinglib.grading`).

Two mistakes cannot be caught by running a kernel on sizes a CPU can afford, so the grader
reads the source for them instead:

- `int_overflow_risks`: a product of two 32-bit integers that are not compile-time constants
  (``row * K``) whose value ends up in a global-memory address. It wraps around once the
  matrix has more than 2**31 elements (an 8 GiB float matrix: a real size on a 141 GB GPU,
  far beyond what the emulator can hold). Computing the product in 64 bits
  (``(size_t)row * K``) is the fix. Products of built-in indices and sizes only
  (``blockIdx.y * blockDim.y``) are bounded by the launch and are not reported.
- `uninitialized_locals`: a local scalar declared without a value and read before any plain
  assignment (``float sum; ... sum += ...``). On a GPU it holds whatever the register held;
  the emulator starts it at 0, so the answer would look right there.

Input: CUDA C source and nvcc-style options. Output: lists of `Finding(line, text)`.
Both walk pycparser's AST (stage 2 of the emulator); the analysis is a simple one (no
control flow), which errs towards reporting.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycparser import c_ast

from .emulator.parse import is_kernel, parse
from .emulator.preprocess import preprocess

__all__ = ["Finding", "int_overflow_risks", "uninitialized_locals"]

_WIDE = {"long", "size_t", "ptrdiff_t", "int64_t", "uint64_t", "intptr_t", "uintptr_t",
         "double", "float"}  # float/double: not an int product at all
_FLOATING = {"float", "double", "half"}
_BUILTINS = {"threadIdx", "blockIdx", "blockDim", "gridDim"}


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


class _Kernel:
    """Symbol table and helpers for one kernel definition."""

    def __init__(self, func: c_ast.FuncDef):
        self.func = func
        self.kinds: dict[str, str] = {}
        self.pointers: set[str] = set()
        self.arrays: set[str] = set()
        params = func.decl.type.args.params if func.decl.type.args else []
        for p in params:
            self._declare(p)
        for node in _walk(func.body):
            if isinstance(node, c_ast.Decl) and node.name:
                self._declare(node)

    def _declare(self, decl) -> None:
        names, pointer, array = _type_names(decl.type)
        if pointer:
            self.pointers.add(decl.name)
            self.kinds[decl.name] = "pointer"
        elif array:
            self.arrays.add(decl.name)
            self.kinds[decl.name] = "array"
        else:
            self.kinds[decl.name] = _kind(names)

    # -------------------------------------------------------------- expression types
    def kind(self, e) -> str:
        if isinstance(e, c_ast.Constant):
            if e.type in ("float", "double"):
                return "float"
            return "wide" if "l" in e.value.lower() else "int"
        if isinstance(e, c_ast.ID):
            return self.kinds.get(e.name, "int")
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


def _is_constant(e) -> bool:
    return all(isinstance(n, (c_ast.Constant, c_ast.BinaryOp, c_ast.UnaryOp, c_ast.Cast,
                              c_ast.Typename, c_ast.TypeDecl, c_ast.IdentifierType))
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


def _kernels(source: str, options) -> list[c_ast.FuncDef]:
    pre = preprocess(source, options)
    ast = parse(pre)
    return [n for n in ast.ext if isinstance(n, c_ast.FuncDef) and is_kernel(n)]


def _risky_products(k: _Kernel, e) -> list:
    out = []
    for n in _walk(e):
        if (isinstance(n, c_ast.BinaryOp) and n.op == "*" and k.kind(n) == "int"
                and not _is_constant(n.left) and not _is_constant(n.right)
                and not (_is_small(n.left) and _is_small(n.right))):
            out.append(n)
    return out


def _address_expressions(k: _Kernel):
    """Expressions whose value becomes (part of) a global-memory address."""
    for n in _walk(k.func.body):
        if isinstance(n, c_ast.ArrayRef) and isinstance(n.name, c_ast.ID) \
                and n.name.name in k.pointers:
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
    return out


def int_overflow_risks(source: str, options=None, kernel: str | None = None) -> list[Finding]:
    """32-bit products that feed a global-memory address, in kernel `kernel` (all if None).

    Raises the emulator's `CompileError` if the source does not parse."""
    findings: list[Finding] = []
    seen = set()
    for func in _kernels(source, options):
        if kernel is not None and func.decl.name != kernel:
            continue
        k = _Kernel(func)
        assigned = _assignments(k)
        work = list(_address_expressions(k))
        visited_vars: set[str] = set()
        while work:
            e = work.pop()
            for p in _risky_products(k, e):
                key = (_line(p), id(p))
                if key not in seen:
                    seen.add(key)
                    from pycparser.c_generator import CGenerator
                    text = CGenerator().visit(p)
                    findings.append(Finding(_line(p), text))
            for name in _ids(e) - visited_vars:
                visited_vars.add(name)
                work.extend(assigned.get(name, []))
    findings.sort(key=lambda f: (f.line or 0, f.text))
    return findings


def uninitialized_locals(source: str, options=None, kernel: str | None = None) -> list[Finding]:
    """Local scalars read before they are first given a value (in source order)."""
    findings: list[Finding] = []
    for func in _kernels(source, options):
        if kernel is not None and func.decl.name != kernel:
            continue
        pending: dict[str, int | None] = {}
        for event, name, node in _events(func.body):
            if event == "decl":
                pending[name] = _line(node)
            elif name in pending:
                if event == "read":
                    findings.append(Finding(_line(node), name))
                pending.pop(name)
    return findings


def _events(node):
    """('decl'|'read'|'write', name, node) in the order the code runs them (ignoring jumps)."""
    if node is None:
        return
    if isinstance(node, c_ast.Decl):
        if node.init is not None:
            yield from _events(node.init)
        names, pointer, array = _type_names(node.type)
        storage = node.storage or []
        if (node.init is None and node.name and not pointer and not array
                and "_Thread_local" not in storage and "extern" not in storage
                and not isinstance(node.type, c_ast.FuncDecl)):
            yield "decl", node.name, node
        return
    if isinstance(node, c_ast.Assignment):
        yield from _events(node.rvalue)
        if isinstance(node.lvalue, c_ast.ID):
            yield ("write" if node.op == "=" else "read"), node.lvalue.name, node
        else:
            yield from _events(node.lvalue)
        return
    if isinstance(node, c_ast.UnaryOp) and node.op == "&" and isinstance(node.expr, c_ast.ID):
        yield "write", node.expr.name, node      # passed by address: assume it is set
        return
    if isinstance(node, c_ast.ID):
        yield "read", node.name, node
        return
    if isinstance(node, c_ast.StructRef):
        yield from _events(node.name)
        return
    for _, child in node.children():
        yield from _events(child)
