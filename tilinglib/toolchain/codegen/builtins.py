"""CUDA's built-in functions for the compiler: barriers, the math library, vector constructors,
atomics, warp intrinsics and printf.

Input: a call node with its name and argument nodes. Output: a compiled `X` whose closure
does the work on lane vectors. Argument conversions follow the function's C prototype.
FLOPs are counted as Nsight Compute counts them: one per float add, subtract or multiply,
two per fused multiply-add (fmaf); special functions (sqrtf, expf, ...) count none.
"""

from __future__ import annotations

import math
import re
import sys

import numpy as np

from ...errors import KernelRuntimeError
from . import async_copy
from ..model import c_types as ct
from ..model import values as _values
from .closures import LiteralError, X, _line, string_bytes
from ..model.memory import PRINTF_BUFFER_BYTES
from ...gpu import MAX_THREADS_PER_BLOCK, WARP_SIZE

ct_float_to_int = _values.float_to_int
F, D, I, U = ct.FLOAT, ct.DOUBLE, ct.INT, ct.UINT


def _f64(func):
    """A float function computed in float64 and rounded once to the argument's float type:
    correctly rounded for nearly every input (the GPU's are within the Math API's ulp
    bounds of the exact value, see docs/emulator.md)."""
    def run(*args):
        with np.errstate(all="ignore"):
            return func(*(np.asarray(a, np.float64) for a in args))
    return run


def _round_half_away(x):
    """roundf/round: to nearest, halves away from zero, exactly (0.49999997f gives 0:
    adding 0.5 first would round up)."""
    with np.errstate(invalid="ignore"):
        r = np.trunc(x)
        up = np.abs(x - r) >= 0.5
        return r + np.copysign(up.astype(r.dtype), x)


def _fmin(x, y):
    """fminf/fmin: a NaN operand gives the other; -0 is below +0 (fminf(0, -0) is -0 on the
    H200, NumPy's fmin on arrays gives its first operand)."""
    r = np.fmin(x, y)
    zeros = (x == 0) & (y == 0)
    if np.any(zeros):
        r = np.where(zeros, np.where(np.signbit(x) | np.signbit(y), -np.abs(r), np.abs(r)), r)
    return r


def _fmax(x, y):
    """fmaxf/fmax: a NaN operand gives the other; +0 is above -0."""
    r = np.fmax(x, y)
    zeros = (x == 0) & (y == 0)
    if np.any(zeros):
        r = np.where(zeros, np.where(np.signbit(x) & np.signbit(y), -np.abs(r), np.abs(r)), r)
    return r


def _saturate(x):
    """__saturatef: clamp to [0, 1]; NaN gives 0 (CUDA Math API)."""
    return np.where(x > 0, np.minimum(x, np.float32(1)), np.float32(0))


def _mul24(x, y):
    """__mul24: the low 32 bits of the product of the low 24 bits of x and y, each
    sign-extended (PTX mul24.lo.s32)."""
    x24 = (np.asarray(x, np.int32) << 8) >> 8
    y24 = (np.asarray(y, np.int32) << 8) >> 8
    return (x24.astype(np.int64) * y24).astype(np.int32)


def _umul24(x, y):
    """__umul24: the low 32 bits of the product of the low 24 bits (PTX mul24.lo.u32)."""
    m = np.uint64(0xFFFFFF)
    return ((np.asarray(x, np.uint64) & m) * (np.asarray(y, np.uint64) & m)).astype(np.uint32)


def _f2i(rounding, to):
    return lambda x: ct_float_to_int(x, np.asarray(x).dtype, np.dtype(to), rounding)


def _remainder(x, y):
    """remainderf: x - n*y with n = x/y rounded to nearest even (IEEE remainder), exact."""
    with np.errstate(all="ignore"):
        x64, y64 = np.asarray(x, np.float64), np.asarray(y, np.float64)
        r = np.fmod(x64, y64)                       # exact, |r| < |y|, sign of x
        ay = np.abs(y64)
        twice = np.abs(r) * 2
        n_odd = np.fmod((x64 - r) / y64, 2.0) != 0     # x - r is an exact multiple of y
        adjust = (twice > ay) | ((twice == ay) & n_odd)
        return np.where(adjust, r - np.copysign(ay, r), r)


# --- the fast intrinsics, built as the GPU builds them (SFU approximations after a float
# multiply; the emulator computes the SFU step in float64, so its error is the rounding of
# the steps around it). Bounds: CUDA Math API, "Intrinsic functions".
_INV_2PI = np.float32(0.15915494309189535)
_LOG2E = np.float32(1.4426950408889634)
_LN2 = np.float32(0.6931471805599453)


def _turns(x):
    """x * (1/2pi) as the GPU reduces the argument of sin.approx/cos.approx: a float32
    multiply rounded toward zero (FMUL.RZ; with it the H200's __sinf over [-20, 20] is
    within 2.9e-7 of sin(2 pi t), under the Math API's 2^-21.41, against 1.5e-6 with
    round-to-nearest)."""
    with np.errstate(all="ignore"):
        exact = np.asarray(x, np.float64) * np.float64(_INV_2PI)
        t = exact.astype(np.float32)
        over = np.abs(t.astype(np.float64)) > np.abs(exact)
        return np.where(over, np.nextafter(t, np.float32(0)), t).astype(np.float64)


def _sin_approx(x):
    """__sinf (sin.approx.f32): sin(2 pi t) for the reduced argument t (`_turns`)."""
    with np.errstate(all="ignore"):
        return np.sin(2 * np.pi * _turns(x))


def _cos_approx(x):
    """__cosf (cos.approx.f32): cos(2 pi t) for the reduced argument t (`_turns`)."""
    with np.errstate(all="ignore"):
        return np.cos(2 * np.pi * _turns(x))


def _exp_approx(x):
    """__expf: ex2.approx.f32 of x * log2(e) rounded to float32."""
    with np.errstate(all="ignore"):
        return np.exp2((np.asarray(x, np.float32) * _LOG2E).astype(np.float64))


def _log_approx(x):
    """__logf: lg2.approx.f32 of x, rounded, times ln 2 rounded to float32."""
    with np.errstate(all="ignore"):
        return np.log2(np.asarray(x, np.float64)).astype(np.float32) * _LN2


def _pow_approx(x, y):
    """__powf: ex2.approx(y * lg2.approx(x))."""
    with np.errstate(all="ignore"):
        lg = np.log2(np.asarray(x, np.float64)).astype(np.float32)
        return np.exp2((np.asarray(y, np.float32) * lg).astype(np.float64))


def _tan_approx(x):
    with np.errstate(all="ignore"):
        return (_sin_approx(x).astype(np.float32) / _cos_approx(x).astype(np.float32))


# Functions --use_fast_math replaces by their intrinsic (nvcc documentation, "--use_fast_math").
_FAST_MATH_NAMES = {"sinf": "__sinf", "cosf": "__cosf", "tanf": "__tanf", "expf": "__expf",
                    "exp10f": "__exp10f", "logf": "__logf", "log2f": "__log2f",
                    "log10f": "__log10f", "powf": "__powf"}

# name -> (function, argument types, return type)
_MATH = {
    "sqrtf": (np.sqrt, (F,), F), "rsqrtf": (_f64(lambda x: 1.0 / np.sqrt(x)), (F,), F),
    "expf": (_f64(np.exp), (F,), F), "__expf": (_exp_approx, (F,), F),
    "exp2f": (_f64(np.exp2), (F,), F), "logf": (_f64(np.log), (F,), F),
    "__logf": (_log_approx, (F,), F), "log2f": (_f64(np.log2), (F,), F),
    "__log2f": (_f64(np.log2), (F,), F), "log10f": (_f64(np.log10), (F,), F),
    "__log10f": (_f64(np.log10), (F,), F), "fabsf": (np.abs, (F,), F),
    "sinf": (_f64(np.sin), (F,), F), "cosf": (_f64(np.cos), (F,), F),
    "tanf": (_f64(np.tan), (F,), F), "__sinf": (_sin_approx, (F,), F),
    "__cosf": (_cos_approx, (F,), F), "__tanf": (_tan_approx, (F,), F),
    "tanhf": (_f64(np.tanh), (F,), F),
    "floorf": (np.floor, (F,), F), "ceilf": (np.ceil, (F,), F), "truncf": (np.trunc, (F,), F),
    "roundf": (_round_half_away, (F,), F),
    "fminf": (_fmin, (F, F), F), "fmaxf": (_fmax, (F, F), F),
    "powf": (_f64(np.power), (F, F), F), "__powf": (_pow_approx, (F, F), F),
    "fmodf": (np.fmod, (F, F), F), "remainderf": (_remainder, (F, F), F),
    "__fdividef": (lambda x, y: _values.fast_divide32(x, y), (F, F), F),
    "sqrt": (np.sqrt, (D,), D), "exp": (np.exp, (D,), D), "log": (np.log, (D,), D),
    "fabs": (np.abs, (D,), D), "floor": (np.floor, (D,), D), "ceil": (np.ceil, (D,), D),
    "fmin": (_fmin, (D, D), D), "fmax": (_fmax, (D, D), D), "pow": (np.power, (D, D), D),
    "fmod": (np.fmod, (D, D), D), "tanh": (np.tanh, (D,), D),
    "remainder": (_remainder, (D, D), D),
    "__float2int_rz": (_f2i(np.trunc, np.int32), (F,), I),
    "__float2uint_rz": (_f2i(np.trunc, np.uint32), (F,), U),
    "__float2uint_rn": (_f2i(np.rint, np.uint32), (F,), U),
    "__float2ll_rz": (_f2i(np.trunc, np.int64), (F,), ct.LLONG),
    "__float2ll_rn": (_f2i(np.rint, np.int64), (F,), ct.LLONG),
    "__float2ull_rz": (_f2i(np.trunc, np.uint64), (F,), ct.ULLONG),
    "__double2int_rz": (_f2i(np.trunc, np.int32), (D,), I),
    "__double2int_rn": (_f2i(np.rint, np.int32), (D,), I),
    "__int2float_rn": (lambda x: x, (F,), F),
}


def _popc(x):
    x = np.asarray(x).astype(np.uint64)
    count = np.zeros(x.shape, dtype=np.int32)
    for _ in range(64):
        count += (x & np.uint64(1)).astype(np.int32)
        x = x >> np.uint64(1)
    return count


def _clz32(x):
    x = np.asarray(x).astype(np.uint32)
    out = np.full(x.shape, 32, dtype=np.int32)
    nz = x != 0
    out[nz] = 31 - np.floor(np.log2(x[nz].astype(np.float64))).astype(np.int32)
    return out


def _ffs32(x):
    x = np.asarray(x).astype(np.int64) & 0xFFFFFFFF
    low = x & -x
    out = np.zeros(x.shape, dtype=np.int32)
    nz = low != 0
    out[nz] = np.round(np.log2(low[nz].astype(np.float64))).astype(np.int32) + 1
    return out


def _brev32(x):
    x = np.asarray(x).astype(np.uint32)
    out = np.zeros(x.shape, dtype=np.uint32)
    for i in range(32):
        out |= ((x >> np.uint32(i)) & np.uint32(1)) << np.uint32(31 - i)
    return out


def _bits(to):
    return lambda x: np.asarray(x).view(to) if isinstance(x, np.ndarray) else \
        np.array(x).view(to)[()]


LL, ULL = ct.LLONG, ct.ULLONG

# Integer intrinsics and bit reinterpretations: name -> (function, argument types, result).
_BITS = {
    "__popc": (_popc, (U,), I), "__popcll": (_popc, (ULL,), I),
    "__clz": (_clz32, (I,), I), "__ffs": (_ffs32, (I,), I), "__brev": (_brev32, (U,), U),
    "__int_as_float": (_bits(np.float32), (I,), F), "__float_as_int": (_bits(np.int32), (F,), I),
    "__uint_as_float": (_bits(np.float32), (U,), F),
    "__float_as_uint": (_bits(np.uint32), (F,), U),
    "__mul24": (_mul24, (I, I), I), "__umul24": (_umul24, (U, U), U),
    "__float2int_rn": (_f2i(np.rint, np.int32), (F,), I),
    "__float2int_rd": (_f2i(np.floor, np.int32), (F,), I),
    "__float2int_ru": (_f2i(np.ceil, np.int32), (F,), I), "__saturatef": (_saturate, (F,), F),
    "__double_as_longlong": (_bits(np.int64), (D,), ct.LLONG),
    "__longlong_as_double": (_bits(np.float64), (ct.LLONG,), D),
    "signbit": (lambda x: np.signbit(x).astype(np.int32), (D,), I),
    "__fadd_rn": (np.add, (F, F), F), "__fmul_rn": (np.multiply, (F, F), F),
    "__fsub_rn": (np.subtract, (F, F), F), "__fdiv_rn": (np.true_divide, (F, F), F),
    "__frcp_rn": (lambda x: np.float32(1) / x, (F,), F), "__fsqrt_rn": (np.sqrt, (F,), F),
    "copysignf": (np.copysign, (F, F), F), "hypotf": (np.hypot, (F, F), F),
    "atan2f": (_f64(np.arctan2), (F, F), F), "atanf": (_f64(np.arctan), (F,), F),
    "asinf": (_f64(np.arcsin), (F,), F), "acosf": (_f64(np.arccos), (F,), F),
    "sinhf": (_f64(np.sinh), (F,), F), "coshf": (_f64(np.cosh), (F,), F),
    "log1pf": (_f64(np.log1p), (F,), F), "expm1f": (_f64(np.expm1), (F,), F),
    "exp10f": (_f64(lambda x: np.power(10.0, x)), (F,), F),
    "__exp10f": (lambda x: _exp_approx(np.asarray(x, np.float32) * np.float32(2.302585)), (F,), F),
    "cbrtf": (_f64(np.cbrt), (F,), F),
    "rintf": (np.rint, (F,), F), "nearbyintf": (np.rint, (F,), F),
    "sin": (np.sin, (D,), D), "cos": (np.cos, (D,), D), "log2": (np.log2, (D,), D),
    "exp2": (np.exp2, (D,), D), "log10": (np.log10, (D,), D), "trunc": (np.trunc, (D,), D),
    "round": (_round_half_away, (D,), D),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), (D,), D), "cbrt": (np.cbrt, (D,), D),
    # double: exact (IEEE, as the PTX .rn instructions and the Math API's 0-ulp functions)
    "copysign": (np.copysign, (D, D), D), "rint": (np.rint, (D,), D),
    "nearbyint": (np.rint, (D,), D), "__dadd_rn": (np.add, (D, D), D),
    "__dsub_rn": (np.subtract, (D, D), D), "__dmul_rn": (np.multiply, (D, D), D),
    "__ddiv_rn": (np.true_divide, (D, D), D), "__dsqrt_rn": (np.sqrt, (D,), D),
    "__drcp_rn": (lambda x: 1.0 / x, (D,), D),
    # double: within the Math API's bounds (1 to 2 ulp), computed by NumPy
    "hypot": (np.hypot, (D, D), D), "atan2": (np.arctan2, (D, D), D),
    "atan": (np.arctan, (D,), D), "asin": (np.arcsin, (D,), D), "acos": (np.arccos, (D,), D),
    "sinh": (np.sinh, (D,), D), "cosh": (np.cosh, (D,), D), "tan": (np.tan, (D,), D),
    "log1p": (np.log1p, (D,), D), "expm1": (np.expm1, (D,), D),
    "exp10": (lambda x: np.power(10.0, x), (D,), D),
}
_MATH.update(_BITS)

_NO_OPS = {"__threadfence", "__threadfence_block", "__threadfence_system"}

# Intrinsics that are one floating-point add, subtract, multiply or divide: each counts one
# FLOP per active lane in LaunchReport.flops, as `+`, `-`, `*` and `/` do (Nsight Compute's
# FADD, FMUL; `__fmaf_rn` counts 2, as `fmaf`).
_ARITHMETIC = frozenset({"__fadd_rn", "__fsub_rn", "__fmul_rn", "__fdiv_rn",
                         "__dadd_rn", "__dsub_rn", "__dmul_rn", "__ddiv_rn"})


def _fma(a, b, c, dtype):
    """fmaf / fma: one rounding (`values.fma`)."""
    return _values.fma(a, b, c, dtype)


def compile_builtin_call(comp, node, name, args):
    """Compile a call of the CUDA built-in `name` (a pycparser FuncCall `node` with argument
    nodes `args`) into an `X`. Raises CompileError for a wrong argument count or an unknown
    function."""
    handler = _handler(name)
    if handler is None:
        raise comp.error(node, f"'{name}' is not a function the kernel can call "
                               f"(not declared, and not a CUDA built-in the emulator knows)")
    return handler(comp, node, name, args)


def _handler(name):
    """The compile function for built-in `name`, or None."""
    if name in _HANDLERS:
        return _HANDLERS[name]
    if name in _NO_OPS:
        return _no_op
    if name in _MATH:
        return _math
    if name.startswith("make_"):
        return _make_vector
    if name.startswith("atomic"):
        return lambda comp, node, name, args: _atomic(comp, node, name, args, _line(node))
    return None


def _want(comp, node, name, args, count):
    if len(args) != count:
        raise comp.error(node, f"{name}() takes {count} argument(s), {len(args)} given")


def _call_line(ctx):
    """The student's line of the latest call into the prelude (expressions.expr_FuncCall),
    for a built-in called by the prelude's code, which has no line."""
    return getattr(ctx, "call_line", None)


def _syncthreads(comp, node, name, args):
    _want(comp, node, name, args, 0)
    line = _line(node)
    if line is None:                 # in the prelude: cg::sync(block), block.sync()
        return X(lambda ctx: ctx.syncthreads(_call_line(ctx)), ct.VOID)
    return X(lambda ctx: ctx.syncthreads(line), ct.VOID)


def _syncwarp(comp, node, name, args):
    if len(args) > 1:
        raise comp.error(node, "__syncwarp() takes at most one argument (a lane mask)")
    line = _line(node)
    if line is None:
        return X(lambda ctx: ctx.syncwarp(_call_line(ctx)), ct.VOID)
    return X(lambda ctx: ctx.syncwarp(line), ct.VOID)


def _no_op(comp, node, name, args):
    return X(lambda ctx: None, ct.VOID)


def _assert(comp, node, name, args):
    _want(comp, node, name, args, 1)
    line = _line(node)
    fc = comp.convert(comp.rvalue(comp.expr(args[0])), ct.BOOL, node)
    return X(lambda ctx: ctx.device_assert(fc(ctx), line), ct.VOID)


def _math(comp, node, name, args):
    mode = comp.float_mode
    if mode.fast_math and name in _FAST_MATH_NAMES:
        name_used = _FAST_MATH_NAMES[name]
    else:
        name_used = name
    func, argtypes, rtype = _MATH[name]
    func = _MATH[name_used][0]
    _want(comp, node, name, args, len(argtypes))
    fargs = [comp.convert(comp.rvalue(comp.expr(a)), t, a) for a, t in zip(args, argtypes)]
    dtype = rtype.dtype
    floats = rtype == F and all(t == F for t in argtypes)
    if floats and mode.ftz:         # the .ftz forms: denormal inputs and results are zeros
        inner = func
        func = lambda *v: _values.flush32(_cast(inner(*(_values.flush32(a) for a in v)),  # noqa
                                                dtype))
    if floats and name not in ("fminf", "fmaxf"):
        raw = func
        func = lambda *v: _values.canonical_nan(_cast(raw(*v), dtype))  # noqa: E731
    if len(fargs) == 1:
        f0 = fargs[0]
        return X(lambda ctx: _cast(func(f0(ctx)), dtype), rtype)
    f0, f1 = fargs
    if name in _ARITHMETIC:
        def counted(ctx):
            ctx.flops += ctx.nactive
            return _cast(func(f0(ctx), f1(ctx)), dtype)
        return X(counted, rtype)
    return X(lambda ctx: _cast(func(f0(ctx), f1(ctx)), dtype), rtype)


def _fma_call(comp, node, name, args):
    _want(comp, node, name, args, 3)
    t = D if name in ("fma", "__fma_rn") else F
    fa, fb, fc = (comp.convert(comp.rvalue(comp.expr(a)), t, a) for a in args)
    dtype = t.dtype

    flush = _values.flush32 if t == F and comp.float_mode.ftz else (lambda v: v)

    def fma(ctx):
        ctx.flops += 2 * ctx.nactive
        return _values.canonical_nan(flush(_fma(flush(fa(ctx)), flush(fb(ctx)), flush(fc(ctx)),
                                                dtype)))
    return X(fma, t)


def _make_vector(comp, node, name, args):
    st = ct.VECTOR_TYPES.get(name[len("make_"):])
    if st is None:
        raise comp.error(node, f"unknown function '{name}'")
    _want(comp, node, name, args, len(st.fields))
    fargs = [comp.convert(comp.rvalue(comp.expr(a)), f[1], a) for a, f in zip(args, st.fields)]
    return X(lambda ctx: tuple(f(ctx) for f in fargs), st)


def _ldg(comp, node, name, args):
    _want(comp, node, name, args, 1)
    x = comp.rvalue(comp.expr(args[0]))
    if not x.ctype.is_pointer:
        raise comp.error(node, "__ldg() takes a pointer")
    return comp.memory_lvalue(x.fn, x.ctype.target, node)


_SPEC = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|z|j|t|L)?(.)", re.S)
_CONVERSIONS = b"diouxXfFeEgGaAcsp%"


def _printf(comp, node, name, args):
    if not args:
        raise comp.error(node, "printf() needs a format string")
    fmt = comp.expr(args[0])
    if not isinstance(fmt.const, str):
        raise comp.error(node, "printf's format must be a string literal")
    try:
        pieces = _parse_format(string_bytes(fmt.const))
    except LiteralError as exc:
        raise comp.error(node, f"printf format: {exc}") from None
    conv = [_printf_arg(comp, comp.rvalue(comp.expr(a)), a) for a in args[1:]]
    want = sum(1 + (p[1] == b"*") + (p[2] == b"*") for p in pieces
               if isinstance(p, tuple) and p[4] != b"%")
    if want != len(conv):
        raise comp.error(node, f"printf's format takes {want} argument(s), {len(conv)} given")
    line = _line(node)
    plan = _plan(pieces)
    return X(lambda ctx: _run_printf(ctx, pieces, plan, [c(ctx) for c in conv], line), ct.INT)


def _parse_format(fmt: bytes) -> list:
    """A printf format as a list of literal bytes and (flags, width, precision, length,
    conversion) tuples. Raises `LiteralError` for a conversion printf does not have."""
    pieces, pos = [], 0
    for m in _SPEC.finditer(fmt):
        if m.start() > pos:
            pieces.append(fmt[pos:m.start()])
        conv = m.group(5)
        if conv not in _CONVERSIONS or len(conv) != 1:
            raise LiteralError(f"'%{m.group(0)[1:].decode('latin-1')}' is not a printf "
                               f"conversion (%d %u %x %f %e %g %c %s %p %%)")
        pieces.append((m.group(1), m.group(2), m.group(3), m.group(4), conv))
        pos = m.end()
    if b"%" in fmt[pos:]:
        raise LiteralError("the format ends in a lone '%' (write %% for a percent sign)")
    if pos < len(fmt):
        pieces.append(fmt[pos:])
    return pieces


def _printf_arg(comp, x, node):
    """A printf argument: float is promoted to double (C's variadic rule), a string literal
    passed as its bytes."""
    if isinstance(x.const, str):
        try:
            data = string_bytes(x.const)
        except LiteralError as exc:
            raise comp.error(node, str(exc)) from None
        return lambda ctx: data
    return comp.convert(x, ct.DOUBLE if x.ctype == F else x.ctype, x)


def _format_one(spec, values, budget):
    """One conversion of one thread's printf, as bytes, by C's rules (unsigned conversions
    of a signed argument see its bits; %c prints the low byte). `values` is an iterator of
    the thread's arguments. Returns None when the width or precision alone would not fit
    in the `budget` bytes left."""
    flags, width, precision, _, conv = spec
    if conv == b"%":
        return b"%"
    if width == b"*":
        w = int(next(values))
        width, flags = str(abs(w)).encode(), flags + (b"-" if w < 0 else b"")
    if precision == b"*":
        p = int(next(values))
        precision = str(p).encode() if p >= 0 else None
    if (width and int(width) > budget) or (precision and int(precision) > budget):
        return None
    v = next(values)
    if conv in b"diouxXc" and isinstance(v, np.floating):
        v = int(v)      # undefined behaviour in C; print the number rather than fail
    if conv in b"ouxXp" and isinstance(v, np.signedinteger):
        v = int(v) & ((1 << (8 * v.dtype.itemsize)) - 1)
    if conv == b"c":
        v = int(v) & 0xFF
    elif conv == b"s":
        if not isinstance(v, bytes):
            raise TypeError("%s needs a string literal")
    elif isinstance(v, np.generic):
        v = v.item()
    if conv in (b"a", b"A"):
        text = float(v).hex().encode()
        return text.upper() if conv == b"A" else text
    py = {b"i": b"d", b"u": b"d", b"p": b"x", b"F": b"f"}.get(conv, conv)
    prefix = b"#" if conv == b"p" else b""
    return (b"%" + flags + prefix + (width or b"") + (b"." + precision if precision is not None
            else b"") + py) % v


_KIND = {b"d": "int", b"i": "int", b"u": "unsigned", b"o": "unsigned", b"x": "unsigned",
         b"X": "unsigned", b"p": "unsigned", b"c": "char", b"s": "str", b"f": "float",
         b"F": "float", b"e": "float", b"E": "float", b"g": "float", b"G": "float"}


def _plan(pieces):
    """The fast form of a format: (one bytes format for Python's %, the kind of each
    argument), "too wide" when a width or precision alone exceeds the printf buffer, or
    None when only the general path handles it (a ``*`` width, ``%a``)."""
    fmt, kinds = [], []
    for p in pieces:
        if isinstance(p, bytes):
            fmt.append(p.replace(b"%", b"%%"))
            continue
        flags, width, precision, _, conv = p
        if conv == b"%":
            fmt.append(b"%%")
            continue
        if b"*" in (width, precision) or conv not in _KIND:
            return None
        if int(width or 0) > PRINTF_BUFFER_BYTES or int(precision or 0) > PRINTF_BUFFER_BYTES:
            return "too wide"
        py = {b"i": b"d", b"u": b"d", b"p": b"x", b"F": b"f"}.get(conv, conv)
        fmt.append(b"%" + flags + (b"#" if conv == b"p" else b"") + (width or b"")
                   + (b"." + precision if precision is not None else b"") + py)
        kinds.append(_KIND[conv])
    return b"".join(fmt), kinds


def _column(kind, a, lanes):
    """One printf argument over the active lanes, as Python values for the format."""
    n = lanes.shape[0]
    if kind == "str":
        if not isinstance(a, bytes):
            raise TypeError("%s needs a string literal")
        return [a] * n
    v = a[lanes] if isinstance(a, np.ndarray) else np.full(n, a)
    if kind == "float":
        return v.astype(np.float64).tolist()
    if v.dtype.kind == "f":
        v = v.astype(np.int64)          # undefined behaviour in C; print the number
    if kind == "char":
        return (v.astype(np.int64) & 0xFF).tolist()
    if kind == "unsigned" and v.dtype.kind == "i":
        v = v.astype(v.dtype.str.replace("i", "u"))     # the argument's bits
    return v.tolist()


def _run_printf(ctx, pieces, plan, args, line):
    """Device printf: one line per active thread, in thread order, to sys.stdout. The output
    of one launch is capped at `PRINTF_BUFFER_BYTES`, as a GPU's printf buffer is: what does
    not fit is dropped, and a note says so once. Returns the bytes each thread printed."""
    launch = ctx.launch
    lanes = np.flatnonzero(ctx.mask)
    printed = np.zeros(ctx.T, dtype=np.int32)
    left = launch.printf_left
    if left < 0 or not lanes.shape[0]:      # already cut: the GPU drops what does not fit
        return printed
    out = []
    try:
        if plan == "too wide":
            left = -1
        elif plan is not None:
            fmt, kinds = plan
            rows = zip(*[_column(k, a, lanes) for k, a in zip(kinds, args)]) if kinds else \
                iter([()] * lanes.shape[0])
            for lane, row in zip(lanes.tolist(), rows):
                text = fmt % row
                left -= len(text)
                if left < 0:
                    break
                printed[lane] = len(text)
                out.append(text)
        else:
            left = _printf_general(pieces, args, lanes, left, out, printed)
    except (TypeError, ValueError, OverflowError, StopIteration) as exc:
        raise KernelRuntimeError(f"printf at kernel.cu:{line}: the format does not match the "
                                 f"arguments ({exc or 'too few'})", kernel=ctx.kernel_name,
                                 line=line) from None
    launch.printf_left = left
    sys.stdout.write(b"".join(out).decode("utf-8", errors="replace"))
    if left < 0:
        sys.stdout.write(f"\n[printf output of this launch cut at {PRINTF_BUFFER_BYTES:,} bytes "
                         f"(kernel.cu:{line}): a GPU's printf buffer holds 1 MB by default, and "
                         f"what does not fit is lost. Print from fewer threads, e.g. "
                         f"if (threadIdx.x == 0 && blockIdx.x == 0)]\n")
    return printed


def _printf_general(pieces, args, lanes, left, out, printed) -> int:
    """printf one conversion at a time (``*`` widths, ``%a``): appends each lane's bytes to
    `out` while they fit in `left` bytes; returns what is left (-1 once cut)."""
    for lane in lanes.tolist():
        values = iter([a[lane] if isinstance(a, np.ndarray) else a for a in args])
        chunks = []
        for p in pieces:
            chunk = p if isinstance(p, bytes) else _format_one(p, values, left)
            if chunk is None:
                return -1
            chunks.append(chunk)
            left -= len(chunk)
            if left < 0:
                return -1
        text = b"".join(chunks)
        printed[lane] = len(text)
        out.append(text)
    return left


def _cast(v, dtype):
    """A built-in's result as `dtype`: lanes stay an array, a value uniform over the
    threads is a NumPy scalar (a 0-d array, which `__popc` of a constant gives, is one:
    a store under a partial mask indexes arrays by lane)."""
    if isinstance(v, np.ndarray) and v.ndim:
        return v.astype(dtype, copy=False)
    return dtype.type(v[()] if isinstance(v, np.ndarray) else v)


def _minmax(comp, node, name, args):
    if name in ("abs", "llabs"):
        if len(args) != 1:
            raise comp.error(node, f"{name}() takes 1 argument")
        x = comp.rvalue(comp.expr(args[0]))
        t = ct.integer_promote(x.ctype)
        f = comp.convert(x, t, node)
        return X(lambda ctx: np.abs(f(ctx)), t)
    if len(args) != 2:
        raise comp.error(node, f"{name}() takes 2 arguments")
    a, b = (comp.rvalue(comp.expr(x)) for x in args)
    t = ct.usual_arithmetic_conversion(a.ctype, b.ctype)
    fa, fb = comp.convert(a, t, node), comp.convert(b, t, node)
    func = np.minimum if "min" in name else np.maximum
    if t.is_floating:
        func = _fmin if "min" in name else _fmax
    return X(lambda ctx: func(fa(ctx), fb(ctx)), t)


def _atomic(comp, node, name, args, line):
    op = name[len("atomic"):]
    ops = {"Add", "Sub", "Min", "Max", "Exch", "CAS", "And", "Or", "Xor", "Inc", "Dec"}
    if op not in ops:
        raise comp.error(node, f"unknown atomic function '{name}'")
    want = 3 if op == "CAS" else 2
    if len(args) != want:
        raise comp.error(node, f"{name}() takes {want} arguments")
    p = comp.rvalue(comp.expr(args[0]))
    if not p.ctype.is_pointer or not p.ctype.target.is_scalar:
        raise comp.error(node, f"the first argument of {name}() must be a pointer to a number")
    t = p.ctype.target
    if t.is_floating and op not in ("Add", "Sub", "Exch", "Min", "Max"):
        raise comp.error(node, f"{name}() does not exist for {t}")
    fvals = [comp.convert(comp.rvalue(comp.expr(a)), t, a) for a in args[1:]]
    fp = p.fn

    def atomic(ctx):
        return ctx.atomic(op, fp(ctx), t, [f(ctx) for f in fvals], line)
    return X(atomic, t)


def _shuffle(comp, node, name, args):
    if len(args) not in (3, 4):
        raise comp.error(node, f"{name}(mask, value, lane_or_delta[, width]) takes 3 or 4 "
                               "arguments")
    v = comp.rvalue(comp.expr(args[1]))
    t = v.ctype
    fv = v.fn
    fl = comp.convert(comp.rvalue(comp.expr(args[2])), ct.INT, node)
    fw = comp.convert(comp.rvalue(comp.expr(args[3])), ct.INT, node) if len(args) == 4 else None
    kind = name[len("__shfl"):-len("_sync")].strip("_") or "idx"
    line = _line(node)
    return X(lambda ctx: ctx.shuffle(kind, fv(ctx), fl(ctx), fw(ctx) if fw else WARP_SIZE, t,
                                     line or _call_line(ctx)), t)


def _vote(comp, node, name, args):
    if len(args) != 2:
        raise comp.error(node, f"{name}(mask, predicate) takes 2 arguments")
    fp = comp.convert(comp.rvalue(comp.expr(args[1])), ct.BOOL, node)
    kind = name[2:-len("_sync")]
    rtype = ct.UINT if kind == "ballot" else ct.INT
    return X(lambda ctx: ctx.vote(kind, fp(ctx)), rtype)


def _activemask(comp, node, name, args):
    _want(comp, node, name, args, 0)
    return X(lambda ctx: ctx.vote("ballot", True), ct.UINT)


def _tile_threads(comp, node, arg, name):
    """The constant tile size of a multi-warp cooperative-groups built-in."""
    x = comp.rvalue(comp.expr(arg))
    if x.const is None or int(x.const) < 1 or int(x.const) > MAX_THREADS_PER_BLOCK or \
            int(x.const) & (int(x.const) - 1):
        raise comp.error(node, f"{name}: the tile size must be a constant power of two from "
                               f"1 to 1024")
    return int(x.const)


def _tile_whole(ctx, threads, line, what):
    """Raise BarrierError unless every tile of `threads` threads with an active thread is
    active as a whole (a collective of a multi-warp tile)."""
    from ...errors import BarrierError
    found = ctx.warps.tile_missing(threads, ctx.mask & ~ctx.kernel_ret)
    if found is None:
        return
    missing, here, count, size = found
    block, thread_missing = ctx.warps.coords(missing)
    _, thread_here = ctx.warps.coords(here)
    at = f" at kernel.cu:{line}" if line else ""
    raise BarrierError(
        f"{what} of a thread_block_tile<{threads}>{at} in {ctx.warps.kernel_name} was reached "
        f"by {count} of the {size} threads of its tile in block {block} (thread {thread_here} "
        f"is there, thread {thread_missing} is not). A tile's collective must be called by "
        f"every thread of the tile: move it outside the condition.",
        kernel=ctx.warps.kernel_name, line=line, block=block, thread=thread_missing)


def _tile_sync(comp, node, name, args):
    _want(comp, node, name, args, 1)
    threads = _tile_threads(comp, node, args[0], name)

    def tile_sync(ctx):
        if not ctx.any:
            return
        line = _line(node) or _call_line(ctx)
        if threads < ctx.warps.tpb:
            _tile_whole(ctx, threads, line, "sync()")
        if ctx.full or threads >= ctx.warps.tpb:
            # every tile of the batch (or the whole block) is here: for the race detector a
            # block barrier (docs/frontend.md: it orders the tiles for each other too)
            ctx.syncthreads(line)
        else:
            ctx.syncwarp(line)           # some tiles: orders each of their warps' accesses
    return X(tile_sync, ct.VOID)


def _tile_whole_builtin(comp, node, name, args):
    """__cg_tile_whole(N): a `BarrierError` unless every thread of each tile of N threads
    with an active thread is active (cg::reduce over a tile of one warp or less: CUDA's
    shuffles there wait for, or read undefined values of, the missing threads)."""
    _want(comp, node, name, args, 1)
    threads = _tile_threads(comp, node, args[0], name)
    line = _line(node)

    def tile_whole(ctx):
        if ctx.any:
            _tile_whole(ctx, threads, line or _call_line(ctx), "cg::reduce")
    return X(tile_whole, ct.VOID)


def _tile_shfl_xor(comp, node, name, args):
    _want(comp, node, name, args, 3)
    v = comp.rvalue(comp.expr(args[0]))
    fv = v.fn
    fm = comp.convert(comp.rvalue(comp.expr(args[1])), ct.UINT, node)
    threads = _tile_threads(comp, node, args[2], name)
    line = _line(node)

    def tile_shfl(ctx):
        at = line or _call_line(ctx)
        _tile_whole(ctx, threads, at, "cg::reduce")
        return ctx.warps.tile_shuffle_xor(fv(ctx), fm(ctx), threads, ctx.mask, at)
    return X(tile_shfl, v.ctype)


def _pointer_alignment(comp, node, name, arg, what):
    """The closure of a memcpy/memset pointer argument, the C type it has, and the
    alignment its type promises (1 for void*, at most 16)."""
    x = comp.rvalue(comp.expr(arg))
    if not x.ctype.is_pointer:
        raise comp.error(node, f"{name}: the {what} must be a pointer, not {x.ctype}")
    target = x.ctype.target
    align = 1 if isinstance(target, ct.Void) else max(1, min(16, target.align))
    return x.fn, x.ctype, align


def _byte_copy(ctx, dst, src, size, chunk, line, name, fill=None):
    """Each active thread copies `size` bytes (an int, or one per thread) from `src` to
    `dst` (or, with `fill`, stores that byte value there): one load and one store per
    `chunk` bytes, the widest of 16, 8, 4, 2, 1 that the size allows (counted, bounds-
    and race-checked as any access at the call's line)."""
    from .async_copy import copy_pieces
    mem = ctx.memory
    mask = None if ctx.full else ctx.mask
    value = None
    for off, t, m in copy_pieces(ctx, size, chunk, line, name, mask):
        if fill is not None and value is None:
            byte = np.uint64(int(fill) & 0xFF)
            word = np.uint64(0)
            for _ in range(min(t.size, 8)):
                word = (word << np.uint64(8)) | byte
            value = tuple(f[1].dtype.type(word) for f in t.fields) if t.is_struct \
                else t.dtype.type(word)
        if fill is None:
            value = mem.load_struct(src + off, t, line, m) if t.is_struct \
                else mem.load(src + off, t, line, m)
        if t.is_struct:
            mem.store_struct(dst + off, t, value, line, m)
        else:
            mem.store(dst + off, t, value, line, m)


def _memcpy(comp, node, name, args):
    """memcpy(dst, src, count) and memset(dst, value, count) in device code (CUDA's):
    byte copies between any memory spaces, as loads and stores of the widest chunk the
    pointers' types and the size allow (docs/frontend.md, "memcpy and memset")."""
    _want(comp, node, name, args, 3)
    fdst, dtype, adst = _pointer_alignment(comp, node, name, args[0], "destination")
    if name == "memcpy":
        fsrc, _, asrc = _pointer_alignment(comp, node, name, args[1], "source")
        fval = None
    else:
        fsrc, asrc = None, 16
        fval = comp.convert(comp.rvalue(comp.expr(args[1])), ct.INT, node)
    fsize = comp.convert(comp.rvalue(comp.expr(args[2])), ct.ULONG, node)
    chunk = math.gcd(adst, asrc)
    line = _line(node)

    def copy(ctx):
        dst = fdst(ctx)
        if not ctx.any:
            return dst
        at = line or _call_line(ctx)
        fill = None
        if fval is not None:
            v = fval(ctx)
            if isinstance(v, np.ndarray):
                lanes = np.flatnonzero(ctx.mask)
                if np.any(v[lanes] != v[lanes[0]]):
                    block, thread = ctx.coords(int(lanes[0]))
                    raise KernelRuntimeError(
                        f"memset at kernel.cu:{at}: the threads pass different byte values; "
                        f"the emulator sets one value per call: write a loop instead\n  in "
                        f"{ctx.kernel_name}, by thread {thread} in block {block}",
                        kernel=ctx.kernel_name, line=at, block=block, thread=thread)
                v = v[lanes[0]]
            fill = int(v)
        _byte_copy(ctx, dst, None if fsrc is None else fsrc(ctx), fsize(ctx), chunk, at,
                   name, fill)
        return dst
    return X(copy, dtype)


def _bad_tile_size(comp, node, name, args):
    """cooperative_groups::tiled_partition(parent, n) with an n CUDA does not take (the
    prelude calls this only then): stop the launch at the student's call."""
    _want(comp, node, name, args, 1)
    fv = comp.convert(comp.rvalue(comp.expr(args[0])), ct.UINT, node)

    def bad(ctx):
        if not ctx.any:
            return
        v = fv(ctx)
        first = int(np.argmax(ctx.mask))
        value = int(v[first]) if isinstance(v, np.ndarray) else int(v)
        line = _line(node) or _call_line(ctx)
        block, thread = ctx.coords(first)
        raise KernelRuntimeError(
            f"cooperative_groups::tiled_partition(parent, {value}) at kernel.cu:{line} in "
            f"{ctx.kernel_name}, by thread {thread} in block {block}: the tile size must be a "
            f"power of two from 1 to 32 (for a tile of 64 to 1024 threads write "
            f"tiled_partition<N>(block) with N a constant)",
            kernel=ctx.kernel_name, line=line, block=block, thread=thread)
    return X(bad, ct.VOID)


_HANDLERS = {
    "__activemask": _activemask, "__cg_bad_tile_size": _bad_tile_size,
    "memcpy": _memcpy, "memset": _memcpy,
    "__cg_tile_sync": _tile_sync, "__cg_tile_shfl_xor": _tile_shfl_xor,
    "__cg_tile_whole": _tile_whole_builtin,
    "__syncthreads": _syncthreads, "__syncwarp": _syncwarp, "assert": _assert,
    "fmaf": _fma_call, "__fmaf_rn": _fma_call, "fma": _fma_call, "__fma_rn": _fma_call,
    "__ldg": _ldg,
    "printf": _printf,
    **{k: _minmax for k in ("min", "max", "umin", "umax", "abs", "llabs")},
    **{k: _shuffle for k in ("__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                             "__shfl_xor_sync")},
    **{k: _vote for k in ("__ballot_sync", "__any_sync", "__all_sync")},
    **async_copy.HANDLERS,          # cuda::barrier, memcpy_async, __pipeline_*
}
