"""Stage 2: plain C text -> pycparser AST, and the kernel signatures read from it.

Input: a `Preprocessed` from stage 1. Output: pycparser's `c_ast.FileAST`, whose nodes carry
`coord` (file:line:column) in the student's own line numbers thanks to the ``#line``
directives. `kernel_signatures` lets the PyCUDA backend check arguments against the
parameter list before launching.
"""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass

from pycparser import c_ast, c_parser

from ..errors import CompileError
from . import ctypes_ as ct
from .preprocess import SOURCE_NAME, Preprocessed, preprocess


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name and C type (`ctypes_.Scalar`, `ctypes_.Pointer`, ...)."""

    name: str
    ctype: ct.CType
    line: int | None = None


# pycparser's parser, the compiler and the compiled closures all recurse once or more per level
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


_PARSE_ERROR = re.compile(r"^(?P<file>[^:]*):(?P<line>\d+):(?P<col>\d+): (?P<msg>.*)$", re.S)


def source_line(pre: Preprocessed, line: int | None) -> str | None:
    if line and 0 < line <= len(pre.source_lines):
        return pre.source_lines[line - 1]
    return None


def parse(pre: Preprocessed) -> c_ast.FileAST:
    """Parse stage 1's text. Raises `CompileError` at the student's line and column."""
    parser = c_parser.CParser()
    try:
        with recursion_room():
            ast = parser.parse(pre.text, filename=SOURCE_NAME)
    except RecursionError:
        line = _current_line(parser)
        raise CompileError(f"{SOURCE_NAME}:{line}: the source is nested too deeply for the "
                           f"emulator's parser (parentheses, blocks or operators thousands of "
                           f"levels deep)", line=line, source_line=source_line(pre, line)) from None
    except c_parser.ParseError as exc:
        text = str(exc)
        m = _PARSE_ERROR.match(text)
        if not m:
            # Some of pycparser's errors carry no position: the lexer's line (kept in the
            # student's numbering by the #line directives) is where it stopped reading.
            line = _current_line(parser)
            msg = text.split(": ", 1)[-1]
            raise CompileError(f"{SOURCE_NAME}:{line}: syntax error: {msg}", line=line,
                               source_line=source_line(pre, line)) from None
        line, col = int(m.group("line")), int(m.group("col"))
        msg = m.group("msg")
        if msg.startswith("before:"):
            msg = f"syntax error before '{msg[len('before:'):].strip()}'"
            hint = _missing_token(pre, line, col)
            if hint:
                msg += hint
        raise CompileError(f"{SOURCE_NAME}:{line}:{col}: {msg}", line=line, column=col,
                           source_line=source_line(pre, line)) from None
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


_CLOSER = {"(": ")", "[": "]"}
_LITERAL = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')


def _code(pre: Preprocessed, line: int) -> str:
    """Source line `line` without its // comment and string or character literals."""
    return _LITERAL.sub('""', source_line(pre, line) or "").split("//")[0].strip()


def _missing_token(pre: Preprocessed, line: int, col: int | None = None) -> str:
    """The hint after "syntax error before '...'" at `line`: the token the student most
    plausibly left out (one rule for every syntax error).

    The statement the error interrupts runs from the last line ending in ';', '{' or '}'
    (or a # directive) to the error. If it leaves a '(' or '[' open, a ')' or ']' is missing
    at its end: " (is a ')' missing on line 5?)". Otherwise, if the previous line does not
    end as a C statement may continue: " (is a ';' missing at the end of line 4?)". Else ''.
    """
    lines, prev = [], None
    raw = source_line(pre, line) or ""
    before = _LITERAL.sub('""', raw[:max(0, (col or 1) - 1)]).split("//")[0] if col else ""
    for n in range(line - 1, 0, -1):
        text = _code(pre, n)
        if not text:
            continue
        if text.startswith("#") or text.endswith((";", "{", "}")):
            break
        prev = prev or n
        lines.append(text)
    opened = []
    for ch in " ".join(reversed(lines)) + " " + before:
        if ch in _CLOSER:
            opened.append(ch)
        elif ch in (")", "]") and opened and _CLOSER[opened[-1]] == ch:
            opened.pop()
    if opened:
        where = line if before.strip() else prev
        return f" (is a '{_CLOSER[opened[-1]]}' missing on line {where}?)"
    if prev is None:
        return ""
    text = lines[0]                      # the line just before the error
    if text.endswith((",", ":", "\\")):
        return ""
    if text.endswith(")") and text.split("(")[0].strip().split(" ")[-1] in (
            "if", "for", "while", "switch"):
        return ""
    return f" (is a ';' missing at the end of line {prev}?)"


def is_kernel(node: c_ast.FuncDef) -> bool:
    """A `__global__` function (stage 1 marks it with the `_Noreturn` function specifier)."""
    return "_Noreturn" in (node.decl.funcspec or [])


def _current_line(parser) -> int | None:
    """The line of the token pycparser stopped at (for its errors that carry no position)."""
    try:
        tok = parser._tokens.peek()
        if tok is not None:
            return int(tok.lineno)
    except Exception:  # another pycparser version: fall back to the lexer's line
        pass
    lex = getattr(parser, "clex", None)
    line = getattr(lex, "lineno", None) or getattr(lex, "_lineno", None)
    return int(line) if line else None


def kernel_signatures(source: str, options=None) -> dict:
    """The `__global__` functions of `source`, as {name: [Param, ...]} in declaration order.

    Types are resolved with the emulator's type rules (typedefs included), so a caller can
    check Python arguments against them. Raises `CompileError` if the source does not parse.
    """
    from .compiler import TypeResolver

    pre = preprocess(source, options)
    ast = parse(pre)
    resolver = TypeResolver(pre)
    out = {}
    for node in ast.ext:
        if isinstance(node, c_ast.Typedef):
            resolver.add_typedef(node)
        elif isinstance(node, c_ast.FuncDef) and is_kernel(node):
            out[node.decl.name] = resolver.params(node)
    return out
