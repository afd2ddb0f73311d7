"""The compiled forms the compiler stages share: `X` (a compiled expression), constants,
shared-variable records, lexical scopes, and source positions of AST nodes.

Input: nothing at run time; these are plain containers. Output: used by compiler.py,
expressions.py, statements.py and builtins.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from . import ctypes_ as ct

BUILTIN_VECTORS = ("threadIdx", "blockIdx", "blockDim", "gridDim")


def _line(node) -> int | None:
    c = getattr(node, "coord", None)
    return c.line if c is not None else None


def _col(node) -> int | None:
    c = getattr(node, "coord", None)
    return c.column if c is not None else None


class X:
    """A compiled expression.

    `fn(ctx)` gives its value (an array-typed expression gives its address, a struct a tuple
    of components). `ctype` is its static C type. Lvalues say where they live: `slot` (a
    variable in the function's environment, with `member` for a field of a struct
    variable) or `addr(ctx)` (memory). `const` holds the value of a constant expression.
    """

    __slots__ = ("fn", "ctype", "slot", "member", "addr", "const", "builtin", "parts")

    def __init__(self, fn, ctype, *, slot=None, member=None, addr=None, const=None, builtin=None,
                 parts=None):
        self.fn = fn
        self.ctype = ctype
        self.slot = slot
        self.member = member
        self.addr = addr
        self.const = const
        self.builtin = builtin
        # For an element `p[i]` (or `a[i][j]`): (base_fn, index_fn, unit), the address being
        # base + index * unit bytes; lets loads take Context.load_fast (no address array).
        self.parts = parts

    @property
    def is_lvalue(self) -> bool:
        return self.slot is not None or self.addr is not None


def constant(value, t: ct.CType) -> X:
    v = t.dtype.type(value)
    return X(lambda ctx, v=v: v, t, const=v)




@dataclass
class SharedVar:
    """A `__shared__` variable: name, type and byte offset in the block's shared memory."""

    name: str
    ctype: ct.CType
    offset: int
    dynamic: bool = False
    line: int | None = None




class _Scope:
    def __init__(self, parent=None):
        self.parent = parent
        self.names: dict = {}

    def lookup(self, name):
        s = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None


_INT_RE = re.compile(r"^(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)([uUlL]*)$")


def parse_int(text: str):
    """Value and C type of an integer literal (C's rules for the type of a literal)."""
    m = _INT_RE.match(text)
    if not m:
        raise ValueError(text)
    digits, suffix = m.group(1), m.group(2).lower()
    if digits.lower().startswith("0x"):
        value, decimal = int(digits, 16), False
    elif digits.lower().startswith("0b"):
        value, decimal = int(digits, 2), False
    elif digits.startswith("0") and len(digits) > 1:
        value, decimal = int(digits, 8), False
    else:
        value, decimal = int(digits), True
    unsigned = "u" in suffix
    longs = suffix.count("l")
    candidates = []
    if longs == 0:
        candidates += [ct.UINT] if unsigned else ([ct.INT] if decimal else [ct.INT, ct.UINT])
    if longs <= 1:
        candidates += [ct.ULONG] if unsigned else ([ct.LONG] if decimal else [ct.LONG, ct.ULONG])
    candidates += [ct.ULLONG] if unsigned else [ct.LLONG, ct.ULLONG]
    for t in candidates:
        info = np.iinfo(t.dtype)
        if info.min <= value <= info.max:
            return value, t
    return value & 0xFFFFFFFFFFFFFFFF, ct.ULLONG
