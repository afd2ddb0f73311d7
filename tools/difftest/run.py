"""One batch of tests through both sides, compared word by word.

`check(tests, inputs, threads)` compiles the batch once for the host (`host.py`) and once
for the emulator (``SourceModule(..., options=["-fmad=false"])``, as the host does not
fuse multiply-adds), runs both, and returns a `Report`: per test, the instances
(test, thread) compared, left out as undefined on the host, and every word that differs.
Float and double words compare as bits, except that any NaN equals any NaN (the GPU
writes float NaN results as 0x7FFFFFFF, x86 as 0xFFC00000: docs/emulator.md,
"Arithmetic"). A test the emulator refuses (a `CompileError`) or stops in (a
`KernelRuntimeError` on a thread the host ran without undefined behaviour) is a failure
too; a batch that fails as a whole is rerun test by test to find which.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import host as H
from . import program as P

EMULATOR_OPTIONS = ["-fmad=false"]


@dataclass
class Failure:
    """What went wrong with one test: `kind` is ``mismatch`` (`words`: (thread, word,
    host bits, emulator bits) of each difference), ``compile`` (the emulator refused it:
    `message`), ``runtime`` (the emulator stopped: `message`), ``host-compile`` (the host
    compiler refused it: a generator bug), ``warning`` (the emulator warned about a
    well-defined program)."""

    test: object
    kind: str
    message: str = ""
    words: list = field(default_factory=list)
    overflow: bool = False          # a differing instance had signed overflow

    def summary(self) -> str:
        if self.kind == "mismatch":
            tid, w, h, e = self.words[0]
            return (f"{self.test.name}: {len(self.words)} words differ; first: thread {tid} "
                    f"word {w} ({self.test.outs[w]}) host 0x{h:x} emulator 0x{e:x}")
        return f"{self.test.name}: {self.kind}: {self.message.splitlines()[0][:300]}"


@dataclass
class Report:
    tests: int = 0
    instances: int = 0              # (test, thread) pairs compared
    undefined: int = 0              # left out: undefined behaviour on the host
    overflowed: int = 0             # compared, with signed overflow (wrapped)
    words: int = 0
    failures: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)

    def add(self, other: "Report"):
        self.tests += other.tests
        self.instances += other.instances
        self.undefined += other.undefined
        self.overflowed += other.overflowed
        self.words += other.words
        self.failures += other.failures
        for k, v in other.seconds.items():
            self.seconds[k] = self.seconds.get(k, 0.0) + v


def _same(kind: str, h: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Word-by-word equality, NaN equal to NaN for float and double words."""
    eq = h == e
    if kind == "float":
        def nan(x):
            x = x & np.uint64(0xFFFFFFFF)
            return ((x & np.uint64(0x7F800000)) == np.uint64(0x7F800000)) & \
                ((x & np.uint64(0x007FFFFF)) != 0)
        eq |= nan(h) & nan(e)
    elif kind == "double":
        def nan(x):
            return ((x & np.uint64(0x7FF0000000000000)) == np.uint64(0x7FF0000000000000)) & \
                ((x & np.uint64(0x000FFFFFFFFFFFFF)) != 0)
        eq |= nan(h) & nan(e)
    return eq


def emulate(tests, inputs: dict, threads: int, kernel: str = "all_tests",
            options=None, prefix: str = ""):
    """Run the batch on the emulator (`options`: nvcc's, default ``-fmad=false``; `prefix`:
    text before the batch's source): the output words (layout as `program.layout`), and
    the warnings it issued. Raises what the emulator raises."""
    from tilinglib.emulator import In, InOut, SourceModule

    src = prefix + P.device_source(tests, threads)
    lay = P.layout(tests, threads)
    total = sum(n * threads for _, n in lay) or 1
    out = np.zeros(total, np.uint64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = SourceModule(src, options=EMULATOR_OPTIONS if options is None else options)
        args = [In(np.ascontiguousarray(inputs[c])) for c in P.INPUTS]
        functions = [t for t in tests if getattr(t, "kind", "") != "kernel"]
        if functions and (kernel == "all_tests" or len(tests) == 1 and functions):
            f = mod.get_function(kernel)
            f(*args, InOut(out), block=(threads, 1, 1), grid=(1, 1))
        for t, (offset, n) in zip(tests, lay):
            if getattr(t, "kind", "") != "kernel":
                continue
            words = np.zeros(n * threads, np.uint64)
            f = mod.get_function(f"k{t.index}")
            f(*args, InOut(words), block=(t.block[0], t.block[1], 1), grid=(t.grid, 1))
            out[offset:offset + n * threads] = words
    # the emulator's warnings about the kernel, and any Python RuntimeWarning (NumPy's
    # "overflow encountered", which a student would see as noise under a cell)
    return out, [f"{type(w.message).__name__}: {w.message}" for w in caught
                 if type(w.message).__module__.startswith("tilinglib")
                 or issubclass(w.category, RuntimeWarning)]


def _emulate_one(test, inputs, threads):
    """One test alone on the emulator, through its own kernel: (words, warnings) or the
    exception it raised."""
    try:
        return emulate([test], inputs, threads, kernel=f"k{test.index}")
    except Exception as exc:        # noqa: BLE001 - every failure is a finding
        return exc


def check(tests, inputs: dict, threads: int, workdir: str | None = None,
          fma: bool = True) -> Report:
    """Compile and run `tests` on the host and on the emulator and compare (module doc)."""
    from tilinglib.errors import CompileError

    rep = Report(tests=len(tests))
    workdir = workdir or tempfile.mkdtemp(prefix="difftest-")
    t0 = time.perf_counter()
    try:
        h_out, flags = H.compile_and_run(tests, inputs, threads, workdir, fma=fma)
    except H.HostCompileError as exc:
        if len(tests) == 1:
            rep.failures.append(Failure(tests[0], "host-compile", str(exc)))
            return rep
        # find the tests the host refuses; check the others
        good = []
        for t in tests:
            try:
                H.compile_and_run([t], inputs, threads, workdir, fma=fma)
                good.append(t)
            except H.HostCompileError as e:
                rep.failures.append(Failure(t, "host-compile", str(e)))
        rest = check(good, inputs, threads, workdir, fma) if good else Report()
        rest.tests = 0
        rep.add(rest)
        return rep
    rep.seconds["host"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    lay = P.layout(tests, threads)
    per_test = None
    try:
        e_out, warns = emulate(tests, inputs, threads)
    except Exception:               # noqa: BLE001 - find which test
        per_test = [_emulate_one(t, inputs, threads) for t in tests]
        e_out, warns = None, []
    rep.seconds["emulator"] = time.perf_counter() - t0
    for i, (t, (offset, n)) in enumerate(zip(tests, lay)):
        fl = flags[i]
        bad = (fl & (H.UNDEFINED | H.TRAPPED)) != 0
        rep.undefined += int(bad.sum())
        rep.instances += int((~bad).sum())
        rep.overflowed += int(((fl & H.OVERFLOW) != 0)[~bad].sum())
        h = h_out[offset:offset + n * threads].reshape(threads, n)
        if per_test is not None:
            r = per_test[i]
            if isinstance(r, Exception):
                kind = "compile" if isinstance(r, CompileError) else "runtime"
                if kind == "runtime" and bad.all():
                    continue
                rep.failures.append(Failure(t, kind, f"{type(r).__name__}: {r}"))
                continue
            e = r[0].reshape(threads, n)
            w = r[1]
        else:
            e = e_out[offset:offset + n * threads].reshape(threads, n)
            w = None
        diffs = []
        for j, kind in enumerate(t.outs):
            eq = _same(kind, h[:, j], e[:, j]) | bad
            for tid in np.nonzero(~eq)[0]:
                diffs.append((int(tid), j, int(h[tid, j]), int(e[tid, j])))
        rep.words += int((~bad).sum()) * len(t.outs)
        if diffs:
            over = any(fl[tid] & H.OVERFLOW for tid, *_ in diffs)
            rep.failures.append(Failure(t, "mismatch", words=diffs, overflow=bool(over)))
        if w:
            rep.failures.append(Failure(t, "warning", "\n".join(w)))
    if per_test is None and warns and len(tests) == 1:
        rep.failures.append(Failure(tests[0], "warning", "\n".join(warns)))
    elif per_test is None and warns:
        # warnings of the whole batch: find the tests that give them (each alone is
        # another source, so a warning issued while compiling is issued again)
        for t in tests:
            r = _emulate_one(t, inputs, threads)
            if not isinstance(r, Exception) and r[1]:
                rep.failures.append(Failure(t, "warning", "\n".join(r[1])))
    return rep
