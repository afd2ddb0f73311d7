"""Atomic read-modify-write on emulated memory: atomicAdd, atomicSub, atomicMin, atomicMax,
atomicExch, atomicCAS, atomicAnd/Or/Xor, atomicInc/Dec.

Input: a NumPy view of the memory, the element index each active lane targets, the operand
value(s) per lane and the element dtype. Output: the old value each lane saw; the view is
updated. Lanes that hit one address are applied in lane order (one legal order: a GPU
promises no order, so a kernel whose answer depends on it is itself nondeterministic).
Integer additions are vectorised (their result does not depend on the order); the others
run lane by lane.
"""

from __future__ import annotations

import numpy as np

OPS = {"Add", "Sub", "Min", "Max", "Exch", "CAS", "And", "Or", "Xor", "Inc", "Dec"}


def _integer_add(view, idx, v, dtype):
    """Old values of a vectorised integer atomicAdd: the start value plus the operands of
    the earlier lanes on the same address (wrapping as the hardware does)."""
    order = np.argsort(idx, kind="stable")
    si, sv = idx[order], v[order].astype(np.int64)
    start = np.ones(si.shape[0], dtype=bool)
    start[1:] = si[1:] != si[:-1]
    csum = np.cumsum(sv)
    group_first = np.maximum.accumulate(np.where(start, np.arange(si.shape[0]), 0))
    before = csum - sv - (csum[group_first] - sv[group_first])
    base = view[si].astype(np.int64)
    old_sorted = (base + before).astype(dtype)
    old = np.empty_like(old_sorted)
    old[order] = old_sorted
    last = np.ones(si.shape[0], dtype=bool)
    last[:-1] = si[1:] != si[:-1]
    view[si[last]] = (base[last] + before[last] + sv[last]).astype(dtype)
    return old


def apply(op: str, view: np.ndarray, idx: np.ndarray, vals: list, dtype: np.dtype):
    """Apply atomic `op` for each lane (`idx[j]`, operands `vals[k][j]`); returns old values."""
    if op in ("Add", "Sub") and dtype.kind in "iu":
        v = vals[0] if op == "Add" else np.negative(vals[0].astype(np.int64))
        return _integer_add(view, idx, np.asarray(v), dtype)
    n = idx.shape[0]
    old = np.empty(n, dtype=dtype)
    t = dtype.type
    v0 = vals[0]
    for j in range(n):
        i = idx[j]
        o = view[i]
        old[j] = o
        v = v0[j]
        if op == "Add":
            view[i] = t(o + v)
        elif op == "Sub":
            view[i] = t(o - v)
        elif op == "Min":
            view[i] = min(o, v)
        elif op == "Max":
            view[i] = max(o, v)
        elif op == "Exch":
            view[i] = v
        elif op == "CAS":
            if o == v:
                view[i] = vals[1][j]
        elif op == "And":
            view[i] = o & v
        elif op == "Or":
            view[i] = o | v
        elif op == "Xor":
            view[i] = o ^ v
        elif op == "Inc":
            view[i] = 0 if o >= v else o + 1
        elif op == "Dec":
            view[i] = v if (o == 0 or o > v) else o - 1
    return old
