"""C arithmetic on lane vectors: conversions and operators with C's semantics.

Input: values that are either one NumPy scalar (uniform across the threads) or a 1-D NumPy
array with one entry per thread, already converted to the operator's common C type.
Output: values of the same shapes. int32 arithmetic wraps as on a GPU, integer `/` and `%`
truncate toward zero, float32 stays float32, and comparisons give NumPy bools.
"""

from __future__ import annotations

import operator

import numpy as np

from . import ctypes_ as ct


def is_vector(v) -> bool:
    return isinstance(v, np.ndarray)


def converter(frm: ct.CType, to: ct.CType):
    """A function converting a value of C type `frm` to C type `to` (C's rules), or None
    when nothing needs doing."""
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
    scalar_type = dtype.type

    def convert(v, dtype=dtype, scalar_type=scalar_type):
        if isinstance(v, np.ndarray):
            return v.astype(dtype)
        return scalar_type(v)
    return convert


def _trunc_div(a, b):
    # Floor division rounds toward -inf; C truncates toward zero: add one where the
    # quotient is negative and inexact.
    q = np.floor_divide(a, b)
    r = a - q * b
    fix = (r != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype) if isinstance(fix, np.ndarray) else (q + 1 if fix else q)


def _safe_divisor(b):
    # Inactive lanes may hold 0; avoid NumPy's warnings (a GPU does not trap either).
    if isinstance(b, np.ndarray):
        return np.where(b == 0, b.dtype.type(1), b)
    return b if b != 0 else b.dtype.type(1) if hasattr(b, "dtype") else 1


def int_div(signed: bool):
    if signed:
        return lambda a, b: _trunc_div(a, _safe_divisor(b))
    return lambda a, b: np.floor_divide(a, _safe_divisor(b))


def int_mod(signed: bool):
    div = int_div(signed)

    def mod(a, b):
        b = _safe_divisor(b)
        return a - div(a, b) * b
    return mod


def shift_left(a, b):
    return np.left_shift(a, b & (a.dtype.itemsize * 8 - 1))


def shift_right(a, b):
    return np.right_shift(a, b & (a.dtype.itemsize * 8 - 1))


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
        return tuple(np.where(mask, n, o) for n, o in zip(new, old))
    return np.where(mask, new, old)


def zero_of(t: ct.CType):
    """The value a declared-but-unassigned variable of type `t` starts with."""
    if t.is_struct:
        return tuple(f[1].dtype.type(0) for f in t.fields)
    return t.dtype.type(0)


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
