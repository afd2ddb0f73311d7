"""C arithmetic on lane vectors: conversions and operators with C's semantics.

Input: values that are either one NumPy scalar (uniform across the threads) or a 1-D NumPy
array with one entry per thread, already converted to the operator's common C type.
Output: values of the same shapes. int32 arithmetic wraps as on a GPU, integer `/` and `%`
truncate toward zero, float32 stays float32, and comparisons give NumPy bools.
"""

from __future__ import annotations

import operator

import numpy as np

from . import c_types as ct


def converter(frm: ct.CType, to: ct.CType):
    """A function converting a value of C type `frm` to C type `to` as the GPU does, or None
    when nothing needs doing. Integer to integer wraps (C's rule for unsigned targets, and
    what nvcc does for signed ones); floating to integer saturates (PTX ``cvt.rzi``, see
    `float_to_int`)."""
    frm = ct.decay(frm)
    if to.is_void:
        return lambda v: v
    if to == ct.BOOL:
        if frm == ct.BOOL:
            return None
        return lambda v: v != 0
    dtype = to.dtype
    if getattr(frm, "dtype", None) == dtype:
        return None
    if getattr(frm, "is_floating", False) and to.is_integer:
        return lambda v, f=frm.dtype, t=dtype: float_to_int(v, f, t, np.trunc)
    scalar_type = dtype.type

    def convert(v, dtype=dtype, scalar_type=scalar_type):
        if isinstance(v, np.ndarray):
            return v.astype(dtype)
        return scalar_type(v)
    return convert


# Float -> integer conversion (PTX ISA 9.7.9.21 cvt: "cvt.rzi.s32.f32" etc. saturate to the
# destination's range). The value a NaN becomes was read on the H200 (bench/results/
# arith_h200.json): 0 from float to a 32-bit integer, the sign bit alone (INT_MIN) from
# double to int and from float to long long (double to long long: assumed the same; to an
# unsigned type: 0, measured from float to unsigned int).
_F2I_NAN = {(4, 4): 0, (8, 4): 1 << 31, (4, 8): 1 << 63, (8, 8): 1 << 63}


def float_to_int(v, frm: np.dtype, to: np.dtype, rounding):
    """`v` (float32/float64 lanes or scalar) rounded by `rounding` (np.trunc, np.rint,
    np.floor, np.ceil) and converted to integer dtype `to` as nvcc does: out-of-range values
    saturate, NaN gives the H200's value (`_F2I_NAN`). char and short go through int (or
    unsigned int for the unsigned ones) and then wrap, as nvcc converts them."""
    wide = to if to.itemsize >= 4 else np.dtype(np.int32 if to.kind == "i" else np.uint32)
    x = np.asarray(v, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        r = rounding(x)
        nan = np.isnan(r)
        bits = wide.itemsize * 8
        if wide.kind == "i":
            lo, hi = -2.0 ** (bits - 1), 2.0 ** (bits - 1)
        else:
            lo, hi = 0.0, 2.0 ** bits
        top = np.iinfo(wide).max
        # hi itself is not representable in the target: clip below it, then fix the top.
        below = np.nextafter(hi, 0.0)
        out = np.clip(np.where(nan, 0.0, r), lo, below).astype(wide)
        out = np.where(r >= hi, wide.type(top), out)
    if nan.any() and wide.kind == "i":     # unsigned targets: 0 (measured for float)
        key = (frm.itemsize, 8 if wide.itemsize == 8 else 4)
        out = np.where(nan, np.array(_F2I_NAN[key], dtype=np.uint64).astype(wide), out)
    out = out.astype(to)
    return out if isinstance(v, np.ndarray) else out[()]


def _lanes(a, b):
    """Both operands as arrays (0-d for scalars), so that NumPy wraps rather than warns."""
    return np.asarray(a), np.asarray(b)


def _same(result, a, b):
    return result if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else result[()]


def _div(a, b, signed: bool):
    """C's `/` on integer lanes as the GPU computes it: truncation toward zero; x / 0 has
    every bit set (PTX div.s32/div.u32: the H200 gives -1 and 0xFFFFFFFF), except a 64-bit
    dividend that fits in 32 bits, which nvcc divides with 32-bit instructions and so gets
    0x00000000FFFFFFFF (read on the H200); INT_MIN / -1 is INT_MIN."""
    if not isinstance(b, np.ndarray) and b != 0 and not (signed and b == -1):
        # the common case (a uniform divisor such as N): no special values to patch
        if not signed:
            return np.floor_divide(a, b)
        q = np.floor_divide(a, b)
        fix = (a - q * b != 0) & ((a < 0) != (b < 0))
        return q + fix.astype(q.dtype) if isinstance(fix, np.ndarray) else (q + 1 if fix else q)
    x, y = _lanes(a, b)
    dtype = np.result_type(x, y)
    zero = y == 0
    minus1 = (y == -1) if signed else np.zeros(y.shape, bool)
    safe = np.where(zero | minus1, dtype.type(1), y)
    with np.errstate(all="ignore"):
        if signed:
            q = np.floor_divide(x, safe)
            r = x - q * safe
            q = q + ((r != 0) & ((x < 0) != (safe < 0))).astype(dtype)
            q = np.where(minus1, np.negative(x), q)
        else:
            q = np.floor_divide(x, safe)
    if zero.any():
        ones = np.array(-1).astype(dtype)
        if dtype.itemsize == 8:
            small = (x.astype(np.uint64) >> np.uint64(32)) == 0
            ones = np.where(small, dtype.type(0xFFFFFFFF), ones)
        q = np.where(zero, ones, q)
    return _same(q.astype(dtype), a, b)


def _mod(a, b, signed: bool):
    """C's `%` on integer lanes as the GPU computes it: a - (a / b) * b, so x % 0 is x and
    INT_MIN % -1 is 0 (read on the H200)."""
    if isinstance(a, np.ndarray) and isinstance(b, np.generic) and b != 0 \
            and not (signed and b == -1):
        # the common case (lanes % a uniform divisor such as 32): _div's own common case,
        # the same values and dtype as the general path below, without its patches
        q = _div(a, b, signed)
        return (a - q * b).astype(np.result_type(a, b), copy=False)
    x, y = _lanes(a, b)
    q = np.asarray(_div(x, y, signed))
    zero = y == 0
    with np.errstate(all="ignore"):
        r = np.where(zero, x, x - q * np.where(zero, y.dtype.type(0), y))
    return _same(r.astype(np.result_type(x, y)), a, b)


def int_div(signed: bool):
    return lambda a, b: _div(a, b, signed)


def int_mod(signed: bool):
    return lambda a, b: _mod(a, b, signed)


def _count(b):
    """The shift count as PTX reads it: an unsigned 32-bit number (so -3 is 4294967293)."""
    return np.asarray(b).astype(np.int64) & 0xFFFFFFFF


def shift_left(a, b):
    """`a << b` as PTX shl: counts of the width or more (negative ones included) give 0."""
    width = a.dtype.itemsize * 8
    if not isinstance(b, np.ndarray):
        c = int(b) & 0xFFFFFFFF
        if c < width:
            return np.left_shift(a, a.dtype.type(c))
        return np.zeros_like(a) if isinstance(a, np.ndarray) else a.dtype.type(0)
    c = _count(b)
    big = c >= width
    r = np.left_shift(a, np.where(big, 0, c).astype(a.dtype))
    return np.where(big, a.dtype.type(0), r)


def shift_right(a, b):
    """`a >> b` as PTX shr: a count of the width or more (negative ones included) gives the
    sign for signed types (0 or -1) and 0 for unsigned ones."""
    width = a.dtype.itemsize * 8
    signed = a.dtype.kind == "i"
    if not isinstance(b, np.ndarray):
        c = int(b) & 0xFFFFFFFF
        if c < width:
            return np.right_shift(a, a.dtype.type(c))
        if signed:
            return np.right_shift(a, a.dtype.type(width - 1))
        return np.zeros_like(a) if isinstance(a, np.ndarray) else a.dtype.type(0)
    c = _count(b)
    big = c >= width
    if signed:
        return np.right_shift(a, np.minimum(c, width - 1).astype(a.dtype))
    r = np.right_shift(a, np.where(big, 0, c).astype(a.dtype))
    return np.where(big, a.dtype.type(0), r)


ARITH = {
    "+": np.add, "-": np.subtract, "*": np.multiply,
    "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
    "<<": shift_left, ">>": shift_right,
}

COMPARE = {
    "<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}


def arith_op(op: str, t: ct.Scalar):
    """The NumPy function for C operator `op` on operands of common type `t`."""
    if op == "/":
        if t.is_floating:
            return np.true_divide
        return int_div(t.is_signed)
    if op == "%":
        if t.is_floating:
            return None
        return int_mod(t.is_signed)
    return ARITH.get(op)


def where(mask, new, old):
    """`new` in the active lanes, `old` elsewhere (a struct value is a tuple of components)."""
    if isinstance(new, tuple):
        return tuple(where(mask, n, o) for n, o in zip(new, old))
    return np.where(mask, new, old)


def zero_of(t: ct.CType):
    """The value a declared-but-unassigned variable of type `t` starts with (a struct's is a
    tuple of its fields' values, an array field's a tuple of its elements')."""
    if t.is_struct:
        return tuple(zero_of(f[1]) for f in t.fields)
    if t.is_array:
        return tuple(zero_of(t.elem) for _ in range(t.length or 0))
    return t.dtype.type(0)


def flatten(t: ct.CType, value, pieces=False) -> list:
    """The leaf values of `value` (of type `t`: nested tuples for structs and arrays), in the
    order of `c_types.leaves(t)` (with `pieces`: of `c_types.pieces(t)`, a struct without
    array or struct members staying one tuple)."""
    if t.is_struct and pieces and not t.holds_aggregates:
        return [value]
    if t.is_struct or t.is_array:
        types = [f[1] for f in t.fields] if t.is_struct else [t.elem] * (t.length or 0)
        out = []
        for ft, v in zip(types, value):
            out.extend(flatten(ft, v, pieces))
        return out
    return [value]


def unflatten(t: ct.CType, leaves_iter, pieces=False):
    """The inverse of `flatten`: nested tuples of type `t` from an iterator of leaf values
    (with `pieces`: of piece values)."""
    if t.is_struct and pieces and not t.holds_aggregates:
        return next(leaves_iter)
    if t.is_struct:
        return tuple(unflatten(f[1], leaves_iter, pieces) for f in t.fields)
    if t.is_array:
        return tuple(unflatten(t.elem, leaves_iter, pieces) for _ in range(t.length or 0))
    return next(leaves_iter)


def struct_argument(kernel: str, name: str, t: ct.CType, arg):
    """The value of a kernel's struct parameter `name` (type `t`, by value) from the host's
    argument: a NumPy structured scalar (``np.void``, what PyCUDA passes by value) or any
    object of exactly ``sizeof(t)`` bytes (a one-element structured array, ``bytes``).
    Raises `KernelArgumentError` for anything else, naming the size to give."""
    from ...errors import KernelArgumentError
    try:
        data = memoryview(arg).cast("B").tobytes()
    except TypeError:
        data = None
    if data is None or len(data) != t.size:
        got = f"{len(data)} bytes" if data is not None else type(arg).__name__
        raise KernelArgumentError(
            f"{kernel}: parameter '{name}' is a {t} passed by value ({t.size} bytes, as nvcc "
            f"lays it out); got {got}. Pass a NumPy structured scalar of that layout, e.g. "
            f"np.zeros(1, dtype=np.dtype({{'names': [...], 'formats': [...], 'offsets': "
            f"[...], 'itemsize': {t.size}}}))[0]")
    return struct_from_bytes(t, data)


def struct_from_bytes(t: ct.CType, data: bytes):
    """A struct argument's value (uniform over the threads) from its bytes as the host lays
    it out (a NumPy structured scalar's or array's bytes, PyCUDA's way to pass a struct)."""
    leaves = [np.frombuffer(data, dtype=lt.dtype, count=1, offset=off)[0]
              for off, lt in ct.leaves(t)]
    return unflatten(t, iter(leaves))


# Per-thread "has this local been given a value" of the locals checked for reads before
# writes: True (every thread has set it), False (none has), or a bool array per thread.
# Arrays are never changed in place (masks are shared), only replaced.

def mark_set(state, ctx):
    """The state after the active lanes of `ctx` assign the variable."""
    if state is True or ctx.full:
        return True
    if state is False or state is None:
        return ctx.mask
    return state | ctx.mask


def mark_unset(state, ctx):
    """The state after the active lanes of `ctx` (re)enter the variable's declaration."""
    if ctx.full or state is False or state is None:
        return False
    if state is True:
        return ~ctx.mask
    return state & ~ctx.mask


def unset_lanes(state, ctx):
    """Active lanes of `ctx` that read the variable before setting it (None when none)."""
    if state is True or not ctx.any:
        return None
    bad = ctx.mask if state is False or state is None else ctx.mask & ~state
    return bad if bad.any() else None


# ----------------------------------------------------------------- float arithmetic as nvcc
_FLT_MIN = np.float32(np.finfo(np.float32).tiny)
CANONICAL_NAN32 = np.uint32(0x7FFFFFFF).view(np.float32)


def flush32(x):
    """float32 denormals flushed to a zero of the same sign (``.ftz``: -ftz=true); other
    values and other dtypes unchanged."""
    if getattr(x, "dtype", None) != np.float32:
        return x
    r = np.where(np.abs(x) < _FLT_MIN, np.copysign(np.float32(0), x), x)
    return r if isinstance(x, np.ndarray) else r[()]


def canonical_nan(r):
    """float32 NaN results as the GPU writes them: 0x7FFFFFFF (PTX ISA 9.7.3: "NaN results
    are canonical" for f32 arithmetic; read on the H200 for 0/0, sqrtf(-1), NaN + 1)."""
    if getattr(r, "dtype", None) != np.float32:
        return r
    nan = np.isnan(r)
    if not nan.any():
        return r
    out = np.where(nan, CANONICAL_NAN32, r)
    return out if isinstance(r, np.ndarray) else out[()]


def fma(a, b, c, dtype):
    """a * b + c with one rounding, as PTX fma.rn. float32 exactly: the product of two
    float32s is exact in float64, and where the float64 sum could round the float32 result
    wrongly (it lands on a float32 midpoint, or the result is tiny) it is rounded to odd
    first, which makes the last rounding correct. float64 with Dekker's error-free product
    and sum (correct except for rare double-rounding cases)."""
    if dtype == np.float32:
        return _fma32(a, b, c)
    vec = any(isinstance(v, np.ndarray) for v in (a, b, c))
    with np.errstate(all="ignore"):
        x, y, z = (np.asarray(v, np.float64) for v in (a, b, c))
        p = x * y
        split = 134217729.0          # 2^27 + 1: Veltkamp's split of a double
        xa = split * x
        xh = xa - (xa - x)
        xl = x - xh
        ya = split * y
        yh = ya - (ya - y)
        yl = y - yh
        e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
        s = p + z
        bb = s - p
        t = (p - (s - bb)) + (z - bb)
        out = s + (t + e)
        out = np.where(np.isfinite(out) & np.isfinite(e + t), out, p + z)
    return out if vec else out[()]


_LOW29, _MID29 = np.int64(0x1FFFFFFF), np.int64(0x10000000)


def _fma32(a, b, c):
    vec = isinstance(a, np.ndarray) or isinstance(b, np.ndarray) or isinstance(c, np.ndarray)
    with np.errstate(all="ignore"):
        s = np.multiply(a, b, dtype=np.float64)
        s = np.add(s, c, out=s if isinstance(s, np.ndarray) else None, dtype=np.float64)
        s = np.asarray(s)
        out = s.astype(np.float32)
        # float32 midpoints have low 29 bits 1000...0 in float64 (those bits xor 1000...0
        # are 0 there); tiny results (and NaN, which np.min passes on) take the careful
        # path too, except exact zeros: the exact a*b + c is 0 only where the float64 sum
        # is (a*b is exact in float64, and a nonzero exact sum is at least 2^-298 in
        # size), with the sign IEEE gives both
        mid = np.bitwise_xor(np.bitwise_and(s.reshape(-1).view(np.int64), _LOW29), _MID29)
        if not mid.all() or (out.size and not np.abs(out).min() > _FLT_MIN
                             and (~(np.abs(out) > _FLT_MIN) & (s != 0)).any()):
            x, y, z = (np.asarray(v, np.float64) for v in (a, b, c))
            p = x * y
            s = p + z
            bb = s - p
            err = (p - (s - bb)) + (z - bb)
            odd = np.asarray(s).reshape(-1).view(np.int64).reshape(np.shape(s)) & 1
            fix = np.isfinite(err) & (err != 0) & (odd == 0)
            s = np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
            out = np.asarray(s).astype(np.float32)
    return out if vec else out[()]


def approx_div32(x, y):
    """float32 x / y as PTX div.full.f32 (-prec-div=false): x times the rounded reciprocal
    of y, operands scaled by 1/4 when |y| > 2^126. Within 2 ulp of x / y (PTX ISA)."""
    with np.errstate(all="ignore"):
        x = np.asarray(x, np.float32)
        y = np.asarray(y, np.float32)
        big = np.abs(y) > np.float32(2.0 ** 126)
        q = np.float32(1) / np.where(big, y * np.float32(0.25), y)
        r = np.where(big, (x * np.float32(0.25)) * q, x * q)
    return r


def fast_divide32(x, y):
    """__fdividef(x, y) (PTX div.approx.f32): x times the rounded reciprocal of y; 0 for
    2^126 < |y| < 2^128 (CUDA Math API, and read on the H200)."""
    with np.errstate(all="ignore"):
        x = np.asarray(x, np.float32)
        y = np.asarray(y, np.float32)
        r = x * (np.float32(1) / y)
        big = (np.abs(y) > np.float32(2.0 ** 126)) & np.isfinite(y)
        r = np.where(big & np.isfinite(x), np.float32(0) * x, r)
    return r
