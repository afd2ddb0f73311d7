"""The front end's entry points: CUDA C++ source -> pycparser `c_ast.FileAST` for the compiler.

`parse(pre)` runs stage 2 (clang, clang.py) on stage 1's `Preprocessed` (preprocess.py)
and stage 3 (lower.py); its nodes carry `coord` (kernel.cu:line:column) in the
student's own line numbers. The emulator's compiler, the PyCUDA backend's argument checks
(`tilinglib.toolchain.codegen.compiler.kernel_signatures`, which applies the emulator's C type rules to
this AST) and the grader's source checks (grading/source_checks.py) all read the same AST.
Results are cached by the preprocessed text, so compiling the same source again is free.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass

from pycparser import c_ast

from ...errors import CompileError
from .. import disk_cache
from .clang import clang_command, compile_error, error_locations, has_errors, run_clang
from .preprocess import SOURCE_NAME, Preprocessed, preprocess
from .lower import KERNEL_MARK, Translator, normalize_kernel_name


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name and C type (`c_types.Scalar`, `c_types.Pointer`, ...)."""

    name: str
    ctype: object
    line: int | None = None


# The translator, the compiler and the compiled closures all recurse once or more per level
# of nesting. They run with this much room for Python frames (Python 3.11 and later keep pure
# Python calls off the C stack; 3.10 does not, so it gets less), and the AST may nest at
# most MAX_NESTING levels: deeper source is a CompileError, never a RecursionError.
RECURSION_ROOM = 20_000 if sys.version_info >= (3, 11) else 6_000
MAX_NESTING = 1_000


@contextmanager
def recursion_room(frames: int = RECURSION_ROOM):
    """Run the body with Python's recursion limit at least `frames` (restored after)."""
    old = sys.getrecursionlimit()
    if old >= frames:
        yield
        return
    sys.setrecursionlimit(frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def source_line(pre: Preprocessed, line: int | None) -> str | None:
    if line and 0 < line <= len(pre.source_lines):
        return pre.source_lines[line - 1]
    return None


class TranslationUnit(c_ast.FileAST):
    """A `c_ast.FileAST` with what the front end knows besides: `kernel_names` (the name
    get_function takes -> the mangled name), `template_kernels` (kernel templates),
    `template_params` (each kernel template's parameters, `Translator.template_params`) and
    `failed` (functions the translator could not lower -> the `UnsupportedFeatureError`:
    only the kernels that use one are refused)."""

    def __init__(self, ext, kernel_names, template_kernels, coord=None, failed=None,
                 template_params=None):
        super().__init__(ext, coord)
        self.kernel_names = kernel_names
        self.template_kernels = template_kernels
        self.template_params = dict(template_params or {})
        self.failed = dict(failed or {})       # function -> UnsupportedFeatureError

    def kernel_name(self, name: str) -> str | None:
        """The kernel `name` as this unit spells it (spaces and 32U/32 ignored), or None."""
        key = normalize_kernel_name(name)
        # its own name before any mangled name: an extern "C" kernel in a namespace has the
        # mangled name 'sgemm' and was picked for 'sgemm' over the kernel named so
        for known in self.kernel_names:
            if normalize_kernel_name(known) == key:
                return known
        for known, mangled in self.kernel_names.items():
            if mangled == name:
                return known
        # a kernel in a namespace by its own name ('k' for 'ns::k'), when only one fits
        tail = [k for k in self.kernel_names
                if normalize_kernel_name(k).split("::")[-1] == key and "::" not in key]
        return tail[0] if len(tail) == 1 else None


_OPERATOR = re.compile(r"->|\+\+|--|<<=?|>>=?|[-+*/%&|^!~<>=?]=?|[;{},]")
_LITERALS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')


def check_expression_depth(pre: Preprocessed, limit: int = MAX_NESTING) -> None:
    """Refuse, before clang runs, an expression of more than `limit` operators between two
    of ';', '{', '}', ','(a sum of thousands of terms, thousands of unary minuses): its AST
    would be that deep, and clang's JSON of it grows as the square of the depth."""
    line, count = 1, 0
    for raw in pre.text.split("\n"):
        m = re.match(r'\s*#\s*line\s+(\d+)', raw)
        if m:
            line = int(m.group(1))
            continue
        for tok in _OPERATOR.findall(_LITERALS.sub('""', raw)):
            if tok in ";{},":
                count = 0
                continue
            count += 1
            if count > limit:
                raise CompileError(
                    f"{SOURCE_NAME}:{line}: expressions and statements nested more than "
                    f"{limit:,} levels deep (a sum of over {limit:,} terms in one "
                    f"expression, or blocks inside blocks): split it into several statements",
                    line=line, source_line=source_line(pre, line))
        line += 1


_FUNCTIONS = ("FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl", "CXXConversionDecl",
              "CXXDestructorDecl")
_DEVICE_ATTRS = ("CUDAGlobalAttr", "CUDADeviceAttr")
_DEVICE_VAR_ATTRS = ("CUDADeviceAttr", "CUDAConstantAttr", "CUDASharedAttr")


def _attrs(n: dict) -> set:
    return {a.get("kind") for a in n.get("inner", []) if isinstance(a, dict)}


def _declares_device_code(n: dict) -> bool:
    """Whether class `n` (clang's JSON) has a member the source marks ``__device__`` or
    ``__global__``. The special members clang declares itself where a class is used (the
    implicit copy and move constructors of ``Timer t;``) carry an implicit
    ``__host__ __device__`` of their own, which does not make the class device code."""
    stack = [n]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("isImplicit") and node is not n:
                continue
            if node.get("kind") in _DEVICE_ATTRS and not node.get("implicit"):
                return True
            stack.extend(v for k, v in node.items() if k == "inner")
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _span(n: dict, offset: int):
    """(first line, first column, last line, last column) of declaration `n` in the
    student's numbering, or None where it is in the prelude or has no range."""
    rng = n.get("range") or {}
    ends = []
    for key in ("begin", "end"):
        loc = rng.get(key) or {}
        if "expansionLoc" in loc:
            loc = loc["expansionLoc"]
        if "line" not in loc or "col" not in loc:
            return None
        ends.append((loc["line"] - offset, loc["col"] + (loc.get("tokLen", 1) - 1
                                                         if key == "end" else 0)))
    (l0, c0), (l1, c1) = ends
    return None if l0 <= 0 else (l0, c0, l1, c1)


def host_code(root: dict, offset: int) -> tuple[list, dict]:
    """The host code of a translation unit, as clang's JSON gives it: (the spans of
    `_span` of every declaration that device code cannot use (a function without
    ``__device__``/``__global__``, a variable without ``__device__``/``__constant__``/
    ``__shared__``, a class, typedef or alias whose name no device function mentions),
    {first line of each function: its name} for messages). nvcc --cubin parses them and
    drops them; so does the front end: clang's errors inside them are set aside."""
    device_text = []
    decls = []

    def walk(items):
        for n in items:
            if not isinstance(n, dict):
                continue
            kind = n.get("kind")
            if kind in ("NamespaceDecl", "LinkageSpecDecl"):
                walk(n.get("inner", []))
                continue
            if kind == "FunctionTemplateDecl":
                fs = [f for f in n.get("inner", []) if f.get("kind") in _FUNCTIONS]
                device = any(_attrs(f) & set(_DEVICE_ATTRS) for f in fs)
                decls.append((n, "function", device, fs[0].get("name") if fs else None))
                if device:
                    device_text.append(json.dumps(n))
                continue
            if kind in _FUNCTIONS:
                device = bool(_attrs(n) & set(_DEVICE_ATTRS))
                decls.append((n, "function", device, n.get("name")))
                if device:
                    device_text.append(json.dumps(n))
            elif kind == "VarDecl":
                decls.append((n, "variable", bool(_attrs(n) & set(_DEVICE_VAR_ATTRS)),
                              n.get("name")))
                if _attrs(n) & set(_DEVICE_VAR_ATTRS):
                    device_text.append(json.dumps(n))
            elif kind in ("CXXRecordDecl", "ClassTemplateDecl", "TypedefDecl",
                          "TypeAliasDecl", "TypeAliasTemplateDecl", "EnumDecl"):
                methods = json.dumps(n) if kind in ("CXXRecordDecl", "ClassTemplateDecl") \
                    else ""
                device = bool(methods) and _declares_device_code(n)
                decls.append((n, "type", device, n.get("name")))
                if device:
                    device_text.append(methods)
            elif kind in ("UsingDirectiveDecl", "UsingDecl", "NamespaceAliasDecl"):
                decls.append((n, "type", False, None))

    walk(root.get("inner", []))
    mentioned = "\n".join(device_text)
    spans, names = [], {}
    for n, what, device, name in decls:
        span = _span(n, offset)
        if span is None:
            continue
        if what == "function" and name:
            names[span[0]] = name
        if what == "type" and not device and name and re.search(
                rf"\b{re.escape(name)}\b", mentioned):
            device = True           # a struct or typedef the device code uses
        if not device:
            spans.append(span)
    return spans, names


def _inside(spans, line, col) -> bool:
    return any((l0, c0) <= (line, col) <= (l1, c1) for l0, c0, l1, c1 in spans)


def _function_at(names: dict, line: int) -> str | None:
    before = [first for first in names if first <= line]
    return names[max(before)] if before else None


@functools.lru_cache(maxsize=64)
def _translate(text: str, cooperative_groups: bool, source_lines: tuple,
               included: tuple = ()) -> TranslationUnit:
    """The unit of `text`, from the disk cache (toolchain/disk_cache.py) when this tilinglib
    translated the same text with the same clang before; else `_run_translation`'s, stored
    there (only a success is stored: errors are found again)."""
    key = disk_cache.key_of(text, cooperative_groups, source_lines, included,
                            tuple(clang_command()))
    unit = disk_cache.get("translation", key)
    if isinstance(unit, TranslationUnit):
        return unit
    unit = _run_translation(text, cooperative_groups, source_lines, included)
    disk_cache.put("translation", key, unit)
    return unit


def _run_translation(text: str, cooperative_groups: bool, source_lines: tuple,
                     included: tuple) -> TranslationUnit:
    root, diagnostics, offset = run_clang(text, cooperative_groups, included)
    if root is None or has_errors(diagnostics):
        spans, names = host_code(root, offset) if root is not None else ([], {})
        in_host = lambda line, col: _inside(spans, line, col)     # noqa: E731
        found = error_locations(diagnostics, offset)
        if root is None or not found or any(line is None or not in_host(line, col)
                                            for line, col, _ in found):
            raise compile_error(diagnostics, source_lines, offset, skip=in_host,
                                function_at=lambda line: _function_at(names, line))
        # every error is in host code, which nvcc --cubin parses and drops: so do we
    tr = Translator(root, source_lines, offset)
    ast = tr.translate()
    return TranslationUnit(ast.ext, tr.kernel_names, tr.template_kernels, failed=tr.failed,
                           template_params=tr.template_params)


def parse(pre: Preprocessed) -> TranslationUnit:
    """Run clang and the translator on stage 1's text. Raises `CompileError` at the
    student's line and column (every error clang found listed), `UnsupportedFeatureError`
    for C++ the emulator does not run."""
    check_expression_depth(pre)
    try:
        with recursion_room():
            ast = _translate(pre.text, pre.cooperative_groups, tuple(pre.source_lines),
                             tuple(pre.included))
    except RecursionError:
        raise CompileError(f"{SOURCE_NAME}: the source is nested too deeply for the "
                           f"emulator's front end (parentheses, blocks or operators "
                           f"thousands of levels deep)") from None
    check_nesting(pre, ast)
    return ast


def check_nesting(pre: Preprocessed, ast, limit: int = MAX_NESTING) -> None:
    """Raise `CompileError` at the first node nested more than `limit` levels deep in `ast`
    (a sum of thousands of terms in one expression, blocks inside blocks...). Iterative, so
    it never recurses itself."""
    stack = [(ast, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            line = getattr(getattr(node, "coord", None), "line", None)
            raise CompileError(
                f"{SOURCE_NAME}:{line}: expressions and statements nested more than {limit:,} "
                f"levels deep (a sum of over {limit:,} terms in one expression, or blocks "
                f"inside blocks): split it into several statements", line=line,
                source_line=source_line(pre, line))
        stack.extend((child, depth + 1) for _, child in node.children())


def is_kernel(node: c_ast.FuncDef) -> bool:
    """A `__global__` function (the translator marks it with the specifier `KERNEL_MARK`)."""
    return KERNEL_MARK in (node.decl.funcspec or [])


def find_kernel(source: str, options, name: str) -> tuple[str, str] | None:
    """(the kernel's name as the front end spells it, its mangled name) for the kernel
    `name` of `source`, found as the emulator's get_function finds it
    (`TranslationUnit.kernel_name`: spaces and 32U/32 ignored, a namespaced kernel by its own
    name when only one fits), or None."""
    unit = parse(preprocess(source, options))
    known = unit.kernel_name(name)
    return None if known is None else (known, unit.kernel_names[known])


def mangled_names(source: str, options=None) -> dict:
    """{kernel name: mangled name} of `source`'s kernels: the Itanium ABI name clang gives
    (and nvcc: PyCUDA's get_function takes it with no_extern_c=True)."""
    return dict(parse(preprocess(source, options)).kernel_names)
