"""A seeded generator of random, well-defined CUDA C++ tests (after Csmith and YARPGen).

`Generator(seed).test(index)` returns a `program.Test`: a few inputs of every integer
width and signedness, float and double, read per thread; random statements over them
(declarations with every initialiser form, assignments and every compound assignment,
``++``/``--``, ``if``/``else``, ``for``/``while``/``do`` loops with ``break`` and
``continue``), expressions with every operator, every cast form (``(T)x``,
``static_cast<T>(x)``, ``T(x)``, ``T{x}``, ``reinterpret_cast`` and ``const_cast`` of
pointers and references), literals of every suffix and base, the usual arithmetic
conversions and promotions, ternaries, vector types (``float4``, ``int2``, ...), structs,
local arrays, references and pointers to locals, helper ``__device__`` functions (by
value, by reference, with early returns) and function templates (type and non-type
parameters, explicit or deduced arguments), and the CUDA math and integer intrinsics that
are exact. Every value the test computes is written out.

Well defined by construction, as Csmith and YARPGen do it: shift counts are masked to the
promoted width, integer divisors are guarded away from zero, array indices are masked to
the length, float-to-integer conversions are clamped to the target's range (mostly: those
left are caught by the host's sanitizer, `host.py`), brace initialisers never narrow, no
variable is modified twice or read and modified in one expression. Signed overflow is
allowed: it wraps, on the emulator as on the GPU, and the host compiles with ``-fwrapv``
(the instances are counted apart).

Profiles: ``"host"`` (the default) generates only what the host compiler can check bit for
bit; ``"gpu"`` also generates what only the GPU can judge (shift counts out of range,
division by zero, float-to-integer saturation, FMA contraction: `bench/differential_gpu.py`).
"""

from __future__ import annotations

import random

import numpy as np

from . import cxx
from .cxx import (BOOL, CHAR, DOUBLE, FLOAT, INT, LLONG, LONG, SCHAR, SHORT, UCHAR, UINT,
                  ULLONG, ULONG, USHORT)
from .program import INPUTS, NIN, E, Function, S, Test, lit, var

SCALARS = [BOOL, CHAR, SCHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG, LLONG, ULLONG,
           FLOAT, DOUBLE]
# how often each type is picked for a new variable (int, unsigned and float most often)
WEIGHTS = [2, 2, 2, 3, 3, 3, 8, 6, 3, 3, 4, 4, 7, 4]

# CUDA's vector types (vector_types.h): name -> component type
VECTORS = {"float2": FLOAT, "float3": FLOAT, "float4": FLOAT, "int2": INT, "int4": INT,
           "uint2": UINT, "uint4": UINT, "double2": DOUBLE, "short2": SHORT,
           "ushort4": USHORT, "char4": SCHAR, "uchar4": UCHAR, "longlong2": LLONG,
           "ulonglong2": ULLONG}

FLOAT_MATH1 = ["sqrtf", "fabsf", "floorf", "ceilf", "truncf", "rintf", "roundf"]
DOUBLE_MATH1 = ["sqrt", "fabs", "floor", "ceil", "trunc", "rint", "round"]
FLOAT_MATH2 = ["fminf", "fmaxf", "copysignf", "__fadd_rn", "__fsub_rn", "__fmul_rn",
               "__fdiv_rn"]
DOUBLE_MATH2 = ["fmin", "fmax", "copysign", "__dadd_rn", "__dmul_rn"]
# the <cmath> names CUDA also declares for float (math_functions.hpp): float in, float out
OVERLOADED1 = ["sqrt", "fabs", "floor", "ceil", "trunc", "round", "rint"]
OVERLOADED2 = ["fmin", "fmax", "copysign"]
# CUDA's min and max (the CUDA Math API lists these argument types; a mixed pair compares
# in the common type: min(int, unsigned) is umin((unsigned)a, b))
MINMAX = [(INT, INT), (UINT, UINT), (INT, UINT), (UINT, INT), (LONG, LONG), (ULONG, ULONG),
          (LONG, ULONG), (ULONG, LONG), (LLONG, LLONG), (ULLONG, ULLONG), (LLONG, ULLONG),
          (ULLONG, LLONG), (FLOAT, FLOAT), (DOUBLE, DOUBLE), (FLOAT, DOUBLE), (DOUBLE, FLOAT)]


def _float_text(x: float, suffix: str, rng) -> str:
    """A decimal or hexadecimal literal of `x` (finite), with 6 to 17 digits."""
    if rng.random() < 0.15:
        return float.hex(x).replace("0x", "0x" if x >= 0 else "-0x") + suffix
    digits = rng.choice([6, 8, 9, 9, 12, 17])
    text = f"{x:.{digits}g}"
    if not any(c in text for c in ".en"):
        text += ".0"
    return text + suffix


class Local:
    """A variable in scope: `kind` is scalar, struct, vector, array, ref, cref, ptr."""

    def __init__(self, name, kind, type, *, mutable=True, extra=None):
        self.name, self.kind, self.type, self.mutable, self.extra = name, kind, type, \
            mutable, extra


class Generator:
    """Random tests from one seed: the same seed gives the same tests."""

    def __init__(self, seed: int, profile: str = "host", fma: bool = True):
        self.seed = seed
        self.rng = random.Random(seed)
        self.profile = profile
        self.fma = fma
        self.allow_auto = True
        self.const_only = False             # constexpr initialisers: unsigned literals only
        # every float-to-integer conversion clamped (kernels: one thread's undefined
        # behaviour leaves the whole block out)
        self.strict = False

    # ------------------------------------------------------------------ test
    def test(self, index: int) -> Test:
        rng = self.rng
        seed = rng.randrange(1 << 30)
        rng = self.rng = random.Random(seed)
        self.t = Test(index, seed=seed)
        self.allow_auto, self.strict, self.const_only = True, False, False
        self.in_helper = False
        self.frames = [[]]
        self.counter = 0
        self.helpers = []          # (kind, name, info) callable helpers of this test
        self.structs = []
        self.methods = {}          # struct name -> [(method, return or argument type)]
        self.enums = []            # (name, scoped, underlying type, {enumerator: value})
        self.lambdas = []          # (name, parameter type, return type)
        # inputs
        for _ in range(rng.randint(3, 7)):
            code = rng.choice(list(INPUTS))
            t = INPUTS[code]
            name = self.fresh("a")
            self.t.body.append(S("decl", text=t.name, name=name,
                                 kids=[E("index", t, kids=[var("in_" + code, None),
                                       lit(f"tid * {NIN} + {rng.randrange(NIN)}", None)])]))
            self.declare(Local(name, "scalar", t))
        for _ in range(rng.randint(0, 2)):
            self.make_struct()
        if rng.random() < 0.3:
            self.make_enum()
        if rng.random() < 0.2:
            self.make_pair_template()
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            self.make_helper()
        for _ in range(rng.randint(4, 12)):
            self.t.body.extend(self.statement(depth=2))
        self.outputs()
        return self.t

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def declare(self, local: Local):
        self.frames[-1].append(local)

    def locals(self):
        for frame in self.frames:
            yield from frame

    # ------------------------------------------------------------------ types
    def scalar_type(self, want=None) -> cxx.Type:
        pool = [(t, w) for t, w in zip(SCALARS, WEIGHTS)
                if want is None or (want == "int") == t.integer]
        return self.rng.choices([t for t, _ in pool], [w for _, w in pool])[0]

    def spelling(self, t: cxx.Type, one_word=False) -> str:
        names = [s for s in cxx.SPELLINGS[t] if not one_word or cxx.one_word(s)]
        return self.rng.choice(names) if names else None

    # ------------------------------------------------------------------ leaves
    def accessors(self, want=None, lvalue=False):
        """(E, Local) of every scalar reachable from a local: the variable, a field, a
        vector component, an array element (its index masked), through a reference or a
        pointer."""
        out = []
        for loc in self.locals():
            if lvalue and not loc.mutable:
                continue
            k = loc.kind
            if k in ("scalar", "ref", "cref"):
                if lvalue and k == "cref":
                    continue
                out.append((var(loc.name, loc.type), loc))
            elif k == "ptr":
                out.append((E("deref", loc.type, kids=[var(loc.name)]), loc))
            elif k == "struct":
                for fname, ft in loc.type[1]:
                    out.append((E("member", ft, fname, kids=[var(loc.name)]), loc))
            elif k == "vector":
                comp, n = VECTORS[loc.type], int(loc.type[-1])
                for c in "xyzw"[:n]:
                    out.append((E("member", comp, c, kids=[var(loc.name)]), loc))
            elif k in ("array", "array2", "varray"):
                out.append((None, loc))         # element built on demand (masked index)
            elif k == "shared":
                # a __shared__ array (kernels.py): the thread's own elements, or (read
                # only) any element, by a masked index
                et, n = loc.type
                if loc.extra == "any":
                    if not lvalue:
                        out.append((None, loc))
                else:
                    for own in loc.extra:
                        out.append((E("index", et, kids=[var(loc.name), lit(own, None)]),
                                    loc))
        return [(e, loc) for e, loc in out
                if e is None and (want is None or (want == "int") == self.elem_type(loc).integer)
                or e is not None and (want is None or (want == "int") == e.type.integer)]

    @staticmethod
    def elem_type(loc):
        """The scalar type of an array's elements (a vector array's components)."""
        if loc.kind == "varray":
            return VECTORS[loc.type[0]]
        return loc.type[0]

    def element(self, loc, depth) -> E:
        """An element of array `loc`, its indices masked to the lengths: ``r[(e) & 7]``,
        ``m[(e) & 3][(f) & 1]``, ``v[(e) & 3].y``."""
        if loc.kind == "array2":
            et, n, m = loc.type
            return E("index", et, kids=[E("index", None, kids=[
                var(loc.name), self.masked_index(n, depth)]), self.masked_index(m, depth)])
        if loc.kind == "varray":
            vname, n = loc.type
            comp = self.rng.choice("xyzw"[:int(vname[-1])])
            return E("member", VECTORS[vname], comp, kids=[
                E("index", None, kids=[var(loc.name), self.masked_index(n, depth)])])
        et, n = loc.type
        return E("index", et, kids=[var(loc.name), self.masked_index(n, depth)])

    def leaf(self, want=None, depth=0) -> E:
        rng = self.rng
        if not self.const_only and rng.random() < 0.12:
            special = self.special_leaf(want, depth)
            if special is not None:
                return special
        if self.const_only:
            return self.literal(want)
        cands = self.accessors(want)
        if cands and rng.random() < 0.8:
            e, loc = rng.choice(cands)
            if e is None:                       # an array element
                return self.element(loc, depth)
            if rng.random() < 0.04 and self.profile == "host":
                return self.punned(e, loc, want) or e
            return e
        return self.literal(want)

    def special_leaf(self, want, depth):
        """A method's result (``s.sum()``), an enumerator, a lambda's call, an overload's
        call, a vector element loaded from global memory through reinterpret_cast or a
        value through __ldg, or a pointer difference; None if none fits."""
        rng = self.rng
        cands = []
        for loc in self.locals():
            if loc.kind == "struct":
                for m, ret in self.methods.get(loc.type[0], []):
                    if m == "sum" and (want is None or (want == "int") == ret.integer):
                        cands += [lambda loc=loc, ret=ret: E("call", ret, f"{loc.name}.sum")] * 3
            if loc.kind == "ptr" and isinstance(loc.extra, tuple) and want != "float":
                cands.append(lambda loc=loc: E("bin", LONG, "-", kids=[
                    var(loc.name), var(loc.extra[1])]))
        for name, scoped, under, values in self.enums:
            t = cxx.promote(under or INT)
            if want is None or (want == "int"):
                e = rng.choice(list(values))
                if scoped:
                    ut = under or INT
                    cands.append(lambda e=e, name=name, ut=ut: E(
                        "cast", ut, ut.name, form="static", kids=[lit(f"{name}::{e}", None)]))
                else:
                    # +K: the enumerator promoted (its own type is the enumeration, which
                    # a deduction or a decltype would see)
                    cands.append(lambda e=e, t=t: E("un", t, "+", kids=[lit(e, None)]))
        for name, pt, ret in self.lambdas:
            if self.visible(name) and (want is None or (want == "int") == ret.integer):
                cands.append(lambda name=name, pt=pt, ret=ret: E(
                    "call", ret, name, kids=[self.convert(self.expr(None, depth - 1), pt)]))
        if self.frames_have_inputs():
            if want != "int":
                cands += [lambda: self.vector_load("float"), lambda: self.vector_load("float")]
            if want != "float":
                cands += [lambda: self.vector_load("int")]
            cands += [lambda: self.ldg(want)]
        if not cands:
            return None
        return rng.choice(cands)()

    def frames_have_inputs(self) -> bool:
        """Whether the input arrays and tid are in scope (not in a helper's body)."""
        return not self.in_helper

    def visible(self, name) -> bool:
        return any(loc.name == name for loc in self.locals())

    def vector_load(self, want) -> E:
        """A component of a vector loaded from an input array through reinterpret_cast
        (``reinterpret_cast<const float4*>(in_f32)[(tid * 6 + 2) / 4].y``), aligned: the
        element index is a multiple of the vector's length."""
        rng = self.rng
        choices = {"float": [("float2", "f32"), ("float4", "f32"), ("double2", "f64")],
                   "int": [("int2", "i32"), ("int4", "i32"), ("uint2", "u32"), ("uint4", "u32"),
                           ("longlong2", "i64"), ("ulonglong2", "u64"), ("short2", "i16"),
                           ("char4", "i8"), ("uchar4", "u8")]}[want]
        vname, code = rng.choice(choices)
        n = int(vname[-1])
        base = "gid" if getattr(self.t, "kind", "") == "kernel" else "tid"
        index = lit(f"({base} * {NIN} + {rng.randrange(NIN)}) / {n}", None)
        load = E("index", None, kids=[E("cast", None, f"const {vname}*", form="reinterpret",
                                        kids=[var("in_" + code)]), index])
        comp = rng.choice("xyzw"[:n])
        return E("member", VECTORS[vname], comp, kids=[load])

    def ldg(self, want) -> E:
        code = self.rng.choice([c for c, t in INPUTS.items()
                                if want is None or (want == "int") == t.integer])
        base = "gid" if getattr(self.t, "kind", "") == "kernel" else "tid"
        index = lit(f"{base} * {NIN} + {self.rng.randrange(NIN)}", None)
        return E("call", INPUTS[code], "__ldg", kids=[E("addr", None, kids=[
            E("index", None, kids=[var("in_" + code), index])])])

    def masked_index(self, n: int, depth: int) -> E:
        if depth <= 0:
            # no array element inside (an index of an index of ... would not end)
            cands = [e for e, loc in self.accessors("int") if e is not None]
            idx = self.rng.choice(cands) if cands and self.rng.random() < 0.8 \
                else self.literal("int")
        else:
            idx = self.expr("int", depth - 1)
        return E("bin", cxx.common(idx.type, INT), "&", kids=[idx, lit(str(n - 1), INT)])

    def punned(self, e: E, loc: Local, want=None):
        """The bits of a scalar local read as another type of its size, through
        reinterpret_cast of its address or of a reference to it."""
        if loc.kind != "scalar" or e.kind != "var" or self.is_counter(loc):
            return None
        # integers only: a float's bits read as an integer would show its NaN's bits,
        # which differ between the GPU (0x7FFFFFFF) and x86 (0xFFC00000)
        same = [t for t in SCALARS if t.size == loc.type.size and t != loc.type and t != BOOL
                and t.integer and (want is None or (want == "int") == t.integer)]
        if loc.type == BOOL or loc.type.floating or not same:
            return None
        t = self.rng.choice(same)
        loc.extra = loc.extra or "addressed"
        if self.rng.random() < 0.5:
            return E("deref", t, kids=[E("cast", None, f"const {t.name}*", form="reinterpret",
                                         kids=[E("addr", None, kids=[e])])])
        return E("cast", t, f"const {t.name}&", form="reinterpret", kids=[e])

    def literal(self, want=None) -> E:
        rng = self.rng
        if self.const_only:
            value = rng.choice([0, 1, 2, 3, 7, 31, 255, 1000, 65535, (1 << 32) - 1,
                                rng.randrange(1 << 32)])
            suffix = rng.choice(["u", "ul", "ull"])
            return lit(f"{value}{suffix}", cxx.literal_type(value, 10, suffix))
        if want != "int" and (want == "float" or rng.random() < 0.3):
            return self.float_literal()
        r = rng.random()
        if r < 0.05:
            return lit(rng.choice(["true", "false"]), BOOL)
        if r < 0.12:
            c = rng.choice(["'a'", "'0'", "'\\n'", "'\\x7f'", "'\\0'", "'~'", "' '", "'Z'"])
            return lit(c, CHAR)
        while True:
            value = rng.choice([0, 1, 1, 2, 3, 5, 7, 8, 15, 16, 31, 32, 63, 64, 100, 127, 128,
                                255, 256, 1000, 4095, 32767, 32768, 65535, 65536, 100000,
                                (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 32,
                                (1 << 63) - 1, 1 << 63, (1 << 64) - 1,
                                rng.randrange(1 << 8), rng.randrange(1 << 16),
                                rng.randrange(1 << 32), rng.randrange(1 << 64)])
            base = rng.choice([10, 10, 10, 16, 16, 8])
            suffix = rng.choice(["", "", "", "u", "U", "l", "ul", "ll", "LL", "ull", "uLL"])
            t = cxx.literal_type(value, base, suffix)
            if t is None:
                continue
            text = {10: str(value), 16: hex(value), 8: "0" + oct(value)[2:]}[base]
            if base == 8 and value == 0:
                text = "0"
            e = lit(text + suffix, t)
            if rng.random() < 0.15:
                return E("un", cxx.promote(t), "-", kids=[e])
            return e

    def float_literal(self) -> E:
        rng = self.rng
        is_float = rng.random() < 0.65
        suffix = "f" if is_float else ""
        t = FLOAT if is_float else DOUBLE
        r = rng.random()
        if r < 0.4:
            x = rng.choice([0.0, 1.0, 2.0, 0.5, 0.25, 3.0, 10.0, 100.0, 0.1, 1e-3, 1e6,
                            16777216.0, 16777217.0, 2147483648.0, 4294967296.0, 1e20, 1e-20,
                            3.4028234663852886e38, 1.1754943508222875e-38, 1.4e-45,
                            0.30000000000000004, 9007199254740993.0])
        elif r < 0.8:
            x = rng.uniform(-1000, 1000)
        else:
            x = rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30)
        if is_float and abs(x) > 3.4e38:
            x = 1e38
        text = _float_text(abs(x), suffix, rng)
        e = lit(text, t)
        if x < 0 or rng.random() < 0.1:
            return E("un", t, "-", kids=[e])
        return e

    # ------------------------------------------------------------------ expressions
    def expr(self, want=None, depth=2) -> E:
        """A side-effect-free expression of an integer (`want` "int"), floating ("float")
        or any arithmetic type."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.22:
            return self.leaf(want, depth)
        d = depth - 1
        kinds = ["arith", "arith", "arith", "div", "cast", "cast", "cast", "cond", "neg"]
        if want != "float":
            kinds += ["mod", "shift", "shift", "bit", "bit", "cmp", "cmp", "logic", "not",
                      "intrin"]
        if want != "int":
            kinds += ["math", "math"]
        if self.helpers:
            kinds += ["call", "call"]
        if want != "float" and rng.random() < 0.2:
            kinds += ["sizeof"]
        if rng.random() < 0.05:
            kinds += ["comma"]
        if self.const_only:
            kinds = ["arith", "arith", "div", "mod", "shift", "bit", "bit", "cmp", "cond",
                     "neg"]
            want = "int"
        kind = rng.choice(kinds)
        if kind == "arith":
            op = rng.choice("+-*")
            if want == "float":
                a, b = self.expr("float", d), self.expr(None, d)
                if rng.random() < 0.5:
                    a, b = b, a
            else:
                a, b = self.expr(want, d), self.expr(want, d)
            return E("bin", cxx.common(a.type, b.type), op, kids=[a, b])
        if kind in ("div", "mod"):
            sub = "int" if kind == "mod" else want
            a, b = self.expr(sub, d), self.expr(sub, d)
            if want == "float" and not (a.type.floating or b.type.floating):
                a = self.expr("float", d)
            t = cxx.common(a.type, b.type)
            if t.integer:
                b = self.guard_divisor(b)
            return E("bin", t, "/" if kind == "div" else "%", kids=[a, b])
        if kind == "shift":
            a = self.expr("int", d)
            t = cxx.promote(a.type)
            if self.profile == "gpu" and rng.random() < 0.2:
                count = self.expr("int", d)         # the GPU's shift by the width or more
            elif rng.random() < 0.35:
                count = lit(str(rng.randrange(t.bits)), INT)
            else:
                c = self.expr("int", d)
                count = E("bin", cxx.common(c.type, INT), "&",
                          kids=[c, lit(str(t.bits - 1), INT)])
            return E("bin", t, rng.choice(["<<", ">>"]), kids=[a, count])
        if kind == "bit":
            a, b = self.expr("int", d), self.expr("int", d)
            return E("bin", cxx.common(a.type, b.type), rng.choice("&|^"), kids=[a, b])
        if kind == "cmp":
            a, b = self.expr(None, d), self.expr(None, d)
            return E("bin", BOOL, rng.choice(["<", ">", "<=", ">=", "==", "!="]), kids=[a, b])
        if kind == "logic":
            return E("bin", BOOL, rng.choice(["&&", "||"]),
                     kids=[self.expr(None, d), self.expr(None, d)])
        if kind == "not":
            return E("un", BOOL, "!", kids=[self.expr(None, d)])
        if kind == "neg":
            a = self.expr(want, d)
            if a.type.integer and want != "float" and rng.random() < 0.5:
                return E("un", cxx.promote(a.type), "~", kids=[a])
            return E("un", cxx.promote(a.type), rng.choice(["-", "-", "+"]), kids=[a])
        if kind == "cond":
            c = self.expr(None, d)
            a, b = self.expr(want, d), self.expr(want, d)
            return E("cond", cxx.conditional(a.type, b.type), kids=[c, a, b])
        if kind == "cast":
            return self.cast(self.scalar_type(want), self.expr(None, d))
        if kind == "comma":
            a, b = self.expr(None, d), self.expr(want, d)
            return E("comma", b.type, kids=[a, b])
        if kind == "math":
            return self.math(d)
        if kind == "intrin":
            return self.intrinsic(d, want)
        if kind == "call":
            e = self.call(d, want)
            return e if e is not None else self.leaf(want, d)
        if kind == "sizeof":
            return E("sizeof", ULONG, kids=[self.expr(None, d)])
        raise AssertionError(kind)

    def guard_divisor(self, b: E) -> E:
        """`b` never 0 as a divisor: ``(b | 1)`` or ``(b == 0 ? 7 : b)`` (``INT_MIN / -1``
        stays possible, and is caught on the host). In a constexpr initialiser it is always
        guarded: a division by zero there is ill-formed C++, which nvcc refused on the H200
        as the emulator does (found by bench/differential_gpu.py, seed 1, test 26)."""
        if self.profile == "gpu" and self.rng.random() < 0.3 and not self.const_only:
            return b                        # the GPU's x / 0
        if self.rng.random() < 0.5:
            return E("bin", cxx.promote(b.type), "|", kids=[b, lit("1", INT)])
        return E("cond", cxx.conditional(b.type, INT),
                 kids=[E("bin", BOOL, "==", kids=[b, lit("0", INT)]), lit("7", INT), b])

    def clamp(self, e: E, to: cxx.Type) -> E:
        """`e` (floating) clamped into integer type `to`'s range, so converting it is
        defined: ``fminf(fmaxf(e, lo), hi)`` (fmax of a NaN gives lo)."""
        if e.type is None or not e.type.floating or to.floating or to == BOOL:
            return e
        if self.profile == "gpu" and self.rng.random() < 0.5:
            return e                        # the GPU's saturating conversion
        if self.rng.random() < 0.1 and not self.strict:
            return e                        # left to the host's sanitizer
        f32 = e.type == FLOAT
        ft = np.float32 if f32 else np.float64
        lo, hi = ft(to.min), ft(to.max)
        while float(hi) >= to.max + 1:
            hi = np.nextafter(hi, ft(0))
        while float(lo) <= to.min - 1:
            lo = np.nextafter(lo, ft(0))
        suffix = "f" if f32 else ""
        names = ("fminf", "fmaxf") if f32 else ("fmin", "fmax")
        lo_e = lit(float.hex(float(lo)) + suffix, e.type)
        hi_e = lit(float.hex(float(hi)) + suffix, e.type)
        return E("call", e.type, names[0], kids=[E("call", e.type, names[1],
                                                   kids=[e, lo_e]), hi_e])

    def nonan(self, e: E, t) -> E:
        """`e` (converted to float type `t`) with NaN replaced by -max, where a NaN's sign
        or bits would be read: the GPU writes a computed float NaN as 0x7FFFFFFF, x86 as
        0xFFC00000 (their sign bits differ too), a difference of the platforms the
        emulator documents (docs/emulator.md, "Arithmetic"), not a bug to find."""
        f = t == FLOAT
        big = lit("3.40282347e38f" if f else "1.7976931348623157e308", t)
        return E("call", t, "fmaxf" if f else "fmax", kids=[e, E("un", t, "-", kids=[big])])

    def cast(self, to: cxx.Type, e: E) -> E:
        """`e` converted to `to` by one of C++'s cast forms."""
        rng = self.rng
        e = self.clamp(e, to)
        forms = ["c", "static", "static"]
        if self.spelling(to, one_word=True):
            forms += ["func", "func"]
            if not cxx.narrowing(e.type, to):
                forms += ["brace"]
        form = rng.choice(forms)
        spelling = self.spelling(to, one_word=form in ("func", "brace"))
        return E("cast", to, spelling, form=form, kids=[e])

    def convert(self, e: E, to: cxx.Type) -> E:
        """`e` ready for an implicit conversion to `to` (clamped when floating to integer)."""
        return self.clamp(e, to)

    def no_narrowing(self, e: E, to: cxx.Type) -> E:
        """`e` as a brace initialiser of `to`: an explicit cast where it would narrow."""
        if cxx.narrowing(e.type, to):
            return self.cast(to, e)
        return e

    def math(self, d) -> E:
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            return E("call", FLOAT, rng.choice(FLOAT_MATH1), kids=[self.expr(None, d)])
        if r < 0.45:
            return E("call", DOUBLE, rng.choice(DOUBLE_MATH1), kids=[self.typed(DOUBLE, d)])
        if r < 0.6:
            name = rng.choice(FLOAT_MATH2)
            kids = [self.expr(None, d), self.expr(None, d)]
            if name == "copysignf":
                kids[1] = self.nonan(kids[1], FLOAT)
            return E("call", FLOAT, name, kids=kids)
        if r < 0.68:
            name = rng.choice(DOUBLE_MATH2)
            kids = [self.typed(DOUBLE, d), self.typed(DOUBLE, d)]
            if name == "copysign":
                kids[1] = self.nonan(kids[1], DOUBLE)
            return E("call", DOUBLE, name, kids=kids)
        if r < 0.75 and self.fma:
            if rng.random() < 0.6:
                return E("call", FLOAT, "fmaf", kids=[self.expr(None, d) for _ in range(3)])
            t = rng.choice([FLOAT, DOUBLE])
            return E("call", t, "fma", kids=[self.typed(t, d) for _ in range(3)])
        # <cmath>'s float overloads: sqrt(float) is a float
            t = rng.choice([FLOAT, FLOAT, DOUBLE])
            args = [self.typed(t, d)]
            name = rng.choice(OVERLOADED1)
            if rng.random() < 0.4:
                name = rng.choice(OVERLOADED2)
                args.append(self.typed(t, d))
                if name == "copysign":
                    args[1] = self.nonan(args[1], t)
            return E("call", t, name, kids=args)
        # min/max: one of CUDA's signatures, each argument of its type
        a, b = rng.choice(MINMAX)
        return E("call", a if a == b else cxx.common(a, b), rng.choice(["min", "max"]),
                 kids=[self.typed(a, d), self.typed(b, d)])

    def typed(self, t: cxx.Type, d) -> E:
        """An expression of exactly type `t` (a cast when the one made is not)."""
        e = self.expr("int" if t.integer else "float", d)
        if e.type != t:
            e = self.cast(t, e)
        return e

    def intrinsic(self, d, want=None) -> E:
        rng = self.rng
        choices = [
            ("__popc", INT, [UINT]), ("__popcll", INT, [ULLONG]), ("__clz", INT, [INT]),
            ("__ffs", INT, [INT]), ("__brev", UINT, [UINT]), ("__mul24", INT, [INT, INT]),
            ("__umul24", UINT, [UINT, UINT]), ("__float_as_uint", UINT, [FLOAT]),
            ("__float_as_int", INT, [FLOAT]), ("__uint_as_float", FLOAT, [UINT]),
            ("__int_as_float", FLOAT, [INT]), ("llabs", LLONG, [LLONG]),
            ("umin", UINT, [UINT, UINT]), ("umax", UINT, [UINT, UINT])]
        choices = [c for c in choices if want is None or (want == "int") == c[1].integer]
        name, ret, args = rng.choice(choices)
        kids = [self.convert(self.expr(None, d), a) for a in args]
        if name in ("__float_as_uint", "__float_as_int"):
            kids = [self.nonan(kids[0], FLOAT)]
        if rng.random() < 0.15 and want != "float":
            # abs: CUDA's overloads (int, long, long long, float, double), argument exact
            t = rng.choice([INT, LONG, LLONG] + ([FLOAT, DOUBLE] if want is None else []))
            return E("call", t, "abs", kids=[self.typed(t, d)])
        return E("call", ret, name, kids=kids)

    # ------------------------------------------------------------------ helpers
    def make_struct(self):
        """A struct of 2 to 4 scalar fields; sometimes with a const method (``sum()``), a
        method that changes the object (``bump(x)``), an ``operator+``, and helpers that
        take and return it by value, by const reference and by pointer."""
        rng = self.rng
        name = f"S{self.t.index}_{len(self.structs)}"
        fields = [(f"f{i}", self.scalar_type()) for i in range(rng.randint(2, 4))]
        body = " ".join(f"{self.spelling(ft)} {fn};" for fn, ft in fields)
        methods = []
        (f0, t0), (f1, t1) = fields[0], fields[1]
        if rng.random() < 0.5:
            ret = self.scalar_type()
            op = rng.choice("+-*")
            expr = f"({f0} {op} {f1})"
            if ret.integer and cxx.common(t0, t1).floating:
                expr = f"fminf(fmaxf({expr}, -1e9f), 1e9f)" if ret.size >= 4 else "0"
            body += f" __device__ {self.spelling(ret)} sum() const {{ return {expr}; }}"
            methods.append(("sum", ret))
        if rng.random() < 0.5 and t0 != BOOL:
            at = self.scalar_type("int" if t0.integer else None)
            op = rng.choice(["+=", "-=", "^="] if t0.integer and at.integer else ["+=", "-="])
            value = "x" if not (t0.integer and at.floating) else "(int)fminf(fmaxf(x, -1e6f), 1e6f)"
            body += (f" __device__ void bump({self.spelling(at)} x) {{ {f0} {op} {value}; "
                     f"{f1} = {f1} + 1; }}")
            methods.append(("bump", at))
        self.t.decls.append(f"struct {name} {{ {body} }};")
        self.structs.append((name, fields))
        self.methods[name] = methods
        if rng.random() < 0.4:
            lines = [f"__device__ {name} operator+(const {name}& a, const {name}& b) {{",
                     f"  {name} r = a;"]
            for fn, ft in fields:
                lines.append(f"  r.{fn} = a.{fn} {'+' if ft != BOOL else '|'} b.{fn};")
            lines += ["  return r;", "}"]
            self.t.decls.append("\n".join(lines))
            self.methods[name].append(("+", None))
        if rng.random() < 0.5:
            h = f"mix{self.t.index}_{len(self.structs)}"
            lines = [f"__device__ {name} {h}({name} a, const {name}& b, {name}* c) {{",
                     f"  a.{f0} = b.{f1};", f"  c->{f1} = a.{f0};",
                     f"  {name} r = *c;", f"  r.{f0} = b.{f0};", "  return r;", "}"]
            self.t.decls.append("\n".join(lines))
            self.methods[name].append((h, "mix"))

    def make_pair_template(self):
        """``template <typename T> struct Pair { T a, b; T sum() const; T mix(T x) const; }``
        with two instantiations, used as structs (their sum() a method)."""
        rng = self.rng
        name = f"Pair{self.t.index}"
        self.t.decls.append(
            f"template <typename T> struct {name} {{ T a, b; "
            f"__device__ T sum() const {{ return a + b; }} "
            f"__device__ T mix(T x) const {{ return a * x - b; }} }};")
        for t in rng.sample([INT, FLOAT, UINT, SHORT, DOUBLE, LLONG, UCHAR], 2):
            inst = f"{name}<{self.spelling(t)}>"
            self.structs.append((inst, [("a", t), ("b", t)]))
            self.methods[inst] = [("sum", t)]

    def make_helper(self):
        rng = self.rng
        kind = rng.choice(["value", "value", "ref", "template", "nontype", "overload"])
        name = f"f{self.t.index}_{len(self.helpers)}"
        saved = self.frames
        self.frames = [[]]
        self.in_helper = True
        if kind == "value":
            params = [(self.scalar_type(), self.fresh("p")) for _ in range(rng.randint(1, 3))]
            ret = self.scalar_type()
            for pt, pn in params:
                self.declare(Local(pn, "scalar", pt))
            body = []
            for _ in range(rng.randint(0, 3)):
                body.extend(self.statement(depth=1, allow_return=ret))
            body.append(S("return", kids=[self.convert(self.expr(None, 2), ret)]))
            texts = [f"{self.spelling(pt)} {pn}" for pt, pn in params]
            default = None
            if rng.random() < 0.3:
                # a default argument: the call may leave it out (clang writes it out)
                lt = params[-1][0]
                default = self.literal("int" if lt.integer else None)
                if cxx.narrowing(default.type, lt) and lt.integer and default.type.floating:
                    default = lit("3", INT)
                texts[-1] += f" = {default.render()}"
            head = f"__device__ {self.spelling(ret)} {name}({', '.join(texts)})"
            self.helpers.append(("value", name, (ret, [pt for pt, _ in params], default)))
        elif kind == "ref":
            tt = self.scalar_type()
            pt = self.scalar_type()
            x, y = self.fresh("x"), self.fresh("y")
            cref = rng.random() < 0.4
            self.declare(Local(x, "ref", tt))
            self.declare(Local(y, "cref" if cref else "scalar", pt, mutable=not cref))
            body = []
            for _ in range(rng.randint(1, 3)):
                body.extend(self.statement(depth=1, allow_return="void"))
            ys = f"const {self.spelling(pt)}& {y}" if cref else f"{self.spelling(pt)} {y}"
            head = f"__device__ void {name}({self.spelling(tt)}& {x}, {ys})"
            self.helpers.append(("ref", name, (tt, pt)))
        elif kind == "template":
            cls = rng.choice(["int", None])
            a, b = self.fresh("a"), self.fresh("b")
            ops = ["+", "-", "*"] + (["&", "|", "^"] if cls == "int" else [])
            op1, op2 = rng.choice(ops), rng.choice(ops)
            k = rng.choice(["2", "3", "T(1)", "T(7)", "static_cast<T>(5)"])
            if cls == "int":
                ret = f"(({a} {op1} {b}) {op2} ({a} >> ({k} & 7)))"
            else:
                ret = f"((({a} {op1} {b}) {op2} {k}) > {a} ? ({a} {op1} {k}) : {b})"
            body = [S("raw", text=f"T r = {ret};\nreturn r;")]
            head = f"template <typename T> __device__ T {name}(T {a}, T {b})"
            self.helpers.append(("template", name, cls))
        elif kind == "overload":
            # three overloads: the call's argument type picks one, as C++ ranks an exact
            # match, then a promotion (short -> int, float -> double)
            self.frames = saved
            x = self.fresh("x")
            defs = [f"__device__ long long {name}(int {x}) {{ return {x} * 3ll - 1; }}",
                    f"__device__ double {name}(double {x}) {{ return {x} * 0.5 + 1; }}",
                    f"__device__ unsigned {name}(unsigned {x}) {{ return {x} ^ 0x5u; }}"]
            self.t.decls.extend(defs)
            self.helpers.append(("overload", name, None))
            self.in_helper = False
            return
        else:
            nt = rng.choice([INT, UINT, LLONG, SHORT, UCHAR, ULLONG, CHAR])
            pt = rng.choice([INT, FLOAT, LLONG, UINT, DOUBLE])
            x = self.fresh("x")
            op = rng.choice(["+", "-", "*"])
            ret = f"(({x} {op} N) + (N / 2) + sizeof(N))" if pt.integer else \
                f"(({x} {op} N) + N / 2.0f)"
            body = [S("return", kids=[lit(ret, pt)])]
            head = (f"template <{self.spelling(nt)} N> __device__ {self.spelling(pt)} "
                    f"{name}({self.spelling(pt)} {x})")
            self.helpers.append(("nontype", name, (nt, pt)))
        self.frames = saved
        self.in_helper = False
        self.t.functions.append(Function(name, head, body))

    def call(self, d, want=None):
        """A call of one of the test's value-returning helpers of the kind `want` asks for
        (None if there is none)."""
        rng = self.rng

        def fits(h):
            kind, _, info = h
            if kind == "overload":
                return True
            if want is None or kind == "ref":
                return kind != "ref"
            if kind == "value":
                return (want == "int") == info[0].integer
            if kind == "template":
                return info is None or (want == "int") == (info == "int")
            return (want == "int") == info[1].integer
        fns = [h for h in self.helpers if fits(h)]
        if not fns:
            return None
        kind, name, info = rng.choice(fns)
        if kind == "overload":
            at = rng.choice([INT, UINT, DOUBLE, FLOAT, BOOL, CHAR, SCHAR, UCHAR, SHORT, USHORT])
            chosen = at if at in (INT, UINT, DOUBLE) else DOUBLE if at == FLOAT else INT
            ret = {INT: LLONG, DOUBLE: DOUBLE, UINT: UINT}[chosen]
            e = E("call", ret, name, kids=[self.typed(at, d)])
            if want is not None and (want == "int") != ret.integer:
                return self.cast(self.scalar_type(want), e)
            return e
        if kind == "value":
            ret, params, default = info
            if default is not None and rng.random() < 0.5:
                params = params[:-1]            # the default argument
            return E("call", ret, name, kids=[self.convert(self.expr(None, d), p)
                                              for p in params])
        if kind == "template":
            t = self.scalar_type(info or want)
            if t == BOOL:
                t = INT
            if rng.random() < 0.5:
                args = [self.convert(self.expr(info, d), t), self.convert(self.expr(info, d), t)]
                return E("call", t, f"{name}<{self.spelling(t)}>", kids=args)
            return E("call", t, name, kids=[self.typed(t, d), self.typed(t, d)])
        nt, pt = info
        lo, hi = max(nt.min, -1000), min(nt.max, 1000)
        value = rng.randint(lo, hi)
        if nt == CHAR and rng.random() < 0.3:
            arg = rng.choice(["'a'", "'0'", "' '"])
        elif rng.random() < 0.2:
            arg = f"sizeof({rng.choice(['int', 'double', 'short', 'float4'])})"
        elif value < 0:
            arg = f"({value})"
        else:
            arg = str(value) + rng.choice(["", "u", "l", "ll"] if value <= nt.max else [""])
            if nt == BOOL:
                arg = "true"
        return E("call", pt, f"{name}<{arg}>", kids=[self.convert(self.expr(None, d), pt)])

    # ------------------------------------------------------------------ statements
    def statement(self, depth: int, allow_return=None, in_loop=False) -> list:
        rng = self.rng
        kinds = ["decl"] * 6 + ["assign"] * 6 + ["incdec"]
        if depth > 0:
            kinds += ["if", "if", "loop"]
        kinds += ["vector", "array", "struct", "ref", "ptr"] if rng.random() < 0.5 else []
        if any(h[0] == "ref" for h in self.helpers):
            kinds += ["refcall", "refcall"]
        if rng.random() < 0.4:
            kinds += ["switch", "sidefx", "sidefx", "lambda", "constexpr", "ptrarith",
                      "rangefor", "bindings", "decltype"]
        if any(loc.kind == "struct" for loc in self.locals()):
            kinds += ["method", "method"]
        if in_loop:
            kinds += ["jump"]
        if allow_return is not None and depth < 2:
            kinds += ["return"]
        kind = rng.choice(kinds)
        d = rng.randint(1, 3)
        if kind == "decl":
            return [self.decl(d)]
        if kind == "assign":
            return self.assign(d)
        if kind == "incdec":
            targets = [e for e, loc in self.accessors(lvalue=True)
                       if e is not None and e.type != BOOL and not self.is_counter(loc)]
            if not targets:
                return [self.decl(d)]
            e = rng.choice(targets)
            op = rng.choice(["++", "--"])
            if rng.random() < 0.5:
                return [S("expr", kids=[E("un", e.type, op, kids=[e])])]
            return [S("expr", kids=[E("post", e.type, op, kids=[e])])]
        if kind == "if":
            cond = self.expr(None, 2)
            self.frames.append([])
            body = self.block(depth - 1, allow_return, in_loop)
            self.frames.pop()
            orelse = []
            if rng.random() < 0.5:
                self.frames.append([])
                orelse = self.block(depth - 1, allow_return, in_loop)
                self.frames.pop()
            return [S("if", kids=[cond], body=body, orelse=orelse)]
        if kind == "loop":
            return [self.loop(depth, allow_return)]
        if kind == "jump":
            return [S("if", kids=[self.expr(None, 1)],
                      body=[S("raw", text=rng.choice(["break;", "continue;"]))])]
        if kind == "return":
            if allow_return == "void":
                ret = S("return")
            else:
                ret = S("return", kids=[self.convert(self.expr(None, 2), allow_return)])
            return [S("if", kids=[self.expr(None, 1)], body=[ret])]
        if kind == "vector":
            return [self.vector_decl(d)]
        if kind == "array":
            return self.array_decl(d)
        if kind == "struct":
            return self.struct_decl(d)
        if kind == "ref":
            return self.ref_decl(d)
        if kind == "ptr":
            return self.ptr_decl(d)
        if kind == "refcall":
            return self.ref_call(d)
        if kind == "switch":
            return [self.switch(depth, allow_return, in_loop)]
        if kind == "sidefx":
            return self.side_effects(d)
        if kind == "lambda":
            return self.lambda_decl(d)
        if kind == "constexpr":
            return self.constexpr_decl()
        if kind == "method":
            return self.method_call(d)
        if kind == "ptrarith":
            return self.pointer_into_array(d)
        if kind == "rangefor":
            return self.range_for(depth, allow_return, in_loop)
        if kind == "bindings":
            return self.bindings(d)
        if kind == "decltype":
            e = self.expr(None, d)
            while not (e.kind in ("bin", "call", "sizeof") or e.kind == "un" and e.text in "+-~!"
                       or e.kind == "cast" and "&" not in e.text):
                e = self.expr(None, d)      # a prvalue: decltype of an lvalue is a T&
            name = self.fresh("v")
            init = self.expr(None, d)
            if e.type.integer and init.type.floating:
                init = self.clamp(init, e.type)
            self.declare(Local(name, "scalar", e.type))
            return [S("decl", text=f"decltype({e.render()})", name=name, kids=[init])]
        raise AssertionError(kind)

    def range_for(self, depth, allow_return, in_loop) -> list:
        """``for (auto& v : r) { ... }`` (v an alias of each element) or ``for (T v : r)``
        (a copy) over a local array."""
        rng = self.rng
        arrays = [loc for loc in self.locals() if loc.kind == "array"]
        if not arrays:
            return self.array_decl(2)
        loc = rng.choice(arrays)
        et, n = loc.type
        v = self.fresh("e")
        by_ref = loc.mutable and rng.random() < 0.6
        self.frames.append([Local(v, "ref" if by_ref else "scalar", et,
                                  mutable=by_ref or rng.random() < 0.5)])
        body = self.block(max(depth - 1, 0), allow_return, True)
        self.frames.pop()
        text = f"auto& {v}" if by_ref else f"{self.spelling(et)} {v}"
        return [S("rangefor", text=text, name=loc.name, body=body)]

    def bindings(self, d) -> list:
        """``auto [x, y] = s;`` (copies of the fields) or ``auto& [x, y] = s;`` (the
        fields themselves)."""
        rng = self.rng
        structs = [loc for loc in self.locals() if loc.kind == "struct"
                   and not loc.type[0].startswith("Pair")]
        if not structs:
            return [self.decl(d)]
        loc = rng.choice(structs)
        names = [self.fresh("b") for _ in loc.type[1]]
        by_ref = loc.mutable and rng.random() < 0.5
        for nm, (fname, ft) in zip(names, loc.type[1]):
            self.declare(Local(nm, "ref" if by_ref else "scalar", ft, extra="binding"))
        text = f"auto{'&' if by_ref else ''} [{', '.join(names)}]"
        return [S("decl", text=text, name="", kids=[var(loc.name)])]

    def switch(self, depth, allow_return, in_loop) -> S:
        """``switch`` on a small integer (or an enumeration): cases that break and cases
        that fall through, and a default."""
        rng = self.rng
        enums = [en for en in self.enums if not en[1]]
        if enums and rng.random() < 0.4:
            name, _, under, values = rng.choice(enums)
            cond = lit(rng.choice(list(values)), cxx.promote(under or INT))
            if rng.random() < 0.7:
                cond = E("cond", cond.type, kids=[self.expr(None, 1), cond,
                                                  lit(rng.choice(list(values)), cond.type)])
            distinct = {}
            for k, v in values.items():
                distinct.setdefault(v, k)       # one enumerator per value: no duplicate case
            labels = rng.sample(list(distinct.values()),
                                k=min(len(distinct), rng.randint(1, 3)))
        else:
            c = self.expr("int", 1)
            cond = E("bin", cxx.common(c.type, INT), "&", kids=[c, lit("3", INT)])
            labels = [str(v) for v in rng.sample(range(4), k=rng.randint(1, 3))]
        cases = []
        for label in labels + (["default"] if rng.random() < 0.6 else []):
            self.frames.append([])
            body = self.block(max(depth - 1, 0), allow_return, in_loop)
            self.frames.pop()
            cases.append(S("case", text=label, body=body,
                           form=rng.choice(["break", "break", "fall"])))
        cases[-1].form = "break"
        return S("switch", kids=[cond], body=cases)

    def side_effects(self, d) -> list:
        """A variable changed inside an expression that reads it nowhere else (C++
        sequences nothing else): ``w = (x++) * e``, ``(x -= e) + f``, ``(x += e, x * 3)``."""
        rng = self.rng
        t = rng.choice([INT, UINT, CHAR, SHORT, UCHAR, LLONG, ULLONG, FLOAT, DOUBLE])
        x = self.fresh("x")
        other = self.expr(None, d)
        init = self.convert(self.expr(None, d), t)
        r = rng.random()
        if r < 0.4:
            fx = E(rng.choice(["post", "un"]), t, rng.choice(["++", "--"]), kids=[var(x, t)])
        else:
            op = rng.choice(["+=", "-=", "*="] + (["^=", "|=", "<<="] if t.integer else []))
            rhs = self.expr("int" if op in ("^=", "|=", "<<=") else None, d - 1)
            if op == "<<=":
                rhs = E("bin", cxx.common(rhs.type, INT), "&", kids=[rhs, lit("7", INT)])
            elif t.integer and rhs.type.floating:
                rhs = self.cast(cxx.promote(t), self.clamp(rhs, INT))
            fx = E("assign", t, op, kids=[var(x, t), rhs])
        if rng.random() < 0.3:
            # the comma sequences: x may be read after it
            value = E("comma", t, kids=[fx, E("bin", cxx.common(t, INT), "*",
                                              kids=[var(x, t), lit("3", INT)])])
        else:
            a, b = (fx, other) if rng.random() < 0.5 else (other, fx)
            value = E("bin", cxx.common(fx.type, other.type), rng.choice("+-*"), kids=[a, b])
        wt = self.scalar_type()
        w = self.fresh("w")
        out = [S("decl", text=self.spelling(t), name=x, kids=[init]),
               S("decl", text=self.spelling(wt), name=w, kids=[self.convert(value, wt)])]
        self.declare(Local(x, "scalar", t))
        self.declare(Local(w, "scalar", wt))
        return out

    def lambda_decl(self, d) -> list:
        """``auto f = [&](T x) { return e; };`` (or capturing by copy: what it reads is
        copied where it is made), called by name later."""
        rng = self.rng
        pt = self.scalar_type()
        x = self.fresh("x")
        # what the body may name: no structured binding (C++17, nvcc's default, cannot
        # capture one), no other lambda (a lambda calling a lambda: refused, a gap)
        saved = self.frames
        self.frames = [[loc for loc in f if loc.extra != "binding"] for f in saved]
        self.frames.append([Local(x, "scalar", pt, mutable=False)])
        outer, self.lambdas = self.lambdas, []
        e = self.expr(None, 2)
        self.lambdas = outer
        self.frames = saved
        ret = e.type
        name = self.fresh("lam")
        cap = rng.choice(["&", "=", "&", "="])
        text = e.render()
        if any(loc.kind in ("array", "array2", "varray") and loc.name in text
               for loc in self.locals()):
            cap = "&"       # an array captured by copy: refused by the emulator (a gap)
        if any(loc.kind == "array2" and loc.name in text for loc in self.locals()):
            return self.array_decl(d)   # a 2-D array captured: a reference to an array
            #                             (issue 24 item 4, not here yet)
        self.lambdas.append((name, pt, ret))
        self.declare(Local(name, "lambda", ret, mutable=False))
        text = f"[{cap}]({self.spelling(pt)} {x}) {{ return {e.render()}; }}"
        return [S("decl", text="auto", name=name, kids=[lit(text, None)])]

    def constexpr_decl(self) -> list:
        """``constexpr T c = <constant expression of unsigned literals>;`` (no overflow
        can make it other than constant)."""
        self.const_only = True
        try:
            e = self.expr("int", 2)
        finally:
            self.const_only = False
        name = self.fresh("c")
        self.declare(Local(name, "scalar", e.type, mutable=False))
        return [S("decl", text=f"constexpr {e.type.name}", name=name, kids=[e])]

    def method_call(self, d) -> list:
        rng = self.rng
        cands = [(loc, m, at) for loc in self.locals() if loc.kind == "struct" and loc.mutable
                 for m, at in self.methods.get(loc.type[0], []) if m == "bump"]
        if not cands:
            return [self.decl(d)]
        loc, m, at = rng.choice(cands)
        return [S("expr", kids=[E("call", None, f"{loc.name}.bump",
                                  kids=[self.convert(self.expr(None, d), at)])])]

    def pointer_into_array(self, d) -> list:
        """``T* p = r + (e & 3);`` into a local array: then ``*p`` read and written, and
        ``p - r`` (a ptrdiff_t) read."""
        rng = self.rng
        arrays = [loc for loc in self.locals() if loc.kind == "array" and loc.mutable]
        if not arrays:
            return self.array_decl(d)
        loc = rng.choice(arrays)
        et, n = loc.type
        name = self.fresh("p")
        index = self.masked_index(n, d)
        self.declare(Local(name, "ptr", et, extra=("into", loc.name)))
        return [S("decl", text=f"{et.name}*", name=name,
                  kids=[E("bin", None, "+", kids=[var(loc.name), index])])]

    def make_enum(self):
        rng = self.rng
        name = f"E{self.t.index}_{len(self.enums)}"
        scoped = rng.random() < 0.5
        under = rng.choice([None, None, UCHAR, SHORT, UINT, LLONG, INT])
        lo, hi = (0, 200) if under in (UCHAR, UINT) else (-100, 200)
        values, items, v = {}, [], rng.randint(lo, hi - 10)
        for i in range(rng.randint(2, 4)):
            e = f"K{self.t.index}_{len(self.enums)}_{i}"
            if rng.random() < 0.5:
                v = rng.randint(lo, hi - 10)
                items.append(f"{e} = {v}")
            else:
                items.append(e)
            values[e] = v
            v += 1
        head = f"enum {'class ' if scoped else ''}{name}" + (f" : {under.name}" if under else "")
        self.t.decls.append(f"{head} {{ {', '.join(items)} }};")
        self.enums.append((name, scoped, under, values))

    def block(self, depth, allow_return, in_loop) -> list:
        out = []
        for _ in range(self.rng.randint(1, 3)):
            out.extend(self.statement(depth, allow_return, in_loop))
        return out

    @staticmethod
    def is_counter(loc) -> bool:
        return loc.extra == "counter"

    def decl(self, d) -> S:
        rng = self.rng
        t = self.scalar_type()
        e = self.expr(None, d)
        name = self.fresh("v")
        if rng.random() < 0.08 and self.allow_auto:
            self.declare(Local(name, "scalar", e.type))
            return S("decl", text="auto", name=name, kids=[e])
        spelling = self.spelling(t)
        forms = ["=", "=", "=", "()"]
        if not cxx.narrowing(e.type, t):
            forms += ["{}", "={}"]
        form = rng.choice(forms)
        if form in ("=", "()"):
            e = self.convert(e, t)
        if rng.random() < 0.1:
            spelling = "const " + spelling
            self.declare(Local(name, "scalar", t, mutable=False))
        else:
            self.declare(Local(name, "scalar", t))
        return S("decl", text=spelling, name=name, kids=[e], form=form)

    def assign(self, d) -> list:
        rng = self.rng
        targets = [(e, loc) for e, loc in self.accessors(lvalue=True)
                   if not self.is_counter(loc)]
        if not targets:
            return [self.decl(d)]
        e, loc = rng.choice(targets)
        if e is None:
            e = self.element(loc, 1)
        t = e.type
        ops = ["=", "=", "+=", "-=", "*=", "/="]
        if t.integer:
            ops += ["%=", "<<=", ">>=", "&=", "|=", "^="]
        op = rng.choice(ops)
        if op in ("%=", "<<=", ">>=", "&=", "|=", "^="):
            rhs = self.expr("int", d)
        else:
            rhs = self.expr(None, d)
        if op in ("<<=", ">>="):
            bits = cxx.promote(t).bits
            rhs = E("bin", cxx.common(rhs.type, INT), "&", kids=[rhs, lit(str(bits - 1), INT)])
        elif op in ("/=", "%=") and cxx.common(t, rhs.type).integer:
            rhs = self.guard_divisor(rhs)
        elif op == "=":
            rhs = self.convert(rhs, t)
        elif t.integer and rhs.type.floating:
            rhs = self.clamp(rhs, INT if t.size < 8 else t)
            if self.strict:
                # `c += f` converts c + f back to c's type: keep it integer
                rhs = self.cast(cxx.promote(t), rhs)
        if rng.random() < 0.1 and op != "=":
            # the value of an assignment, used (the target read nowhere else)
            other = self.fresh("w")
            self.declare(Local(other, "scalar", LLONG))
            return [S("decl", text="long long", name=other,
                      kids=[E("assign", t, op, kids=[e, rhs])])]
        return [S("expr", kids=[E("assign", t, op, kids=[e, rhs])])]

    def loop(self, depth, allow_return) -> S:
        rng = self.rng
        counter = self.fresh("it")
        if rng.random() < 0.5:
            bound = lit(str(rng.randint(0, 4)), INT)
        else:
            b = self.expr("int", 1)
            bound = E("bin", cxx.common(b.type, INT), "&", kids=[b, lit("7", INT)])
        self.frames.append([Local(counter, "scalar", INT, mutable=False, extra="counter")])
        body = self.block(depth - 1, allow_return, in_loop=True)
        self.frames.pop()
        kind = rng.choice(["for", "for", "while", "do"])
        if kind == "do" and bound.kind == "lit" and bound.text == "0":
            bound = lit("1", INT)
        return S(kind, name=counter, kids=[bound], body=body)

    def vector_decl(self, d) -> S:
        rng = self.rng
        vname = rng.choice(list(VECTORS))
        comp, n = VECTORS[vname], int(vname[-1])
        name = self.fresh("q")
        args = [self.convert(self.expr(None, d - 1), comp) for _ in range(n)]
        self.declare(Local(name, "vector", vname))
        if rng.random() < 0.7:
            return S("decl", text=vname, name=name,
                     kids=[E("call", None, f"make_{vname}", kids=args)])
        return S("decl", text=vname, name=name, form=rng.choice(["={}", "{}"]),
                 kids=[self.no_narrowing(a, comp) for a in args])

    def array_decl(self, d) -> list:
        rng = self.rng
        r = rng.random()
        if r < 0.2:
            t = self.scalar_type()
            n, m = rng.choice([2, 4]), rng.choice([2, 4])
            name = self.fresh("m")
            rows = [E("braces", None, kids=[self.no_narrowing(self.expr(None, d - 1), t)
                                            for _ in range(rng.randint(0, m))])
                    for _ in range(rng.randint(0, n))]
            self.declare(Local(name, "array2", (t, n, m)))
            return [S("decl", text=self.spelling(t), name=f"{name}[{n}][{m}]", form="={}",
                      kids=rows)]
        if r < 0.35:
            vname = rng.choice(["float2", "int2", "float4", "uint4", "double2", "short2"])
            comp, k = VECTORS[vname], int(vname[-1])
            n = rng.choice([2, 4])
            name = self.fresh("rv")
            items = [E("call", None, f"make_{vname}", kids=[
                self.convert(self.expr(None, d - 1), comp) for _ in range(k)])
                for _ in range(rng.randint(0, n))]
            self.declare(Local(name, "varray", (vname, n)))
            return [S("decl", text=vname, name=f"{name}[{n}]", form="={}", kids=items)]
        t = self.scalar_type()
        n = rng.choice([2, 4, 8])
        name = self.fresh("r")
        k = rng.randint(0, n)
        items = [self.no_narrowing(self.expr(None, d - 1), t) for _ in range(k)]
        self.declare(Local(name, "array", (t, n)))
        return [S("decl", text=self.spelling(t), name=f"{name}[{n}]", form="={}", kids=items)]

    def struct_decl(self, d) -> list:
        rng = self.rng
        if not self.structs:
            return [self.decl(d)]
        sname, fields = rng.choice(self.structs)
        name = self.fresh("s")
        k = rng.randint(0, len(fields))
        items = [self.no_narrowing(self.expr(None, d - 1), ft) for _, ft in fields[:k]]
        out = [S("decl", text=sname, name=name, form=rng.choice(["={}", "{}"]), kids=items)]
        copies = [loc for loc in self.locals() if loc.kind == "struct" and loc.type[0] == sname]
        extra = self.methods.get(sname, [])
        r = rng.random()
        if copies and r < 0.3:
            out = [S("decl", text=sname, name=name, kids=[var(rng.choice(copies).name)])]
        elif copies and r < 0.5 and any(m == "+" for m, _ in extra):
            a, b = rng.choice(copies), rng.choice(copies)
            out = [S("decl", text=sname, name=name,
                     kids=[E("bin", None, "+", kids=[var(a.name), var(b.name)])])]
        elif copies and r < 0.6:
            a, b = rng.choice(copies), rng.choice(copies)
            out = [S("decl", text=sname, name=name, kids=[E("cond", None, kids=[
                self.expr(None, 1), var(a.name), var(b.name)])])]
        elif copies and r < 0.75 and any(k == "mix" for _, k in extra):
            h = next(m for m, k in extra if k == "mix")
            a, b = rng.choice(copies), rng.choice(copies)
            c = rng.choice([loc for loc in copies if loc.mutable] or [None])
            if c is not None:
                out = [S("decl", text=sname, name=name, kids=[E("call", None, h, kids=[
                    var(a.name), var(b.name), E("addr", None, kids=[var(c.name)])])])]
        self.declare(Local(name, "struct", (sname, fields)))
        return out

    def ref_decl(self, d) -> list:
        rng = self.rng
        targets = [(e, loc) for e, loc in self.accessors(lvalue=True)
                   if e is not None and loc.kind in ("scalar", "struct", "vector", "ref")
                   and not self.is_counter(loc)]
        name = self.fresh("ref")
        arrays = [loc for loc in self.locals() if loc.kind == "array" and loc.mutable]
        if arrays and rng.random() < 0.25:
            loc = rng.choice(arrays)
            et, n = loc.type
            self.declare(Local(name, "ref", et))
            return [S("decl", text=f"{et.name}&", name=name,
                      kids=[E("index", et, kids=[var(loc.name), lit(str(rng.randrange(n)),
                                                                    INT)])])]
        if targets and rng.random() < 0.7:
            e, loc = rng.choice(targets)
            if loc.kind == "scalar":
                loc.extra = loc.extra or "addressed"
            self.declare(Local(name, "ref", e.type))
            return [S("decl", text=f"{e.type.name}&", name=name, kids=[e])]
        # a const reference bound to a converted temporary
        t = self.scalar_type()
        e = self.convert(self.expr(None, d), t)
        self.declare(Local(name, "cref", t, mutable=False))
        return [S("decl", text=f"const {self.spelling(t)}&", name=name, kids=[e])]

    def ptr_decl(self, d) -> list:
        rng = self.rng
        targets = [(e, loc) for e, loc in self.accessors(lvalue=True)
                   if e is not None and loc.kind in ("scalar", "struct", "vector")
                   and not self.is_counter(loc)]
        if not targets:
            return [self.decl(d)]
        e, loc = rng.choice(targets)
        name = self.fresh("p")
        self.declare(Local(name, "ptr", e.type))
        if rng.random() < 0.3:
            # through const and back: const_cast<T*>(const T*)
            return [S("decl", text=f"{e.type.name}*", name=name,
                      kids=[E("cast", None, f"{e.type.name}*", form="const",
                              kids=[E("cast", None, f"const {e.type.name}*", form="static",
                                      kids=[E("addr", None, kids=[e])])])])]
        return [S("decl", text=f"{e.type.name}*", name=name, kids=[E("addr", None, kids=[e])])]

    def ref_call(self, d) -> list:
        rng = self.rng
        kind, name, (tt, pt) = rng.choice([h for h in self.helpers if h[0] == "ref"])
        targets = [e for e, loc in self.accessors(lvalue=True)
                   if e is not None and e.type == tt and not self.is_counter(loc)
                   and e.kind != "index"]
        if not targets:
            return [self.decl(d)]
        target = rng.choice(targets)
        if target.kind == "var" and rng.random() < 0.2:
            # through const_cast of a const reference to it
            target = E("cast", tt, f"{tt.name}&", form="const",
                       kids=[E("cast", tt, f"const {tt.name}&", form="static", kids=[target])])
        return [S("expr", kids=[E("call", None, name,
                                  kids=[target, self.convert(self.expr(None, d), pt)])])]

    # ------------------------------------------------------------------ outputs
    def outputs(self):
        """Every value in the test's outermost scope, written to `out` (the kind of each
        word in `Test.outs`)."""
        for loc in self.frames[0]:
            if loc.kind in ("scalar", "cref"):
                self.out(var(loc.name, loc.type))
            elif loc.kind == "struct":
                for fname, ft in loc.type[1]:
                    self.out(E("member", ft, fname, kids=[var(loc.name)]))
            elif loc.kind == "vector":
                comp, n = VECTORS[loc.type], int(loc.type[-1])
                for c in "xyzw"[:n]:
                    self.out(E("member", comp, c, kids=[var(loc.name)]))
            elif loc.kind == "array":
                et, n = loc.type
                for i in range(n):
                    self.out(E("index", et, kids=[var(loc.name), lit(str(i), INT)]))
            elif loc.kind == "array2":
                et, n, m = loc.type
                for i in range(n):
                    for j in range(m):
                        self.out(E("index", et, kids=[E("index", None, kids=[
                            var(loc.name), lit(str(i), INT)]), lit(str(j), INT)]))
            elif loc.kind == "varray":
                vname, n = loc.type
                for i in range(n):
                    for c in "xyzw"[:int(vname[-1])]:
                        self.out(E("member", VECTORS[vname], c, kids=[
                            E("index", None, kids=[var(loc.name), lit(str(i), INT)])]))

    def out(self, e: E):
        form = "float" if e.type == FLOAT else "double" if e.type == DOUBLE else "int"
        self.t.body.append(S("out", name=str(len(self.t.outs)), kids=[e], form=form))
        self.t.outs.append(form)


def inputs(seed: int, threads: int) -> dict:
    """The input arrays of a batch ({code: array of threads * NIN}): edge values of each
    type (0, +-1, the extremes, powers of two and their neighbours; for floats also -0,
    denormals, infinities, NaN) among moderate and uniformly random ones."""
    rng = np.random.default_rng(seed)
    out = {}
    n = threads * NIN
    for code, t in INPUTS.items():
        if t.floating:
            ft = np.float32 if t == FLOAT else np.float64
            specials = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 0.1, 1e-3, 1e3, 255.0,
                                 2.0 ** 24 + 2, 2.0 ** 31, -2.0 ** 31, 2.0 ** 32, 1e10,
                                 np.inf, -np.inf, np.nan, 1e-40 if ft is np.float32 else 1e-310,
                                 np.finfo(ft).max, np.finfo(ft).tiny], dtype=ft)
            moderate = (rng.standard_normal(n) * 100).astype(ft)
            small = rng.integers(-20, 20, n).astype(ft) * ft(0.25)
            bits = rng.integers(0, 1 << (8 * t.size), n, dtype=np.uint64, endpoint=False)
            raw = bits.astype(np.uint32 if ft is np.float32 else np.uint64).view(ft)
            pick = rng.random(n)
            vals = np.where(pick < 0.45, moderate, np.where(pick < 0.75, small, raw))
            sp = rng.random(n) < 0.2
            vals = np.where(sp, specials[rng.integers(0, len(specials), n)], vals).astype(ft)
        else:
            dt = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[t.size]
            if not t.signed:
                dt = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[t.size]
            info = np.iinfo(dt)
            specials = [0, 1, 2, 3, 7, 8, 16, 31, 32, 100, 127, 128, 255, 256, 1000, 65535,
                        info.max, info.max - 1, info.min, info.min + 1]
            if t.signed:
                specials += [-1, -2, -8, -100, -128, -129]
            specials = np.array([s for s in specials if info.min <= s <= info.max],
                                dtype=object)
            width = 8 * t.size
            randbits = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + \
                rng.integers(0, 2, n, dtype=np.uint64)
            full = (randbits >> np.uint64(64 - width)).astype(np.uint64)
            full = full.astype({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[t.size]
                               ).view(dt)
            small = rng.integers(-50 if t.signed else 0, 50, n).astype(dt)
            pick = rng.random(n)
            vals = np.where(pick < 0.4, small, full).astype(dt)
            sp = rng.random(n) < 0.3
            chosen = np.array([int(specials[i]) for i in rng.integers(0, len(specials), n)],
                              dtype=object)
            vals = np.where(sp, chosen.astype(dt), vals).astype(dt)
        out[code] = vals
    return out


# the NumPy dtype of each input array
_DTYPE_OF = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
             "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
             "f32": np.float32, "f64": np.float64}
