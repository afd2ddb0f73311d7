"""Generated programs: expression and statement trees that render to CUDA C++, and the
batch of tests that one host compile and one emulator module run.

A `Test` is what the generator makes and the shrinker reduces: helper `__device__`
functions (and templates, structs), then the body of ``__device__ void t<k>(tid, inputs...,
out)``, whose last statements write every value it computed to ``out`` as 64-bit words
(`Out` statements: integers converted to ``unsigned long long``, floats and doubles as
their bits). The same text compiles as CUDA for the emulator (and nvcc) and as C++ for the
host (`host.py` defines the CUDA words away), so what is compared is one program.

Every subexpression is written in parentheses, so rendering never depends on precedence.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from . import cxx

# The input arrays every test reads (one pointer parameter each): code -> element type.
INPUTS = {
    "i8": cxx.SCHAR, "u8": cxx.UCHAR, "i16": cxx.SHORT, "u16": cxx.USHORT,
    "i32": cxx.INT, "u32": cxx.UINT, "i64": cxx.LLONG, "u64": cxx.ULLONG,
    "f32": cxx.FLOAT, "f64": cxx.DOUBLE,
}
NIN = 6             # inputs of each type per thread
# the parameters of every test function t<k>: the thread's index, the inputs, its words
PARAMS = ("const int tid, " + ", ".join(f"const {t.name}* __restrict__ in_{code}"
                                         for code, t in INPUTS.items())
          + ", unsigned long long* __restrict__ out")


@dataclass
class E:
    """An expression. `kind` says how it renders (see `render`); `type` is the generator's
    belief about its C++ type (a `cxx.Type`, or None for a non-arithmetic value)."""

    kind: str
    type: object = None
    text: str = ""
    kids: list = field(default_factory=list)
    form: str = ""

    def render(self) -> str:
        k, r = self.kind, [c.render() for c in self.kids]
        if k in ("var", "lit"):
            return self.text
        if k == "un":
            return f"({self.text}{r[0]})"
        if k == "post":
            return f"({r[0]}{self.text})"
        if k == "bin":
            return f"({r[0]} {self.text} {r[1]})"
        if k == "assign":
            return f"({r[0]} {self.text} {r[1]})"
        if k == "cond":
            return f"({r[0]} ? {r[1]} : {r[2]})"
        if k == "cast":
            if self.form == "c":
                return f"(({self.text}){r[0]})"
            if self.form == "func":
                return f"{self.text}({r[0]})"
            if self.form == "brace":
                return f"{self.text}{{{r[0]}}}"
            return f"{self.form}_cast<{self.text}>({r[0]})"
        if k == "call":
            return f"{self.text}({', '.join(r)})"
        if k == "member":
            return f"{r[0]}.{self.text}"
        if k == "arrow":
            return f"{r[0]}->{self.text}"
        if k == "index":
            return f"{r[0]}[{r[1]}]"
        if k == "sizeof":
            return f"sizeof({r[0]})"
        if k == "comma":
            return f"({r[0]}, {r[1]})"
        if k == "braces":
            return "{" + ", ".join(r) + "}"
        if k == "deref":
            return f"(*{r[0]})"
        if k == "addr":
            return f"(&{r[0]})"
        raise ValueError(k)


def var(name, t=None) -> E:
    return E("var", t, name)


def lit(text, t) -> E:
    return E("lit", t, text)


@dataclass
class S:
    """A statement. Kinds: ``decl`` (`text` the type as written, `name`, `kids[0]` the
    initialiser or none, `form` one of ``=``, ``{}``, ``={}``, ``()``, ``none``), ``expr``
    (`kids[0]`), ``if`` (`kids[0]` the condition, `body`, `orelse`), ``for`` (`name` the
    counter, `kids[0]` the bound, `body`), ``while`` (the same, counting down),
    ``return`` (`kids[0]` or none), ``out`` (`kids[0]` written to ``out[name]`` as
    `form`: ``int``, ``float``, ``double``), ``raw`` (`text`), ``block`` (`body`)."""

    kind: str
    text: str = ""
    name: str = ""
    kids: list = field(default_factory=list)
    form: str = ""
    body: list = field(default_factory=list)
    orelse: list = field(default_factory=list)

    def render(self, indent: int = 1) -> list[str]:
        pad = "  " * indent
        k = self.kind
        r = [c.render() for c in self.kids]
        if k == "decl":
            if self.form == "none" or not r and self.form in ("=", "()"):
                return [f"{pad}{self.text} {self.name};"]
            if self.form == "{}":
                return [f"{pad}{self.text} {self.name}{{{', '.join(r)}}};"]
            if self.form == "={}":
                return [f"{pad}{self.text} {self.name} = {{{', '.join(r)}}};"]
            if self.form == "()":
                # doubled parentheses: `float v(int(a));` would declare a function
                return [f"{pad}{self.text} {self.name}(({', '.join(r)}));"]
            return [f"{pad}{self.text} {self.name} = {r[0]};"]
        if k == "expr":
            return [f"{pad}{r[0]};"]
        if k == "return":
            return [f"{pad}return {r[0]};" if r else f"{pad}return;"]
        if k == "out":
            if self.form == "float":
                value = f"__float_as_uint({r[0]})"
            elif self.form == "double":
                value = f"__double_as_longlong({r[0]})"
            else:
                value = r[0]
            return [f"{pad}out[{self.name}] = (unsigned long long)({value});"]
        if k == "raw":
            return [pad + line for line in self.text.split("\n")]
        if k == "block":
            return [f"{pad}{{"] + render_body(self.body, indent + 1) + [f"{pad}}}"]
        if k == "if":
            lines = [f"{pad}if ({r[0]}) {{"] + render_body(self.body, indent + 1)
            if self.orelse:
                lines += [f"{pad}}} else {{"] + render_body(self.orelse, indent + 1)
            return lines + [f"{pad}}}"]
        if k == "for":
            return ([f"{pad}for (int {self.name} = 0; {self.name} < {r[0]}; ++{self.name}) {{"]
                    + render_body(self.body, indent + 1) + [f"{pad}}}"])
        if k == "while":
            # a count-down loop: the counter is the bound's value, decremented first
            return ([f"{pad}{{", f"{pad}  int {self.name} = {r[0]};",
                     f"{pad}  while ({self.name}-- > 0) {{"]
                    + render_body(self.body, indent + 2) + [f"{pad}  }}", f"{pad}}}"])
        if k == "rangefor":
            return ([f"{pad}for ({self.text} : {self.name}) {{"]
                    + render_body(self.body, indent + 1) + [f"{pad}}}"])
        if k == "switch":
            lines = [f"{pad}switch ({r[0]}) {{"]
            for case in self.body:
                label = "default:" if case.text == "default" else f"case {case.text}:"
                lines.append(f"{pad}{label} {{")
                lines += render_body(case.body, indent + 1)
                lines.append(f"{pad}}}" + (" break;" if case.form == "break" else
                                           " // falls through"))
            return lines + [f"{pad}}}"]
        if k == "do":
            return ([f"{pad}{{", f"{pad}  int {self.name} = {r[0]};", f"{pad}  do {{"]
                    + render_body(self.body, indent + 2)
                    + [f"{pad}  }} while (--{self.name} > 0);", f"{pad}}}"])
        raise ValueError(k)


def render_body(stmts, indent) -> list[str]:
    out = []
    for s in stmts:
        out.extend(s.render(indent))
    return out


@dataclass
class Function:
    """A helper ``__device__`` function (or template): `head` is everything before the
    body (``template <typename T> __device__ T f3_1(T a, T b)``), `body` its statements."""

    name: str
    head: str
    body: list = field(default_factory=list)

    def render(self) -> list[str]:
        return [self.head + " {"] + render_body(self.body, 1) + ["}"]


@dataclass
class Test:
    """One generated test: `decls` (struct definitions and other text before the helpers),
    `functions`, the body of ``t<index>``, and `outs`, the kind of each output word
    (``int``, ``float``, ``double``), in order."""

    index: int
    decls: list = field(default_factory=list)
    functions: list = field(default_factory=list)
    body: list = field(default_factory=list)
    outs: list = field(default_factory=list)
    seed: int = 0
    source: str = ""        # a test written by hand (a regression test): its whole text

    @classmethod
    def from_source(cls, index: int, source: str, outs) -> "Test":
        """A test given as CUDA text that defines ``t<index>`` with the parameters of
        `Test.render` and writes ``out[0..len(outs)-1]``; `outs` is the kind of each word
        (``int``, ``float``, ``double``)."""
        return cls(index, outs=list(outs), source=source)

    @property
    def name(self) -> str:
        return f"t{self.index}"

    def clone(self) -> "Test":
        return copy.deepcopy(self)

    def render(self) -> str:
        """The test's CUDA C++ text: its declarations, helpers, and ``t<index>``."""
        if self.source:
            return self.source
        lines = [f"// test {self.index} (seed {self.seed})"] + list(self.decls)
        for f in self.functions:
            lines += f.render()
        lines.append(f"__device__ void {self.name}({PARAMS}) {{")
        lines += render_body(self.body, 1)
        lines.append("}")
        return "\n".join(lines) + "\n"

    # -- for the shrinker
    def statement_lists(self):
        """Every statement list of the test (the body, each helper's, nested ones), as the
        list objects themselves (the shrinker edits them in place on a clone)."""
        lists = [self.body] + [f.body for f in self.functions]
        out = []
        while lists:
            lst = lists.pop()
            out.append(lst)
            for s in lst:
                if s.body:
                    lists.append(s.body)
                if s.orelse:
                    lists.append(s.orelse)
        return out


def expression_slots(test: Test):
    """(holder, index) of every expression in `test`: ``holder.kids[index]`` is one, where
    holder is a statement or an expression; parents come before their children."""
    out = []
    todo = []
    for lst in test.statement_lists():
        for s in lst:
            for i in range(len(s.kids)):
                todo.append((s, i))
    while todo:
        holder, i = todo.pop(0)
        out.append((holder, i))
        e = holder.kids[i]
        for j in range(len(e.kids)):
            todo.append((e, j))
    return out


KERNEL_PARAMS = ", ".join(f"const {t.name}* __restrict__ in_{code}" for code, t in INPUTS.items())
ARGS = ", ".join(f"in_{code}" for code in INPUTS)


def device_source(tests, threads: int) -> str:
    """The CUDA source of a batch: the preamble, every test, a kernel ``k<index>`` per test
    and ``all_tests`` running them all; thread `tid` writes its words of test k at
    ``out + offset_k + tid * words_k``."""
    parts = [cxx.PREAMBLE]
    calls = []
    offset = 0
    for t in tests:
        parts.append(t.render())
        n = max(len(t.outs), 1)
        if getattr(t, "kind", "") == "kernel":        # a kernel test is k<index> itself
            offset += n * threads
            continue
        parts.append(f"extern \"C\" __global__ void k{t.index}({KERNEL_PARAMS}, "
                     f"unsigned long long* out) "
                     f"{{\n  const int tid = threadIdx.x;\n  {t.name}(tid, {ARGS}, out + "
                     f"(size_t)tid * {n});\n}}\n")
        calls.append(f"  {t.name}(tid, {ARGS}, out + {offset}ull + (size_t)tid * {n});")
        offset += n * threads
    parts.append(f"extern \"C\" __global__ void all_tests({KERNEL_PARAMS}, "
                 f"unsigned long long* out) {{\n"
                 f"  const int tid = threadIdx.x;\n" + "\n".join(calls) + "\n}\n")
    return "\n".join(parts)


def layout(tests, threads: int) -> list[tuple[int, int]]:
    """(offset, words per thread) of each test's outputs in the batch's output array."""
    out, offset = [], 0
    for t in tests:
        n = max(len(t.outs), 1)
        out.append((offset, n))
        offset += n * threads
    return out
