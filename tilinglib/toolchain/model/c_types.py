"""The C type system of the emulator: scalars, pointers, arrays, structs, and C's conversions.

Input: type names as pycparser spells them (``['unsigned', 'int']``). Output: immutable
`CType` objects that know their size, alignment, NumPy dtype and how C converts them
(integer promotion, the usual arithmetic conversions). Sizes are those of nvcc on a 64-bit
host: int 4, long 8, pointers 8, float 4, double 8.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np


class CType:
    """Base of every C type. Subclasses are frozen dataclasses, so types compare by value."""

    kind = "?"
    size = 0
    align = 1

    is_scalar = False
    is_pointer = False
    is_array = False
    is_struct = False
    is_void = False

    @property
    def is_integer(self) -> bool:
        return False

    @property
    def is_floating(self) -> bool:
        return False

    @property
    def is_arithmetic(self) -> bool:
        return self.is_integer or self.is_floating


@dataclass(frozen=True)
class Scalar(CType):
    """An arithmetic type. `name` is the canonical C spelling ("unsigned int")."""

    name: str
    dtype: np.dtype = field(compare=False)
    rank: int = field(compare=False, default=0)

    is_scalar = True

    @property
    def kind(self) -> str:  # noqa: D401 - property
        return self.name

    @property
    def size(self) -> int:
        return self.dtype.itemsize

    @property
    def align(self) -> int:
        return self.dtype.itemsize

    @property
    def is_integer(self) -> bool:
        return self.dtype.kind in "iub"

    @property
    def is_floating(self) -> bool:
        return self.dtype.kind == "f"

    @property
    def is_signed(self) -> bool:
        return self.dtype.kind in "if"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Void(CType):
    is_void = True
    kind = "void"

    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class Pointer(CType):
    """A pointer; its value at run time is a 64-bit address (see memory.py)."""

    target: CType
    is_pointer = True
    kind = "pointer"
    size = 8
    align = 8
    dtype = np.dtype(np.int64)

    def __str__(self) -> str:
        return f"{self.target}*"


@dataclass(frozen=True)
class Array(CType):
    """A fixed-size array (`length` None for `extern __shared__ float s[]`)."""

    elem: CType
    length: int | None
    is_array = True
    kind = "array"

    @property
    def size(self) -> int:
        return self.elem.size * (self.length or 0)

    @property
    def align(self) -> int:
        return self.elem.align

    @property
    def base_elem(self) -> CType:
        t = self.elem
        while isinstance(t, Array):
            t = t.elem
        return t

    @property
    def shape(self) -> tuple:
        dims, t = [self.length], self.elem
        while isinstance(t, Array):
            dims.append(t.length)
            t = t.elem
        return tuple(dims)

    def __str__(self) -> str:
        return f"{self.base_elem}" + "".join(f"[{d if d is not None else ''}]" for d in self.shape)


@dataclass(frozen=True)
class Struct(CType):
    """A struct such as float4 or uint3: `fields` is a tuple of (name, type, byte offset)."""

    name: str
    fields: tuple
    size: int = 0
    align: int = 1
    is_struct = True
    kind = "struct"

    def field(self, name: str):
        for fname, ftype, offset in self.fields:
            if fname == name:
                return ftype, offset
        return None

    @functools.cached_property
    def holds_aggregates(self) -> bool:
        """Whether a field is an array or a struct (``struct Frag { float v[4]; int n; }``):
        such a struct has its bytes in memory (a local one in the thread's local memory),
        since its fields are reached by address (``f.v[i]`` with a variable ``i``)."""
        return any(ft.is_array or ft.is_struct for _, ft, _ in self.fields)

    def __str__(self) -> str:
        return self.name


def brace_members(t: CType) -> list:
    """What the items of a brace list for `t` initialise, in order, as (type, byte offset)
    pairs: a struct's fields, an array's elements, or `t` itself for a scalar
    (``int x = {4};``)."""
    if isinstance(t, Struct):
        return [(ft, foff) for _, ft, foff in t.fields]
    if isinstance(t, Array):
        return [(t.elem, i * t.elem.size) for i in range(t.length or 0)]
    return [(t, 0)]


def leaves(t: CType, offset: int = 0):
    """The scalars and pointers inside `t` (a struct or array nests them), in memory order,
    as (byte offset, type) pairs: ``struct { float v[2]; int n; }`` gives (0, float),
    (4, float), (8, int)."""
    if isinstance(t, Struct):
        for _, ft, foff in t.fields:
            yield from leaves(ft, offset + foff)
    elif isinstance(t, Array):
        for i in range(t.length or 0):
            yield from leaves(t.elem, offset + i * t.elem.size)
    else:
        yield offset, t


def pieces(t: CType, offset: int = 0, top: bool = True):
    """Like `leaves`, but a member struct without array or struct members (float4, a struct
    of scalars) is one piece: the accesses nvcc copies a struct with (one LDS.128 for an
    aligned float4 member, one LDS.32 per float of an array member)."""
    if isinstance(t, Struct) and not t.holds_aggregates and not top:
        yield offset, t
    elif isinstance(t, Struct):
        for _, ft, foff in t.fields:
            yield from pieces(ft, offset + foff, False)
    elif isinstance(t, Array):
        for i in range(t.length or 0):
            yield from pieces(t.elem, offset + i * t.elem.size, False)
    else:
        yield offset, t


def member_path(t: CType, offset: int) -> str:
    """The member of `t` at byte `offset` as C spells its access: ``.v[2]``, ``[1].n``,
    ``.a.x`` (empty for a scalar; ``+3B`` where `offset` is inside padding or a scalar)."""
    path = ""
    while True:
        if isinstance(t, Array) and t.elem.size:
            i, offset = divmod(offset, t.elem.size)
            path += f"[{i}]"
            t = t.elem
        elif isinstance(t, Struct):
            for fname, ft, foff in t.fields:
                if foff <= offset < foff + max(ft.size, 1):
                    path += f".{fname}"
                    t, offset = ft, offset - foff
                    break
            else:
                return path + f"+{offset}B"
        else:
            return path + (f"+{offset}B" if offset else "")


def _scalar(name: str, dtype, rank: int) -> Scalar:
    return Scalar(name, np.dtype(dtype), rank)


BOOL = _scalar("bool", np.bool_, 0)
CHAR = _scalar("char", np.int8, 1)
SCHAR = _scalar("signed char", np.int8, 1)
UCHAR = _scalar("unsigned char", np.uint8, 1)
SHORT = _scalar("short", np.int16, 2)
USHORT = _scalar("unsigned short", np.uint16, 2)
INT = _scalar("int", np.int32, 3)
UINT = _scalar("unsigned int", np.uint32, 3)
LONG = _scalar("long", np.int64, 4)
ULONG = _scalar("unsigned long", np.uint64, 4)
LLONG = _scalar("long long", np.int64, 5)
ULLONG = _scalar("unsigned long long", np.uint64, 5)
FLOAT = _scalar("float", np.float32, 10)
DOUBLE = _scalar("double", np.float64, 11)
VOID = Void()

_BY_SPELLING = {
    ("_Bool",): BOOL, ("bool",): BOOL,
    ("char",): CHAR, ("signed", "char"): SCHAR, ("unsigned", "char"): UCHAR,
    ("short",): SHORT, ("short", "int"): SHORT, ("signed", "short"): SHORT,
    ("unsigned", "short"): USHORT, ("unsigned", "short", "int"): USHORT,
    ("int",): INT, ("signed",): INT, ("signed", "int"): INT,
    ("unsigned",): UINT, ("unsigned", "int"): UINT,
    ("long",): LONG, ("long", "int"): LONG, ("signed", "long"): LONG,
    ("unsigned", "long"): ULONG, ("unsigned", "long", "int"): ULONG,
    ("long", "long"): LLONG, ("long", "long", "int"): LLONG, ("signed", "long", "long"): LLONG,
    ("unsigned", "long", "long"): ULLONG, ("unsigned", "long", "long", "int"): ULLONG,
    ("float",): FLOAT, ("double",): DOUBLE, ("long", "double"): DOUBLE,
    ("void",): VOID,
}


def scalar_from_names(names) -> CType | None:
    """The type for pycparser's IdentifierType names, or None if it is not a basic type."""
    key = tuple(n for n in names if n not in ("const", "volatile"))
    return _BY_SPELLING.get(key)


def struct_of(name: str, field_type: CType, field_names) -> Struct:
    """A CUDA vector type such as float4: fields x, y, z, w of one type, aligned as nvcc does."""
    n = len(field_names)
    size = field_type.size * n
    # float2 and float4 are aligned to their size; 3-component types to their element.
    align = size if n in (2, 4) else field_type.align
    fields = tuple((fname, field_type, i * field_type.size) for i, fname in enumerate(field_names))
    return Struct(name, fields, size, align)


def _vector_types() -> dict:
    out = {}
    bases = {"float": FLOAT, "int": INT, "uint": UINT, "double": DOUBLE, "char": CHAR,
             "uchar": UCHAR, "short": SHORT, "ushort": USHORT, "long": LONG, "ulong": ULONG,
             "longlong": LLONG, "ulonglong": ULLONG}
    for base, t in bases.items():
        for n in (1, 2, 3, 4):
            out[f"{base}{n}"] = struct_of(f"{base}{n}", t, "xyzw"[:n])
    out["dim3"] = struct_of("dim3", UINT, "xyz")
    return out


VECTOR_TYPES = _vector_types()
UINT3 = VECTOR_TYPES["uint3"]


def integer_promote(t: CType) -> CType:
    """C integer promotion: bool, char and short become int."""
    if isinstance(t, Scalar) and t.is_integer and t.rank < INT.rank:
        return INT
    return t


def usual_arithmetic_conversion(a: CType, b: CType) -> CType:
    """The common type of a binary arithmetic operator (C11 6.3.1.8)."""
    if a.is_floating or b.is_floating:
        return DOUBLE if DOUBLE in (a, b) else FLOAT
    a, b = integer_promote(a), integer_promote(b)
    if a == b:
        return a
    if a.is_signed == b.is_signed:
        return a if a.rank >= b.rank else b
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if unsigned.rank >= signed.rank:
        return unsigned
    if signed.size > unsigned.size:
        return signed
    return {LONG: ULONG, LLONG: ULLONG, INT: UINT}[signed]


def decay(t: CType) -> CType:
    """Array-to-pointer decay."""
    if isinstance(t, Array):
        return Pointer(t.elem)
    return t
