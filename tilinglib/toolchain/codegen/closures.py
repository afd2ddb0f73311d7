"""The compiled forms the compiler stages share: `X` (a compiled expression), constants,
shared-variable records, lexical scopes, and source positions of AST nodes.

Input: nothing at run time; these are plain containers. Output: used by compiler.py,
expressions.py, statements.py and builtins.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..model import c_types as ct

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


# --------------------------------------------------------------------------- C literals
_SIMPLE_ESCAPES = {"'": 39, '"': 34, "?": 63, "\\": 92, "a": 7, "b": 8, "f": 12, "n": 10,
                   "r": 13, "t": 9, "v": 11, "e": 27}
_HEX = frozenset("0123456789abcdefABCDEF")
_PREFIX = re.compile(r"^(u8|u|U|L)?(['\"])(.*)\2$", re.S)


class LiteralError(ValueError):
    """A character or string literal C does not allow (the message says why)."""


def _units(body: str, wide: bool) -> list[int]:
    """The code units of a literal's body by C's rules: bytes (UTF-8 for characters beyond
    ASCII and for ``\\u``/``\\U``) when `wide` is false, code points when it is true.
    Raises `LiteralError` for an escape C rejects (``\\x`` without digits, an octal or hex
    escape out of range, an invalid universal character name)."""
    limit = 0xFFFFFFFF if wide else 0xFF
    out: list[int] = []

    def char(cp: int):
        out.extend([cp] if wide else chr(cp).encode("utf-8"))

    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 == n:
            char(ord(c))
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in "01234567":
            j = i - 1
            while i < n and i - j < 3 and body[i] in "01234567":
                i += 1
            value = int(body[j:i], 8)
            if value > limit:
                raise LiteralError(f"octal escape sequence '\\{body[j:i]}' out of range "
                                   f"(a char holds 0 to 255: '\\377' is the largest)")
            out.append(value)
        elif e == "x":
            j = i
            while i < n and body[i] in _HEX:
                i += 1
            if i == j:
                raise LiteralError("\\x used with no following hex digits (write e.g. '\\x41')")
            value = int(body[j:i], 16)
            if value > limit:
                raise LiteralError(f"hex escape sequence '\\x{body[j:i]}' out of range "
                                   f"(a char holds 0 to 255: '\\xff' is the largest)")
            out.append(value)
        elif e in "uU":
            digits = 4 if e == "u" else 8
            hexdigits = body[i:i + digits]
            if len(hexdigits) != digits or not set(hexdigits) <= _HEX:
                raise LiteralError(f"incomplete universal character name \\{e}{hexdigits} "
                                   f"(\\{e} takes exactly {digits} hex digits)")
            cp = int(hexdigits, 16)
            i += digits
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise LiteralError(f"\\{e}{hexdigits} is not a valid universal character")
            char(cp)
        elif e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
        else:                         # an unknown escape: gcc warns and keeps the character
            char(ord(e))
    return out


def split_literal(text: str):
    """(prefix, body) of a C character or string literal as the lexer gives it."""
    m = _PREFIX.match(text)
    if not m:
        raise LiteralError(f"cannot read the literal {text[:40]}")
    return m.group(1) or "", m.group(3)


def char_constant(text: str):
    """Value and C type of a character constant such as ``'a'``, ``'\\n'``, ``'\\377'`` or
    ``L'\\u1234'``, by C's rules: a plain char is signed (``'\\xff'`` is -1); a constant of
    several chars (``'ab'``) is an int, as gcc makes it. Raises `LiteralError`."""
    prefix, body = split_literal(text)
    wide = prefix in ("L", "u", "U")
    units = _units(body, wide)
    if not units:
        raise LiteralError("empty character constant ''")
    if wide:
        if len(units) > 1:
            raise LiteralError(f"the wide character constant {text[:40]} holds more than one "
                               f"character")
        t = {"L": ct.INT, "u": ct.USHORT, "U": ct.UINT}[prefix]
        value = units[0]
        if value > np.iinfo(t.dtype).max:
            raise LiteralError(f"character {text[:40]} does not fit in {t}")
        return value, t
    if len(units) == 1:
        value = units[0]
        return (value - 256 if value >= 128 else value), ct.CHAR
    if len(units) > 4 or prefix == "u8":
        raise LiteralError(f"character constant {text[:40]} is too long for its type "
                           f"({len(units)} bytes): write one character, or a string \"...\"")
    value = 0
    for u in units:                  # gcc's value of a multi-character constant
        value = (value << 8) | u
    return (value - (1 << 32) if value >= 1 << 31 else value), ct.INT


def string_bytes(text: str) -> bytes:
    """The bytes of a C string literal (escapes decoded by C's rules, UTF-8 beyond ASCII),
    without the terminating NUL. Raises `LiteralError`."""
    prefix, body = split_literal(text)
    units = _units(body, wide=False)
    return bytes(units)
