"""Stage 1: CUDA C source -> plain C text that pycparser can parse, line numbers intact.

Input: the student's source and nvcc-style options (``-DTILE=32``, ``-D PAD=1``, ``-UX``;
other options are accepted and ignored). Output: a `Preprocessed` holding C text whose
``#line`` directives point back at the student's own lines, plus the original lines for
error messages.

Steps:
1. pcpp runs the C preprocessor (macros, ``#if``/``#ifdef``, ``-D``); ``#include`` of a
   header it cannot find (``cuda_runtime.h``, ``stdio.h``, ...) is dropped, as the CUDA
   headers only declare what the emulator provides built in.
2. CUDA's extensions are rewritten into C that keeps their meaning for the compiler stage:
   ``__global__`` becomes the function specifier ``_Noreturn`` (a marker: kernels return
   void anyway), ``__shared__`` the storage class ``_Thread_local`` and ``__constant__`` the
   storage class ``register`` and ``__device__`` the function specifier ``inline`` (markers
   read back by compiler.py); ``__host__``, ``__forceinline__``, ``__launch_bounds__(...)``
   and ``extern "C"`` go;
   ``__restrict__`` becomes ``restrict``; ``static_cast<T>(e)`` and ``reinterpret_cast<T>(e)``
   become the C cast ``((T)(e))``. Rewrites never add or remove a newline.
3. C++ the emulator cannot run (templates, classes, references, ``new``) is refused here
   with an `UnsupportedFeatureError` naming the construct and its line.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import pcpp

from ..errors import CompileError, UnsupportedFeatureError
from .ctypes_ import VECTOR_TYPES

SOURCE_NAME = "kernel.cu"

# Declarations the parser needs to know type names; the compiler maps each name to its type.
_PRELUDE_TYPEDEFS = [
    "typedef _Bool bool;",
    "typedef unsigned long size_t;",
    "typedef long ptrdiff_t;",
    "typedef signed char int8_t;", "typedef unsigned char uint8_t;",
    "typedef short int16_t;", "typedef unsigned short uint16_t;",
    "typedef int int32_t;", "typedef unsigned int uint32_t;",
    "typedef long long int64_t;", "typedef unsigned long long uint64_t;",
] + [f"typedef struct __cuda_{name} {name};" for name in VECTOR_TYPES]
PRELUDE = "\n".join(_PRELUDE_TYPEDEFS) + "\n"

_KEYWORD_REWRITES = [
    (re.compile(r"\b__global__\b"), "_Noreturn"),
    (re.compile(r"\b__shared__\b"), "_Thread_local"),
    (re.compile(r"\bregister\b"), ""),              # a hint to C compilers: meaningless
    (re.compile(r"\b__constant__\b"), "register"),
    (re.compile(r"\b__restrict__\b"), "restrict"),
    (re.compile(r"\b__restrict\b"), "restrict"),
    # __device__ becomes the function specifier `inline`, read back by the compiler: a
    # kernel may only call functions marked __device__, as with nvcc.
    (re.compile(r"\b__device__\b"), "inline"),
    (re.compile(r"\b(__host__|__forceinline__|__noinline__|__inline__)\b"), ""),
    (re.compile(r"\bnullptr\b"), "0"),
    (re.compile(r"\bconstexpr\b"), "const"),
]

_UNSUPPORTED = [
    (re.compile(r"\btemplate\s*<"), "C++ templates (template<...>)",
     "write the kernel for one type, and use #define or -D options for constants"),
    (re.compile(r"\b(class|namespace|operator|virtual|typename)\b"), "C++ '{0}'",
     "the emulator runs the C subset of CUDA C++"),
    (re.compile(r"\bnew\b|\bdelete\b"), "C++ '{0}'",
     "allocate memory on the host and pass a pointer to the kernel"),
    (re.compile(r"::"), "C++ scope operator '::'", "use plain C names"),
    (re.compile(r"\bauto\b"), "C++ 'auto'", "write the type out"),
    (re.compile(r"\[[^\]\n]*\]\s*\([^)\n]*\)\s*(->\s*\w+\s*)?\{"), "C++ lambdas",
     "write a __device__ function"),
    (re.compile(r"\b(__half2?|half2?|__nv_bfloat162?)\b"), "half-precision type '{0}'",
     "use float"),
    (re.compile(r"\b(float|int|double|unsigned|char|short|long|float[1-4]|int[1-4])\s*&\s*\w"),
     "C++ reference parameter ('{0}...')", "pass a pointer instead"),
]


@dataclass(frozen=True)
class Preprocessed:
    """The result of stage 1.

    `text`: C text for pycparser (prelude + preprocessed source with #line directives).
    `source_lines`: the student's original lines (index 0 is line 1), for error messages.
    `defines`: the -D macros applied, as a dict name -> value text.
    """

    text: str
    source_lines: tuple
    defines: dict


def check_options(options) -> None:
    """Refuse options that nvcc would misread, with what to write instead.

    `options` must be None or a list (or tuple) of strings, each starting with '-' (a
    value after a lone ``-D``/``-U`` excepted). Raises `CompileError` otherwise: for
    ``options="-DTILE=16"`` (a string: PyCUDA would pass each character), or
    ``options=["TILE=16"]`` (no ``-D``: nvcc would take it for a file name)."""
    if options is None:
        return
    if isinstance(options, str):
        raise CompileError(f"options must be a list of strings, not the string {options!r}: "
                           f"write options=[{options!r}]")
    if not isinstance(options, (list, tuple)):
        raise CompileError(f"options must be a list of strings, not {type(options).__name__}: "
                           f"write options=['-DTILE=32']")
    previous = None
    for opt in options:
        if not isinstance(opt, str):
            raise CompileError(f"compiler options must be strings, got {opt!r} "
                               f"(write options=['-DTILE=32'])")
        if not opt.startswith("-") and previous not in ("-D", "-U"):
            hint = f"'-D{opt}'" if re.fullmatch(r"[A-Za-z_]\w*(=.*)?", opt) else "'-D...'"
            raise CompileError(f"unknown compiler option {opt!r}: options start with '-'; "
                               f"to define a macro write {hint}")
        previous = opt


def parse_options(options) -> tuple[dict, list]:
    """Split nvcc-style options into (defines, undefines).

    Accepts ``-DNAME``, ``-DNAME=VALUE``, ``-D NAME=VALUE``, ``-UNAME``; everything else
    (``-O3``, ``-lineinfo``, ``--use_fast_math``, ``-arch=sm_90``) is ignored by the emulator.
    Raises `CompileError` for an option that is not a string.
    """
    defines, undefines = {}, []
    check_options(options)
    opts = list(options or [])
    i = 0
    while i < len(opts):
        opt = opts[i]
        if opt in ("-D", "-U") and i + 1 < len(opts):
            opt = opt + opts[i + 1]
            i += 1
        if opt.startswith("-D"):
            name, _, value = opt[2:].partition("=")
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise CompileError(f"bad -D option {opt!r}: write -DNAME or -DNAME=VALUE")
            defines[name] = value if _ else "1"
        elif opt.startswith("-U"):
            undefines.append(opt[2:])
        i += 1
    return defines, undefines


class _Preprocessor(pcpp.Preprocessor):
    def __init__(self):
        super().__init__()
        self.line_directive = "#line"
        self.errors: list[tuple[int | None, str]] = []

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
        # CUDA and C library headers only declare what the emulator already provides.
        raise pcpp.OutputDirective(pcpp.Action.IgnoreAndRemove)

    def on_error(self, file, line, msg):
        self.errors.append((line, msg))
        self.return_code += 1

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
        if directive.value == "pragma":
            return None
        if directive.value == "error":
            text = "".join(tok.value for tok in toks).strip()
            self.errors.append((directive.lineno, f"#error {text}"))
            return True
        if directive.value == "warning":
            return True
        return super().on_directive_unknown(directive, toks, ifpassthru, precedingtoks)


def _find_matching(text: str, start: int, open_ch: str, close_ch: str) -> int:
    """Index of the bracket closing the one at `start`, or -1."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i
    return -1


_CAST = re.compile(r"\b(static_cast|reinterpret_cast|const_cast)\s*<")


def _rewrite_casts(text: str) -> str:
    """``static_cast<T>(e)`` -> ``((T)(e))`` (and the same for reinterpret_cast/const_cast)."""
    while True:
        m = _CAST.search(text)
        if not m:
            return text
        lt = m.end() - 1
        gt = _find_matching(text, lt, "<", ">")
        paren = text.find("(", gt)
        if gt < 0 or paren < 0 or text[gt + 1:paren].strip():
            raise UnsupportedFeatureError(f"cannot read the {m.group(1)} expression here")
        close = _find_matching(text, paren, "(", ")")
        if close < 0:
            raise UnsupportedFeatureError(f"unbalanced parentheses after {m.group(1)}")
        type_text = text[lt + 1:gt]
        text = (text[:m.start()] + "((" + type_text + ")" + text[paren:close + 1] + ")"
                + text[close + 1:])


def _remove_balanced_call(text: str, pattern: re.Pattern) -> str:
    """Remove ``name(...)`` occurrences such as ``__launch_bounds__(256, 2)``."""
    while True:
        m = pattern.search(text)
        if not m:
            return text
        paren = text.find("(", m.end() - 1)
        close = _find_matching(text, paren, "(", ")")
        inner = text[paren:close + 1]
        text = text[:m.start()] + "\n" * inner.count("\n") + text[close + 1:]


_LAUNCH_BOUNDS = re.compile(r"\b__launch_bounds__\s*\(")
_EXTERN_C_BLOCK = re.compile(r'\bextern\s+"C"\s*\{')
_EXTERN_C = re.compile(r'\bextern\s+"C"\s*')


def _remove_extern_c(text: str) -> str:
    while True:
        m = _EXTERN_C_BLOCK.search(text)
        if not m:
            break
        brace = m.end() - 1
        close = _find_matching(text, brace, "{", "}")
        if close < 0:
            raise CompileError('extern "C" { has no closing brace')
        text = (text[:m.start()] + " " * (m.end() - m.start()) + text[m.end():close]
                + " " + text[close + 1:])
    return _EXTERN_C.sub("", text)


def _line_of(text: str, pos: int) -> int:
    """The student's line number at `pos` of preprocessed text (reads the #line directives)."""
    line = 1
    for raw in text[:pos].split("\n")[:-1]:
        m = re.match(r'\s*#\s*line\s+(\d+)', raw)
        if m:
            line = int(m.group(1))
        else:
            line += 1
    return line


def _check_unsupported(text: str, source_lines) -> None:
    code_only = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    for pattern, what, advice in _UNSUPPORTED:
        m = pattern.search(code_only)
        if m:
            line = _line_of(code_only, m.start())
            construct = what.format(m.group(0).strip())
            src = source_lines[line - 1] if 0 < line <= len(source_lines) else None
            raise UnsupportedFeatureError(
                f"{SOURCE_NAME}:{line}: the CPU emulator does not support {construct}: {advice}",
                line=line, source_line=src)


def preprocess(source: str, options=None) -> Preprocessed:
    """Run stage 1 on `source` (a str of CUDA C) with nvcc-style `options`.

    Returns a `Preprocessed`. Raises `CompileError` for preprocessor errors (``#error``,
    an unterminated ``#if``) and `UnsupportedFeatureError` for C++ the emulator cannot run,
    both citing the student's line.
    """
    if not isinstance(source, str):
        raise CompileError(f"the kernel source must be a str, got {type(source).__name__}")
    defines, undefines = parse_options(options)
    source_lines = tuple(source.split("\n"))
    pp = _Preprocessor()
    for name, value in defines.items():
        pp.define(f"{name} {value}")
    for name in undefines:
        pp.undef(name)
    pp.parse(source, source=SOURCE_NAME)
    out = io.StringIO()
    pp.write(out)
    if pp.errors:
        line, msg = pp.errors[0]
        src = source_lines[line - 1] if line and 0 < line <= len(source_lines) else None
        raise CompileError(f"{SOURCE_NAME}:{line}: preprocessor error: {msg}", line=line,
                           source_line=src)
    text = out.getvalue()
    if not text.lstrip().startswith("#line"):
        text = f'#line 1 "{SOURCE_NAME}"\n' + text
    _check_unsupported(text, source_lines)
    text = _remove_extern_c(text)
    text = _remove_balanced_call(text, _LAUNCH_BOUNDS)
    for pattern, repl in _KEYWORD_REWRITES:
        text = pattern.sub(repl, text)
    text = _rewrite_casts(text)
    return Preprocessed(text=PRELUDE + text, source_lines=source_lines, defines=defines)
