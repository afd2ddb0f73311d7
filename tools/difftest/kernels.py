"""Generated kernels: shared memory, barriers, loops and warp shuffles, race-free by
construction, and the host's rendering of them as loops over the threads.

A `KernelTest` is ``__global__ void k<index>(inputs..., out)`` launched on `grid` blocks
of `block` threads (64 in all, so its words sit where a function test's do). Its body is
a list of segments, S nodes of these kinds:

- ``phase``: statements every thread runs (any control flow, divergent or not, but no
  barrier); in a phase the threads read and write only their own elements of the
  ``__shared__`` arrays (``s[tid]``, ``s[tid + 64]``), or only read any element
  (``s[(e) & 127]``), or only update elements atomically;
- ``barrier``: ``__syncthreads()``;
- ``loop``: ``for (int it = 0; it < N; ++it) { segments }``, N a constant (uniform);
- ``reduce``: ``for (int s = N / 2; s > 0; s >>= 1) { if (tid < s) a[tid] = a[tid] op
  a[tid + s]; __syncthreads(); }``, the tree reduction;
- ``shuffle``: ``x = __shfl_xor_sync(0xffffffff, e, m, w)`` (and up, down, idx), every
  thread of the block together.

Before the segments, each thread's variables are declared (`locals`: the inputs read at
``gid``, values, vectors, structs). The device text is the segments in order; the host's
(`host_function`) runs each phase as a loop over the block's threads, each thread's
variables in an array of structs (``#define v3 (__th[__t].v3)``), so one thread's phase
runs to its end before the next thread's starts, which a race-free phase cannot tell from
the GPU's interleaving; a barrier is the end of a loop; a shuffle reads every thread's
value first.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from . import cxx
from .cxx import DOUBLE, FLOAT, INT, LLONG, UINT, ULLONG
from .generate import Generator, Local
from .program import INPUTS, KERNEL_PARAMS, NIN, E, S, Test, lit, render_body, var

BLOCKS = [((64, 1), 1), ((32, 1), 2), ((8, 8), 1), ((16, 2), 2), ((64, 1), 1), ((32, 2), 1)]
SHARED_TYPES = [INT, UINT, FLOAT, DOUBLE, LLONG, ULLONG, cxx.SHORT, cxx.UCHAR]
# The atomic updates a phase may make, in groups that commute (the final value does not
# depend on the threads' order): one group per array and phase. atomicInc/Dec with one
# limit for all threads commute with themselves.
ATOMIC_OPS = {INT: [["atomicAdd", "atomicSub"], ["atomicMax"], ["atomicMin"], ["atomicOr"],
                    ["atomicAnd"], ["atomicXor"]],
              UINT: [["atomicAdd", "atomicSub"], ["atomicMax"], ["atomicMin"], ["atomicOr"],
                     ["atomicAnd"], ["atomicXor"], ["atomicInc"], ["atomicDec"]],
              ULLONG: [["atomicAdd"], ["atomicMax"], ["atomicMin"], ["atomicOr"],
                       ["atomicAnd"], ["atomicXor"]],
              LLONG: [["atomicMax"], ["atomicMin"]]}
SHUFFLE_TYPES = [INT, UINT, FLOAT, DOUBLE, LLONG, ULLONG]


@dataclass
class KernelTest(Test):
    """A kernel test (module docstring): `block` (x, y), `grid` blocks along x, `shared`
    [(name, element type, length)], `locals` the per-thread declarations, `body` the
    segments."""

    block: tuple = (64, 1)
    grid: int = 1
    shared: list = field(default_factory=list)
    locals: list = field(default_factory=list)
    host_text: str = ""     # a kernel read from a case file: its host version as written

    kind = "kernel"

    @property
    def block_threads(self) -> int:
        return self.block[0] * self.block[1]

    def render(self) -> str:
        if self.source:
            return self.source
        lines = [f"// test {self.index} (seed {self.seed}): a kernel, block {self.block}, "
                 f"grid {self.grid}"] + list(self.decls)
        for f in self.functions:
            lines += f.render()
        n = max(len(self.outs), 1)
        lines.append(f"extern \"C\" __global__ void k{self.index}({KERNEL_PARAMS}, "
                     f"unsigned long long* __restrict__ out_all) {{")
        for name, t, length in self.shared:
            lines.append(f"  __shared__ {t.name} {name}[{length}];")
        lines.append("  const int tid = threadIdx.y * blockDim.x + threadIdx.x;")
        lines.append(f"  const int gid = blockIdx.x * {self.block_threads} + tid;")
        lines.append(f"  unsigned long long* const out = out_all + (size_t)gid * {n};")
        lines += render_body(self.locals, 1)
        lines += render_segments(self.body, 1)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def statement_lists(self):
        out = [self.locals] + [f.body for f in self.functions]
        todo = [self.body]
        while todo:
            lst = todo.pop()
            out.append(lst)
            for s in lst:
                if s.body:
                    todo.append(s.body)
                if s.orelse:
                    todo.append(s.orelse)
        return out

    # -- the host's version
    def host_function(self) -> str:
        """``kernel_host_<index>(inputs..., out_all)``: this kernel run on the host, block by
        block, each phase a loop over the block's threads (module docstring)."""
        if self.host_text:
            return self.host_text
        bt, (bx, by) = self.block_threads, self.block
        n = max(len(self.outs), 1)
        names = ["tid", "gid", "out"] + [s.name for s in self.locals if s.kind == "decl"]
        lines = [f"static void kernel_host_{self.index}({KERNEL_PARAMS}, "
                 f"unsigned long long* __restrict__ out_all) {{"]
        for name, t, length in self.shared:
            lines.append(f"  static {t.name} {name}[{length}];")
        fields = ["int tid;", "int gid;", "unsigned long long* out;"]
        for s in self.locals:
            if s.kind == "decl":
                spelled = s.text[6:] if s.text.startswith("const ") else s.text
                lines.append(f"  typedef {spelled} __T_{s.name};")
                fields.append(f"__T_{s.name} {s.name};")
        lines.append(f"  static struct {{ {' '.join(fields)} }} __th[{bt}];")
        for name in names:
            lines.append(f"#define {name} (__th[__t].{name})")
        lines.append(f"  blockDim.x = {bx}; blockDim.y = {by}; blockDim.z = 1;")
        lines.append(f"  gridDim.x = {self.grid}; gridDim.y = 1; gridDim.z = 1;")
        lines.append(f"  for (int __b = 0; __b < {self.grid}; ++__b) {{")
        lines.append("    blockIdx.x = __b; blockIdx.y = 0; blockIdx.z = 0;")
        init = [f"tid = {_thread_of('__t', bx)};", f"gid = __b * {bt} + tid;",
                f"out = out_all + (size_t)gid * {n};"]
        for s in self.locals:
            init += _host_init(s)
        lines += _thread_loop(init, 2, bx, bt)
        lines += _host_segments(self.body, 2, bx, bt)
        lines.append("  }")
        for name in names:
            lines.append(f"#undef {name}")
        lines.append("}")
        return "\n".join(lines) + "\n"


def _thread_of(t, bx) -> str:
    return f"(int)(threadIdx.y * {bx} + threadIdx.x)"


def _thread_loop(body_lines, indent, bx, bt) -> list:
    pad = "  " * indent
    out = [f"{pad}for (int __t = 0; __t < {bt}; ++__t) {{",
           f"{pad}  threadIdx.x = __t % {bx}; threadIdx.y = __t / {bx}; threadIdx.z = 0;"]
    out += [f"{pad}  {line}" for line in body_lines]
    return out + [f"{pad}}}"]


def _host_init(s: S) -> list:
    """A per-thread declaration as the assignment of its initial value (the same
    conversions: copy-initialisation and assignment convert alike)."""
    if s.kind != "decl":
        return [line.strip() for line in s.render(0)]
    r = [c.render() for c in s.kids]
    t = f"__T_{s.name}"
    if s.form == "none" or (not r and s.form in ("=", "()")):
        return [f"{s.name} = {t}{{}};"]
    if s.form in ("{}", "={}"):
        return [f"{s.name} = {t}{{{', '.join(r)}}};"]
    if s.form == "()":
        return [f"{s.name} = {t}(({', '.join(r)}));"]
    return [f"{s.name} = {r[0]};"]


def render_segments(segments, indent) -> list:
    pad = "  " * indent
    out = []
    for s in segments:
        k = s.kind
        if k == "phase":
            out += render_body(s.body, indent)
        elif k == "barrier":
            out.append(f"{pad}__syncthreads();")
        elif k == "loop":
            out.append(f"{pad}for (int {s.name} = 0; {s.name} < {s.text}; ++{s.name}) {{")
            out += render_segments(s.body, indent + 1)
            out.append(f"{pad}}}")
        elif k == "reduce":
            arr, length, op = s.name, int(s.text), s.form
            out += [f"{pad}for (int __s = {length // 2}; __s > 0; __s >>= 1) {{",
                    f"{pad}  if (tid < __s) {arr}[tid] = {_combine(arr, op)};",
                    f"{pad}  __syncthreads();", f"{pad}}}"]
        elif k == "shuffle":
            out.append(f"{pad}{s.name} = {_shuffle_call(s, s.kids[0].render())};")
        else:
            out += s.render(indent)
    return out


def _combine(arr, op) -> str:
    if op in ("min", "max"):
        return f"{op}({arr}[tid], {arr}[tid + __s])"
    return f"{arr}[tid] {op} {arr}[tid + __s]"


def _shuffle_call(s: S, value: str) -> str:
    kind, arg, width = s.form, s.text.split(",")[0], s.text.split(",")[1]
    name = {"xor": "__shfl_xor_sync", "up": "__shfl_up_sync", "down": "__shfl_down_sync",
            "idx": "__shfl_sync"}[kind]
    return f"{name}(0xffffffffu, {value}, {arg}, {width})"


def _host_segments(segments, indent, bx, bt) -> list:
    pad = "  " * indent
    out = []
    for s in segments:
        k = s.kind
        if k == "phase":
            out += _thread_loop([line.strip() for line in render_body(s.body, 0)], indent,
                                bx, bt) if s.body else []
        elif k == "barrier":
            pass
        elif k == "loop":
            out.append(f"{pad}for (int {s.name} = 0; {s.name} < {s.text}; ++{s.name}) {{")
            out += _host_segments(s.body, indent + 1, bx, bt)
            out.append(f"{pad}}}")
        elif k == "reduce":
            arr, length, op = s.name, int(s.text), s.form
            out.append(f"{pad}for (int __s = {length // 2}; __s > 0; __s >>= 1) {{")
            out += _thread_loop([f"if (tid < __s) {arr}[tid] = {_combine(arr, op)};"],
                                indent + 1, bx, bt)
            out.append(f"{pad}}}")
        elif k == "shuffle":
            # every thread's value first, then each takes its source lane's (CUDA C++
            # Programming Guide, "Warp Shuffle Functions": a source outside the thread's
            # group of `width` lanes gives the thread its own value)
            t = s.kids[0].type
            value = s.kids[0].render()
            arg, width = s.text.split(",")
            src = {"xor": f"__lane ^ ({arg})",
                   "up": f"((__lane % {width}) >= ({arg}) ? __lane - ({arg}) : __lane)",
                   "down": f"((__lane % {width}) + ({arg}) < {width} ? __lane + ({arg}) : __lane)",
                   "idx": f"(__lane / {width}) * {width} + (({arg}) % {width})"}[s.form]
            out.append(f"{pad}{{")
            out.append(f"{pad}  {t.name} __v[{bt}];")
            out += _thread_loop([f"__v[__t] = {value};"], indent + 1, bx, bt)
            out += _thread_loop([f"int __lane = __t % 32; int __src = {src};",
                                 f"{s.name} = __v[__t - __lane + __src];"], indent + 1, bx, bt)
            out.append(f"{pad}}}")
        else:
            raise ValueError(k)
    return out


class KernelGenerator(Generator):
    """Random kernel tests (module docstring), from the same seed machinery."""

    def kernel(self, index: int) -> KernelTest:
        rng = self.rng
        seed = rng.randrange(1 << 30)
        rng = self.rng = random.Random(seed)
        block, grid = rng.choice(BLOCKS)
        self.t = KernelTest(index, seed=seed, block=block, grid=grid)
        bt = self.t.block_threads
        self.frames = [[Local("tid", "scalar", INT, mutable=False),
                        Local("gid", "scalar", INT, mutable=False)]]
        self.counter = 0
        self.helpers, self.structs = [], []
        self.methods, self.enums, self.lambdas = {}, [], []
        self.const_only = self.in_helper = False
        self.allow_auto = False
        self.strict = True
        for _ in range(rng.randint(3, 6)):
            code = rng.choice(list(INPUTS))
            t = INPUTS[code]
            name = self.fresh("a")
            self.t.locals.append(S("decl", text=t.name, name=name, kids=[E(
                "index", t, kids=[var("in_" + code), lit(f"gid * {NIN} + {rng.randrange(NIN)}",
                                                         None)])]))
            self.declare(Local(name, "scalar", t))
        for _ in range(rng.randint(0, 1)):
            self.make_struct()
        for _ in range(rng.choice([0, 0, 1, 2])):
            self.make_helper()
        for _ in range(rng.randint(1, 3)):
            kind = rng.choice(["decl", "decl", "decl", "vector", "struct"])
            if kind == "decl":
                self.t.locals.append(self.decl(2))
            elif kind == "vector":
                self.t.locals.append(self.vector_decl(2))
            else:
                self.t.locals.extend(self.struct_decl(2))
        # shared arrays, each filled by its threads first
        self.shared = []
        for i in range(rng.randint(1, 2)):
            t = rng.choice(SHARED_TYPES)
            length = bt * rng.choice([1, 1, 2])
            name = f"sh{self.t.index}_{i}"
            self.t.shared.append((name, t, length))
            own = ["tid"] + (["tid + %d" % bt] if length == 2 * bt else [])
            self.shared.append((name, t, length, own))
        fill = []
        for name, t, length, own in self.shared:
            for o in own:
                fill.append(S("expr", kids=[E("assign", t, "=", kids=[
                    E("index", t, kids=[var(name), lit(o, None)]),
                    self.convert(self.expr(None, 2), t)])]))
        self.t.body = [S("phase", body=fill), S("barrier")]
        for _ in range(rng.randint(2, 5)):
            self.t.body += self.segment(depth=1)
        self.outputs()
        for name, t, length, own in self.shared:
            self.out(E("index", t, kids=[var(name), lit(f"(tid * 7 + 1) % {length}", None)]))
        self.t.body.append(S("phase", body=self.t.body_outs))
        del self.t.body_outs
        return self.t

    def out(self, e: E):
        form = "float" if e.type == FLOAT else "double" if e.type == DOUBLE else "int"
        if not hasattr(self.t, "body_outs"):
            self.t.body_outs = []
        self.t.body_outs.append(S("out", name=str(len(self.t.outs)), kids=[e], form=form))
        self.t.outs.append(form)

    def phase(self, mode) -> list:
        """A phase's statements: `mode` "own" (own shared elements, read and written),
        "any" (any element, read only) or "atomic"."""
        rng = self.rng
        frame = []
        for name, t, length, own in self.shared:
            if mode == "own":
                frame.append(Local(name, "shared", (t, length), extra=own))
            elif mode == "any":
                frame.append(Local(name, "shared", (t, length), extra="any", mutable=False))
        self.frames.append(frame)
        body = []
        if mode == "atomic":
            for name, t, length, own in self.shared:
                if t not in ATOMIC_OPS:
                    continue
                group = rng.choice(ATOMIC_OPS[t])
                limit = lit(str(rng.randint(1, 1000)) + "u", UINT)
                for _ in range(rng.randint(1, 3)):
                    op = rng.choice(group)
                    idx = self.masked_index(length, 2)
                    val = self.convert(self.expr("int", 2), t)
                    if op in ("atomicInc", "atomicDec"):
                        val = limit
                    body.append(S("expr", kids=[E("call", None, op, kids=[
                        E("addr", None, kids=[E("index", t, kids=[var(name), idx])]),
                        E("cast", t, t.name, form="static", kids=[val])])]))
        for _ in range(rng.randint(1, 4)):
            body.extend(self.statement(depth=1))
        self.frames.pop()
        return body

    def segment(self, depth) -> list:
        rng = self.rng
        kinds = ["own", "any", "any", "shuffle", "reduce", "atomic"]
        if depth > 0:
            kinds += ["loop"]
        kind = rng.choice(kinds)
        if kind in ("own", "any", "atomic"):
            return [S("phase", body=self.phase(kind)), S("barrier")]
        if kind == "loop":
            counter = self.fresh("it")
            self.frames.append([Local(counter, "scalar", INT, mutable=False, extra="counter")])
            body = [S("phase", body=self.phase("own")), S("barrier"),
                    S("phase", body=self.phase("any")), S("barrier")]
            self.frames.pop()
            return [S("loop", name=counter, text=str(rng.randint(1, 3)), body=body)]
        if kind == "reduce":
            cands = [(name, t, length) for name, t, length, own in self.shared
                     if length <= 2 * self.t.block_threads]
            name, t, length = rng.choice(cands)
            ops = ["+", "max", "min"] + (["^", "|", "&"] if t.integer else [])
            if t in (cxx.SHORT, cxx.UCHAR):
                ops = [op for op in ops if op not in ("max", "min")]
            return [S("reduce", name=name, text=str(length), form=rng.choice(ops))]
        # a shuffle into a variable of the thread (declared with the others)
        t = rng.choice(SHUFFLE_TYPES)
        name = self.fresh("w")
        self.t.locals.append(S("decl", text=t.name, name=name, kids=[lit("0", INT)]))
        self.frames[0].append(Local(name, "scalar", t))
        value = self.convert(self.expr(None, 2), t)
        if value.type != t:
            value = E("cast", t, t.name, form="static", kids=[value])
        width = rng.choice([32, 32, 16, 8, 4])
        form = rng.choice(["xor", "up", "down", "idx"])
        arg = {"xor": rng.randint(1, width - 1), "up": rng.randint(1, width - 1),
               "down": rng.randint(1, width - 1), "idx": rng.randint(0, 40)}[form]
        return [S("shuffle", name=name, text=f"{arg},{width}", form=form, kids=[value])]


def make_batch(seed: int, functions: int, kernels: int, fma: bool = True) -> list:
    """One batch's tests from `seed`: `functions` function tests, then `kernels` kernel
    tests (indices 0, 1, ... in that order)."""
    gen = KernelGenerator(seed, fma=fma)
    tests = [gen.test(i) for i in range(functions)]
    return tests + [gen.kernel(functions + i) for i in range(kernels)]
