"""The generator's own model of C++'s arithmetic types (ISO C++20 [basic.fundamental],
[conv.prom], [expr.arith.conv], [lex.icon]), on the LP64 data model that nvcc and the host
share (long and pointers 8 bytes, char signed).

It is used only to build programs that are valid and well defined (which shift mask, which
divisor guard, which brace initialisers do not narrow); what a program computes is decided
by the two compilers under test, never by this model.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Type:
    """An arithmetic type: `name` is its canonical spelling (``unsigned long long``)."""

    name: str
    size: int
    signed: bool
    floating: bool = False
    rank: int = 0                  # integer conversion rank (bool 0 ... long long 5)

    @property
    def integer(self) -> bool:
        return not self.floating

    @property
    def bits(self) -> int:
        return 8 * self.size

    @property
    def min(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        if self.name == "bool":
            return 1
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    def __str__(self) -> str:
        return self.name


BOOL = Type("bool", 1, False, rank=0)
CHAR = Type("char", 1, True, rank=1)            # signed on x86-64 and in nvcc's device code
SCHAR = Type("signed char", 1, True, rank=1)
UCHAR = Type("unsigned char", 1, False, rank=1)
SHORT = Type("short", 2, True, rank=2)
USHORT = Type("unsigned short", 2, False, rank=2)
INT = Type("int", 4, True, rank=3)
UINT = Type("unsigned int", 4, False, rank=3)
LONG = Type("long", 8, True, rank=4)
ULONG = Type("unsigned long", 8, False, rank=4)
LLONG = Type("long long", 8, True, rank=5)
ULLONG = Type("unsigned long long", 8, False, rank=5)
FLOAT = Type("float", 4, True, floating=True, rank=10)
DOUBLE = Type("double", 8, True, floating=True, rank=11)

INTEGERS = (BOOL, CHAR, SCHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG, LLONG, ULLONG)
FLOATS = (FLOAT, DOUBLE)
ARITHMETIC = INTEGERS + FLOATS
BY_NAME = {t.name: t for t in ARITHMETIC}

# The names a type may be written with. Those of one word can also name a functional cast
# `T(x)`; the typedefs are declared in every program's preamble (`PREAMBLE`) as glibc and
# nvcc's headers declare them, plus three of the program's own (`i8`, `u8`, `i64`, `u64`).
SPELLINGS = {
    BOOL: ["bool"],
    CHAR: ["char"],
    SCHAR: ["signed char", "int8_t", "i8"],
    UCHAR: ["unsigned char", "uint8_t", "u8"],
    SHORT: ["short", "short int", "int16_t"],
    USHORT: ["unsigned short", "ushort", "uint16_t", "u16"],
    INT: ["int", "signed", "signed int", "int32_t"],
    UINT: ["unsigned int", "unsigned", "uint", "uint32_t"],
    LONG: ["long", "long int", "ptrdiff_t"],
    ULONG: ["unsigned long", "size_t", "ulong"],
    LLONG: ["long long", "long long int", "i64"],
    ULLONG: ["unsigned long long", "u64"],
    FLOAT: ["float"],
    DOUBLE: ["double"],
}

# Typedefs every program declares itself (the emulator and nvcc bring size_t, uint, ushort,
# ulong, ptrdiff_t and the <stdint.h> names; the host preamble declares those as glibc does).
PREAMBLE = """typedef signed char i8;
typedef unsigned char u8;
using u16 = unsigned short;
typedef long long i64;
typedef unsigned long long u64;
"""


def one_word(spelling: str) -> bool:
    """Whether `spelling` is one simple-type-specifier, as a functional cast `T(x)` needs."""
    return " " not in spelling


def promote(t: Type) -> Type:
    """Integral promotion [conv.prom]: bool, char and short types become int (all their
    values fit in int); other types stay."""
    if t.integer and t.rank < INT.rank:
        return INT
    return t


def common(a: Type, b: Type) -> Type:
    """The usual arithmetic conversions [expr.arith.conv] of a binary operator."""
    if a.floating or b.floating:
        return DOUBLE if DOUBLE in (a, b) else FLOAT
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if a.signed == b.signed:
        return a if a.rank > b.rank else b
    s, u = (a, b) if a.signed else (b, a)
    if u.rank >= s.rank:
        return u
    if s.size > u.size:
        return s
    return {INT: UINT, LONG: ULONG, LLONG: ULLONG}[s]


def conditional(a: Type, b: Type) -> Type:
    """The type of ``c ? a : b`` for two arithmetic prvalues [expr.cond]/7: the same type
    when both are (``c ? char : char`` is a char), else the usual arithmetic conversions."""
    return a if a == b else common(a, b)


def narrowing(frm: Type, to: Type) -> bool:
    """Whether converting a non-constant `frm` to `to` narrows [dcl.init.list]/7 (so
    ``T{x}`` and brace initialisers refuse it)."""
    if frm == to:
        return False
    if to == BOOL:
        return frm != BOOL                # int -> bool narrows (C++20, P1957)
    if frm.floating and to.integer:
        return True
    if frm.integer and to.floating:
        return True
    if frm.floating and to.floating:
        return frm.size > to.size
    if frm == BOOL:
        return False
    return not (to.min <= frm.min and frm.max <= to.max)


def literal_type(value: int, base: int, suffix: str) -> Type | None:
    """The type of the integer literal of `value` (>= 0) written in `base` with `suffix`
    ([lex.icon], table 8), or None when none holds it."""
    s = suffix.lower()
    decimal = base == 10
    if s == "":
        cands = [INT, LONG, LLONG] if decimal else [INT, UINT, LONG, ULONG, LLONG, ULLONG]
    elif s == "u":
        cands = [UINT, ULONG, ULLONG]
    elif s == "l":
        cands = [LONG, LLONG] if decimal else [LONG, ULONG, LLONG, ULLONG]
    elif s in ("ul", "lu"):
        cands = [ULONG, ULLONG]
    elif s == "ll":
        cands = [LLONG] if decimal else [LLONG, ULLONG]
    elif s in ("ull", "llu"):
        cands = [ULLONG]
    else:
        raise ValueError(suffix)
    for t in cands:
        if value <= t.max:
            return t
    return None


def wrap(value: int, t: Type) -> int:
    """`value` converted to integer type `t` (modulo 2^bits; bool: value != 0)."""
    if t == BOOL:
        return int(value != 0)
    value &= (1 << t.bits) - 1
    if t.signed and value >> (t.bits - 1):
        value -= 1 << t.bits
    return value
