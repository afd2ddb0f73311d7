"""Stage 1 of the front end: CUDA C++ source -> preprocessed text for clang, line numbers intact.

Input: the student's source and nvcc-style options (``-DTILE=32``, ``-D PAD=1``, ``-UX``;
other options are accepted and ignored). Output: a `Preprocessed` holding the text whose
``#line`` directives point back at the student's own lines, plus the original lines for
error messages.

This is OUR preprocessor, not clang's, for one security property: it never opens a file.
clang (stage 2) therefore never sees an ``#include``, and is run with -nostdinc
-nobuiltininc, the source on stdin and an empty working directory.

Steps:
1. pcpp runs the C preprocessor (macros, ``#if``/``#ifdef``, ``-D``), with nvcc's device-side
   macros predefined (`PREDEFINED_MACROS`: ``__CUDACC__``, ``__NVCC__``, ``__CUDA_ARCH__`` =
   900, ``__CUDACC_VER_MAJOR__`` = 13, ``__CUDACC_VER_MINOR__`` = 0). ``#include`` of a header
   name of the C and C++ standard libraries or of the CUDA toolkit (headers.py:
   ``cuda_runtime.h``, ``cstdio``, ``vector``, ``cublas_v2.h``, ...) is satisfied inside, with
   what device code may use from it (the prelude, prelude.py); ``<cooperative_groups.h>``
   turns on the prelude's cooperative groups; a C++ header inside PyCUDA's default
   ``extern "C"`` wrapping is refused as nvcc refuses it; any other ``#include`` is a
   `CompileError` at its line. Macro expansion has caps
   (`MAX_MACRO_DEPTH`, `MAX_EXPANSION_TOKENS`), and so has the source (`MAX_SOURCE_CHARS`):
   a macro bomb ends in a `CompileError` in well under a second.
   CUDA's keywords (``__global__``, ``__shared__``, ``__launch_bounds__(...)``) are left
   as they are: the prelude defines them for clang (prelude.KEYWORDS), so every column
   clang reports is the student's.
2. Half precision (``__half``) is refused here with an `UnsupportedFeatureError` naming the
   construct and its line.
"""

from __future__ import annotations

import functools
import io
import re
import time
from dataclasses import dataclass

import pcpp
import pcpp.parser

from ...errors import CompileError, UnsupportedFeatureError
from .. import disk_cache
from .headers import COOPERATIVE_GROUPS_HEADERS, HEADERS, NVCC_REFUSED

SOURCE_NAME = "kernel.cu"


def _token_class():
    lexer = pcpp.parser.default_lexer()
    lexer.input("x")
    return type(lexer.token())


_LexToken = _token_class()


def _copy_token(tok):
    new = _LexToken.__new__(_LexToken)
    new.__dict__.update(tok.__dict__)
    return new


# pcpp copies a token (copy.copy) for every token of every macro it expands: tens of
# thousands for a ladder kernel with its -D tile shape, each through copy's generic
# __reduce_ex__ path. The same shallow copy (a new token with the same attributes), made
# directly, takes about a quarter off the preprocessor's time.
if "__copy__" not in vars(_LexToken):
    _LexToken.__copy__ = _copy_token

# The macros nvcc predefines when it compiles device code, with the values of the H200's
# toolkit (nvcc 13.0, sm_90): the emulator runs the device side of the source, so an
# ``#ifdef __CUDA_ARCH__`` selects the same branch here as in the GPU build (a grader must
# run the source the GPU runs). ``-U`` and ``-D`` options apply after them.
PREDEFINED_MACROS = {
    "__CUDACC__": "1",
    "__NVCC__": "1",
    "__CUDA_ARCH__": "900",
    "__CUDACC_VER_MAJOR__": "13",
    "__CUDACC_VER_MINOR__": "0",
    # nvcc 13's default dialect (C++17), as clang is run (-std=c++17). Without it pcpp took
    # '#if __cplusplus >= 201103L' as false: another branch than the GPU build's.
    "__cplusplus": "201703L",
}

# Macros the C and CUDA headers define that the source may use without including them
# (nvcc's <cuda_runtime.h> brings <stddef.h>, and <math.h> through crt/math_functions.h,
# whose constants glibc defines as double literals: `M_PI` is a double, `(float)M_PI` or
# `2.0f / M_PI` as in C).
MATH_CONSTANTS = {
    "M_E": "2.7182818284590452354", "M_LOG2E": "1.4426950408889634074",
    "M_LOG10E": "0.43429448190325182765", "M_LN2": "0.69314718055994530942",
    "M_LN10": "2.30258509299404568402", "M_PI": "3.14159265358979323846",
    "M_PI_2": "1.57079632679489661923", "M_PI_4": "0.78539816339744830962",
    "M_1_PI": "0.31830988618379067154", "M_2_PI": "0.63661977236758134308",
    "M_2_SQRTPI": "1.12837916709551257390", "M_SQRT2": "1.41421356237309504880",
    "M_SQRT1_2": "0.70710678118654752440",
}
# <limits.h> as gcc defines it for x86-64 Linux (char signed, long 64-bit): nvcc's
# cuda_runtime.h, included in every .cu file, brings it (driver_types.h includes
# <limits.h> and <stddef.h>), so UINT_MAX needs no #include.
LIMITS = {
    "CHAR_BIT": "8", "SCHAR_MIN": "(-128)", "SCHAR_MAX": "127", "UCHAR_MAX": "255",
    "CHAR_MIN": "(-128)", "CHAR_MAX": "127", "SHRT_MIN": "(-32768)", "SHRT_MAX": "32767",
    "USHRT_MAX": "65535", "INT_MIN": "(-INT_MAX - 1)", "INT_MAX": "2147483647",
    "UINT_MAX": "4294967295U", "LONG_MIN": "(-LONG_MAX - 1L)",
    "LONG_MAX": "9223372036854775807L", "ULONG_MAX": "18446744073709551615UL",
    "LLONG_MIN": "(-LLONG_MAX - 1LL)", "LLONG_MAX": "9223372036854775807LL",
    "ULLONG_MAX": "18446744073709551615ULL",
}
HEADER_MACROS = {"NULL": "0", **MATH_CONSTANTS, **LIMITS}

# Macros only a header's #include brings: <float.h> (gcc's values for IEEE binary32 and
# binary64) and the CUDA toolkit's <math_constants.h> (CUDART_*: the bit patterns and
# rounded constants its header gives).
FLOAT_LIMITS = {
    "FLT_RADIX": "2", "FLT_MANT_DIG": "24", "DBL_MANT_DIG": "53", "FLT_DIG": "6",
    "DBL_DIG": "15", "FLT_MIN_EXP": "(-125)", "DBL_MIN_EXP": "(-1021)", "FLT_MAX_EXP": "128",
    "DBL_MAX_EXP": "1024", "FLT_MAX": "3.40282346638528859811704183484516925e+38F",
    "FLT_MIN": "1.17549435082228750796873653722224568e-38F",
    "FLT_EPSILON": "1.19209289550781250000000000000000000e-7F",
    "FLT_TRUE_MIN": "1.40129846432481707092372958328991613e-45F",
    "DBL_MAX": "1.79769313486231570814527423731704357e+308",
    "DBL_MIN": "2.22507385850720138309023271733240406e-308",
    "DBL_EPSILON": "2.22044604925031308084726333618164062e-16",
    "DBL_TRUE_MIN": "4.94065645841246544176568792868221372e-324",
}
CUDART_CONSTANTS = {
    "CUDART_INF_F": "__int_as_float(0x7f800000U)", "CUDART_NAN_F": "__int_as_float(0x7fffffffU)",
    "CUDART_MIN_DENORM_F": "__int_as_float(0x00000001U)",
    "CUDART_MAX_NORMAL_F": "__int_as_float(0x7f7fffffU)",
    "CUDART_NEG_ZERO_F": "__int_as_float(0x80000000U)", "CUDART_ZERO_F": "0.0F",
    "CUDART_ONE_F": "1.0F", "CUDART_SQRT_HALF_F": "0.707106781F",
    "CUDART_SQRT_TWO_F": "1.414213562F", "CUDART_THIRD_F": "0.333333333F",
    "CUDART_PIO4_F": "0.785398163F", "CUDART_PIO2_F": "1.570796327F",
    "CUDART_3PIO4_F": "2.356194490F", "CUDART_2_OVER_PI_F": "0.636619772F",
    "CUDART_SQRT_2_OVER_PI_F": "0.797884561F", "CUDART_PI_F": "3.141592654F",
    "CUDART_L2E_F": "1.442695041F", "CUDART_L2T_F": "3.321928094F",
    "CUDART_LG2_F": "0.301029996F", "CUDART_LGE_F": "0.434294482F",
    "CUDART_LN2_F": "0.693147181F", "CUDART_LNT_F": "2.302585093F",
    "CUDART_LNPI_F": "1.144729886F", "CUDART_TWO_TO_23_F": "8388608.0F",
    "CUDART_TWO_TO_24_F": "16777216.0F", "CUDART_TWO_TO_31_F": "2147483648.0F",
    "CUDART_TWO_TO_32_F": "4294967296.0F",
    "CUDART_INF": "__longlong_as_double(0x7ff0000000000000ULL)",
    "CUDART_NAN": "__longlong_as_double(0xfff8000000000000ULL)",
    "CUDART_NEG_ZERO": "__longlong_as_double(0x8000000000000000ULL)",
    "CUDART_MIN_DENORM": "__longlong_as_double(0x0000000000000001ULL)",
    "CUDART_ZERO": "0.0", "CUDART_ONE": "1.0", "CUDART_SQRT_TWO": "1.4142135623730951e+0",
    "CUDART_SQRT_HALF": "7.0710678118654757e-1", "CUDART_THIRD": "3.3333333333333333e-1",
    "CUDART_PIO4": "7.8539816339744828e-1", "CUDART_PIO2": "1.5707963267948966e+0",
    "CUDART_3PIO4": "2.3561944901923448e+0", "CUDART_2_OVER_PI": "6.3661977236758138e-1",
    "CUDART_PI": "3.1415926535897931e+0", "CUDART_2PI": "6.2831853071795862e+0",
    "CUDART_SQRT_PI": "1.7724538509055159e+0", "CUDART_SQRT_2_OVER_PI": "7.9788456080286536e-1",
    "CUDART_L2E": "1.4426950408889634e+0", "CUDART_L2T": "3.3219280948873622e+0",
    "CUDART_LG2": "3.0102999566398120e-1", "CUDART_LGE": "4.3429448190325182e-1",
    "CUDART_LN2": "6.9314718055994529e-1", "CUDART_LNT": "2.3025850929940459e+0",
    "CUDART_LNPI": "1.1447298858494002e+0",
}
INCLUDED_MACROS = {"float.h": FLOAT_LIMITS, "cfloat": FLOAT_LIMITS,
                   "math_constants.h": CUDART_CONSTANTS}

# The header names an #include may give (every C, C++ and CUDA toolkit header: headers.py)
# are satisfied without reading anything; any other name is a CompileError.
KNOWN_HEADERS = frozenset(HEADERS)
NO_FILES = "the emulator reads no files: paste what you need into your source"
PASSED_PRAGMAS = ("unroll", "nounroll")   # the only #pragma / _Pragma clang is given
_PRAGMA_OPERATOR = re.compile(r'\b_Pragma\b')
_SAFE_PRAGMA_OPERATOR = re.compile(r'_Pragma\s*\(\s*"\s*(?:' + "|".join(PASSED_PRAGMAS)
                                   + r')\b[^"\\]*"\s*\)')

MAX_SOURCE_CHARS = 256 * 1024       # a kernel file of 5,000 long lines is about 200 KB
MAX_MACRO_DEPTH = 100               # macros expanding macros (or arguments), nested
MAX_EXPANSION_TOKENS = 100_000      # tokens made by nested macro expansion, summed
MAX_PREPROCESS_SECONDS = 10.0       # a last safety net behind the two caps above

_UNSUPPORTED = [
    (re.compile(r"\b(__half2?|half2?|__nv_bfloat162?)\b"), "half-precision type '{0}'",
     "use float"),
]


@dataclass(frozen=True)
class Preprocessed:
    """The result of stage 1.

    `text`: CUDA C++ for clang (the preprocessed source with #line directives, CUDA's
    keywords spelled as clang's attributes; the prelude is added by the clang stage).
    `source_lines`: the student's original lines (index 0 is line 1), for error messages.
    `defines`: the -D macros applied, as a dict name -> value text.
    `included`: the header names the source includes (headers.py), in order.
    """

    text: str
    source_lines: tuple
    defines: dict
    float_mode: "FloatMode" = None
    cooperative_groups: bool = False
    included: tuple = ()


@dataclass(frozen=True)
class FloatMode:
    """nvcc's floating-point options, as the compiler applies them (nvcc's defaults).

    `fmad`: contract a float multiply feeding an add or subtract into one fused
    multiply-add (``-fmad=true``). `ftz`: flush float32 denormals to zero, in inputs and
    results (``-ftz=true``). `prec_div` / `prec_sqrt`: IEEE round-to-nearest float32
    division and square root (``-prec-div=true``, ``-prec-sqrt=true``); when false, the
    approximate ``div.full.f32`` and ``sqrt.approx.f32``. `fast_math`: ``--use_fast_math``,
    which also sets ftz, prec_div=false, prec_sqrt=false and fmad, and makes sinf, cosf,
    tanf, expf, exp10f, logf, log2f, log10f and powf their ``__`` intrinsics.
    """

    fmad: bool = True
    ftz: bool = False
    prec_div: bool = True
    prec_sqrt: bool = True
    fast_math: bool = False


_BOOL_OPTIONS = {"fmad": "fmad", "ftz": "ftz", "prec-div": "prec_div",
                 "prec-sqrt": "prec_sqrt"}


def float_mode(options) -> FloatMode:
    """The `FloatMode` nvcc `options` select: ``-fmad=``, ``-ftz=``, ``-prec-div=``,
    ``-prec-sqrt=`` (``true``/``false``, with one dash or two) and ``--use_fast_math``
    (``-use_fast_math``). As with nvcc, ``--use_fast_math`` sets the other four, and an
    explicit option overrides it whatever the order. Raises `CompileError` for a value
    other than true or false."""
    fast = any(o in ("--use_fast_math", "-use_fast_math") for o in options or ()
               if isinstance(o, str))
    values = dict(fmad=True, ftz=fast, prec_div=not fast, prec_sqrt=not fast)
    for opt in options or ():
        if not isinstance(opt, str):
            continue
        m = re.fullmatch(r"--?(fmad|ftz|prec-div|prec-sqrt)(?:[= ](.*))?", opt)
        if m is None:
            continue
        value = (m.group(2) or "true").strip().lower()
        if value not in ("true", "false"):
            raise CompileError(f"bad option {opt!r}: write {opt.split('=')[0]}=true or "
                               f"{opt.split('=')[0]}=false")
        values[_BOOL_OPTIONS[m.group(1)]] = value == "true"
    return FloatMode(fast_math=fast, **values)


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
    (``-O3``, ``-lineinfo``, ``-arch=sm_90``) is ignored here; the floating-point options
    (``-fmad``, ``-ftz``, ``-prec-div``, ``-prec-sqrt``, ``--use_fast_math``) are read by
    `float_mode`.
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


def extern_c_message(name: str) -> str:
    """Why `name`, a C++ header, cannot be included in PyCUDA's default mode, and what to
    write instead."""
    return (f"#include <{name}> inside the extern \"C\" {{ }} that SourceModule wraps the "
            f"source in by default: <{name}> declares C++ (templates, overloads), which C "
            f"linkage forbids, and nvcc refuses it (\"this declaration may not have "
            f"extern \"C\" linkage\"). Pass no_extern_c=True to SourceModule. The kernels "
            f"then keep C++ names: tilinglib's get_function(\"name\") still finds one by its "
            f"name (a template's by its text, \"k<128, float>\"), on the GPU through its "
            f"mangled name (tilinglib.toolchain.frontend.mangled_names(source)); with PyCUDA's own "
            f"SourceModule pass that mangled name, or write extern \"C\" before a kernel "
            f"that is not a template")


class _Stop(Exception):
    """Raised inside pcpp to stop preprocessing at once: (line, message)."""

    def __init__(self, line, message):
        super().__init__(message)
        self.line, self.message = line, message


@functools.lru_cache(maxsize=1)
def _base_lexer():
    """pcpp's lexer, built once (building it is about a third of a small source's time)."""
    return pcpp.preprocessor.default_lexer()


class _Preprocessor(pcpp.Preprocessor):
    def __init__(self, extern_c: bool = False, cxx_lines=frozenset()):
        super().__init__(lexer=_base_lexer().clone())
        self.line_directive = "#line"
        self.errors: list[tuple[int | None, str]] = []
        self._depth = 0
        self.cooperative_groups = False
        self.extern_c = extern_c          # the source goes inside PyCUDA's extern "C" { }
        self.cxx_lines = cxx_lines        # lines inside an extern "C++" { } of the source
        self.included: list = []          # the header names included, in order
        self._made = 0
        self._deadline = time.monotonic() + MAX_PREPROCESS_SECONDS

    # --- no host file is ever opened
    def include(self, tokens, original_line):
        """`#include`: a known header is satisfied without reading anything; every other
        name is an error at its line. (Replaces pcpp's include, which searches the disk.)"""
        line = original_line[0].lineno if original_line else None
        if tokens and tokens[0].value != "<" and tokens[0].type != self.t_STRING:
            tokens = self.tokenstrip(self.expand_macros(tokens))
        name = None
        if tokens and tokens[0].value == "<":
            close = next((i for i, t in enumerate(tokens) if t.value == ">"), None)
            if close is not None:
                name = "".join(t.value for t in tokens[1:close])
        elif tokens and tokens[0].type == self.t_STRING and tokens[0].value.startswith('"'):
            name = tokens[0].value[1:-1]
        if name is None:
            raise _Stop(line, f"malformed #include: {NO_FILES}")
        if name in NVCC_REFUSED:
            raise _Stop(line, f"#include <{name}>: nvcc refuses this header: {NVCC_REFUSED[name]}")
        known = HEADERS.get(name)
        if known is not None:
            if known.cxx and self.extern_c and line not in self.cxx_lines:
                raise _Stop(line, extern_c_message(name))
            if name in COOPERATIVE_GROUPS_HEADERS:        # each includes the first
                self.cooperative_groups = True
            if name not in self.included:
                self.included.append(name)
                for macro, value in INCLUDED_MACROS.get(name, {}).items():
                    if macro not in self.macros:      # the student's own #define wins
                        self.define(f"{macro} {value}")
            return iter(())
        shown = name if len(name) <= 80 else name[:77] + "..."
        raise _Stop(line, f"#include of '{shown}': {NO_FILES} (it knows the header names of "
                          f"the C and C++ standard libraries and of the CUDA toolkit: "
                          f"cuda_runtime.h, cstdio, vector, cublas_v2.h, ...)")

    def on_file_open(self, is_system_include, includepath):
        raise OSError(NO_FILES)         # never reached: include() above opens nothing

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
        raise _Stop(None, NO_FILES)

    # --- caps on macro expansion
    def expand_macros(self, tokens, expanding_from=[]):    # noqa: B006 (pcpp's signature)
        # pcpp keeps the line of the source token being expanded (for __LINE__): blame it.
        line = self.linemacro or (tokens[0].lineno if tokens else None)
        if self._depth >= MAX_MACRO_DEPTH:
            raise _Stop(line, f"macros nested more than {MAX_MACRO_DEPTH} deep (a macro whose "
                              f"expansion uses another macro, and so on): write it out")
        if time.monotonic() > self._deadline:
            raise _Stop(line, f"preprocessing took more than {MAX_PREPROCESS_SECONDS:g} s")
        self._depth += 1
        try:
            out = super().expand_macros(tokens, expanding_from)
        finally:
            self._depth -= 1
        if self._depth:                 # a nested expansion (the source's own text is not)
            self._made += len(out)
            if self._made > MAX_EXPANSION_TOKENS:
                raise _Stop(line, f"macro expansion made more than {MAX_EXPANSION_TOKENS:,} "
                                  f"tokens (macros that double at each level grow as 2^n): "
                                  f"the emulator stops here")
        return out

    def on_error(self, file, line, msg):
        self.errors.append((line, msg))
        self.return_code += 1

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
        if directive.value == "pragma":
            words = [tok.value for tok in toks if tok.value.strip()]
            # Only the pragmas a kernel needs reach clang: others can name files
            # ("GCC dependency") or change what clang does; nvcc ignores unknown ones too.
            return None if words and words[0] in PASSED_PRAGMAS else True
        if directive.value == "error":
            text = "".join(tok.value for tok in toks).strip()
            self.errors.append((directive.lineno, f"#error {text}"))
            return True
        if directive.value == "warning":
            return True
        if directive.value == "line":
            # dropped: messages name the student's own lines. Passed on, '#line 2000000000'
            # made clang.flatten_lines build a list of 2e9 blank lines (16 GB).
            return True
        if directive.value in ("include_next", "import", "embed"):
            raise _Stop(directive.lineno, f"#{directive.value}: {NO_FILES}")
        raise _Stop(directive.lineno, f"#{directive.value} is not a preprocessor directive "
                                      f"(the emulator knows #define, #undef, #if, #ifdef, "
                                      f"#ifndef, #elif, #else, #endif, #include, #line, "
                                      f"#pragma, #error and #warning)")


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


# What clang would read as a directive in stage 1's text. pcpp leaves no comment and no
# line splice, but clang lexes again: the digraph '%:' is '#' to clang (not to pcpp), '\r'
# ends a line for clang, and a macro can expand to '#' at the start of a line ('#define H #'
# then 'H include "/etc/passwd"'); each of those reached clang as an #include of a host
# file. The only directive lines stage 1 writes are these:
_OWN_DIRECTIVE = re.compile(r'[ \t]*#[ \t]*(?:line[ \t]+\d+(?:[ \t]+"[^"\\]*")?|pragma[ \t]+'
                            r'(?:' + "|".join(PASSED_PRAGMAS) + r')\b[^"\'\\\r\n]*)[ \t]*')
_HASH = re.compile(r"#|%:|\?\?=")          # "#", its digraph and its trigraph
_PRINTABLE = re.compile(r"[\x21-\x7e]")
_SPLICE = re.compile(r"(?:\\|\?\?/)[ \t\f\v]*[\r\n]")


def check_no_directives(text: str, source_lines) -> None:
    """Refuse stage 1's `text` if clang could read any directive in it but the #line and
    #pragma unroll lines stage 1 writes: a '#' (or '%:') with nothing before it on its line
    (lines end at '\\r' as well as '\\n' for clang) but blanks (NUL and Unicode blanks
    included: anything but printable ASCII) or the end of a comment, and
    any line splice left over. Conservative: a '#' inside a string literal at the start of
    a line is refused too. Raises `CompileError` at the student's line."""
    def refuse(pos, what):
        line = _line_of(text, pos)
        src = source_lines[line - 1] if 0 < line <= len(source_lines) else None
        raise CompileError(f"{SOURCE_NAME}:{line}: {what}: {NO_FILES} (only #define, #if..."
                           f" #endif, #include of a known header and #pragma unroll are "
                           f"directives here; '%:' is '#' in C++)", line=line,
                           source_line=src)

    m = _SPLICE.search(text)
    if m:
        refuse(m.start(), "a line splice (a backslash at the end of a line) outside a "
                          "#define")
    start = 0
    for raw in re.split(r"(\r\n|\r|\n)", text):
        if raw in ("\r\n", "\r", "\n"):
            start += len(raw)
            continue
        if not _OWN_DIRECTIVE.fullmatch(raw) or "/*" in raw or "//" in raw:
            for h in _HASH.finditer(raw):
                before = raw[:h.start()]
                # clang skips NUL and Unicode blanks (U+00A0, U+2003...) as whitespace: only
                # printable ASCII before the '#' can make it a token that is not a line's first
                if not _PRINTABLE.search(before) or "*/" in before:
                    refuse(start + h.start(), f"'{h.group(0)}' starts a directive that "
                                              f"clang would run")
        start += len(raw)


def _check_text(source: str, source_lines) -> None:
    """Refuse a str that is no text a file could hold (a lone surrogate such as '\\ud800')."""
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = source.count("\n", 0, exc.start) + 1
        raise CompileError(f"{SOURCE_NAME}:{line}: the source holds the code point "
                           f"U+{ord(source[exc.start]):04X}, a lone surrogate, which is not "
                           f"text: retype the character", line=line,
                           source_line=source_lines[line - 1].encode("utf-8", "replace")
                           .decode("utf-8")) from None


_EXTERN_CXX = re.compile(r'extern\s*"C\+\+"\s*\{')
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _extern_cxx_lines(source: str) -> frozenset:
    """The line numbers (from 1) inside the ``extern "C++" { ... }`` blocks of `source`,
    where nvcc accepts a C++ header even inside PyCUDA's ``extern "C" { }``: from the
    opening brace's line to the matching closing brace's (comments skipped)."""
    if "C++" not in source:
        return frozenset()
    text = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)
    lines = set()
    for m in _EXTERN_CXX.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        first = text.count("\n", 0, m.start()) + 1
        lines.update(range(first, text.count("\n", 0, i) + 2))
    return frozenset(lines)


def preprocess(source: str, options=None, extern_c: bool = False) -> Preprocessed:
    """Run stage 1 on `source` (a str of CUDA C) with nvcc-style `options`.

    It reads no file and nothing of the environment, so a success is kept in the disk
    cache (toolchain/disk_cache.py) by source, options and `extern_c`, and found there by a
    later process running the same tilinglib.

    `extern_c`: the source is compiled inside PyCUDA's default ``extern "C" { }`` wrapping
    (``SourceModule(..., no_extern_c=False)``), where an ``#include`` of a C++ header is
    refused as nvcc refuses it (`extern_c_message`), unless it stands inside an
    ``extern "C++" { }`` block (`_extern_cxx_lines`), as nvcc accepts it.

    Returns a `Preprocessed`. Raises `CompileError` for preprocessor errors (``#error``,
    an unterminated ``#if``, an ``#include`` of a name that is no C, C++ or CUDA header) and
    `UnsupportedFeatureError` for C++ the emulator cannot run, both citing the student's
    line.
    """
    if isinstance(source, str) and all(isinstance(o, str) for o in options or ()):
        key = disk_cache.key_of(source, tuple(options or ()), bool(extern_c))
        pre = disk_cache.get("preprocessed", key)
        if isinstance(pre, Preprocessed):
            return pre
        pre = _run_preprocessor(source, options, extern_c)
        disk_cache.put("preprocessed", key, pre)
        return pre
    return _run_preprocessor(source, options, extern_c)


def _run_preprocessor(source, options, extern_c: bool) -> Preprocessed:
    if not isinstance(source, str):
        raise CompileError(f"the kernel source must be a str, got {type(source).__name__}")
    defines, undefines = parse_options(options)
    size = len(source) + sum(len(k) + len(v) for k, v in defines.items())
    if size > MAX_SOURCE_CHARS:
        raise CompileError(f"the source (with its -D options) has {size:,} characters, over "
                           f"the emulator's {MAX_SOURCE_CHARS:,}: a kernel is a few hundred "
                           f"lines")
    # A file saved with a UTF-8 byte-order mark (Visual Studio's default) starts with
    # U+FEFF; gcc and clang, hence nvcc, skip it at the start of a file. Anywhere else it
    # stays a character clang refuses, as nvcc does.
    source = source.removeprefix("\ufeff")
    source_lines = tuple(source.split("\n"))
    _check_text(source, source_lines)
    pp = _Preprocessor(extern_c, _extern_cxx_lines(source) if extern_c else frozenset())
    out = io.StringIO()
    try:
        for name, value in {**PREDEFINED_MACROS, **HEADER_MACROS}.items():
            pp.define(f"{name} {value}")
        for name, value in defines.items():
            pp.define(f"{name} {value}")
        for name in undefines:
            pp.undef(name)
        pp.parse(source, source=SOURCE_NAME)
        pp.write(out)
    except _Stop as stop:
        pp.errors.insert(0, (stop.line, stop.message))
    except RecursionError:
        pp.errors.insert(0, (None, "the source is nested too deeply for the preprocessor"))
    except MemoryError:
        pp.errors.insert(0, (None, "the preprocessor ran out of memory on this source"))
    except CompileError:
        raise
    except Exception as exc:    # pcpp fails on some malformed input: say so
        pp.errors.insert(0, (None, f"the preprocessor cannot read this source "
                                   f"({type(exc).__name__})"))
    if pp.errors:
        line, msg = pp.errors[0]
        line = line or None                 # pcpp says 0 where it has no line
        src = source_lines[line - 1] if line and 0 < line <= len(source_lines) else None
        where = f"{SOURCE_NAME}:{line}" if line else SOURCE_NAME
        raise CompileError(f"{where}: preprocessor error: {msg}", line=line, source_line=src)
    text = out.getvalue()
    for m in _PRAGMA_OPERATOR.finditer(text):
        if not _SAFE_PRAGMA_OPERATOR.match(text, m.start()):
            line = _line_of(text, m.start())
            raise CompileError(f"{SOURCE_NAME}:{line}: _Pragma: the emulator accepts "
                               f"_Pragma(\"unroll\") and _Pragma(\"nounroll\") only",
                               line=line, source_line=source_lines[line - 1]
                               if 0 < line <= len(source_lines) else None)
    if not text.lstrip().startswith("#line"):
        text = f'#line 1 "{SOURCE_NAME}"\n' + text
    check_no_directives(text, source_lines)
    _check_unsupported(text, source_lines)
    return Preprocessed(text=text, source_lines=source_lines, defines=defines,
                        float_mode=float_mode(options),
                        cooperative_groups=pp.cooperative_groups,
                        included=tuple(pp.included))
