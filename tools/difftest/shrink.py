"""Shrinking a failing test to a minimal one that still fails the same way.

Greedy reduction on the program tree, each step kept only if the failure persists (the
predicate recompiles and reruns both sides), repeated until no step applies:

- the threads: the half of the threads that still fails, down to one;
- helper functions and struct definitions, deleted;
- statements, deleted (runs of them first, then one by one), in every statement list;
- ``if``/loops replaced by their bodies;
- every expression replaced by one of its operands, then by the literal 0 or 1;
- the inputs read from memory replaced by their values, as literals.

A step that makes the program invalid is rejected by the host compile (a
`host-compile` failure is not "the same failure"), one that makes it undefined by the host's
sanitizer (those instances are not compared). `signature` decides "the same way".
"""

from __future__ import annotations

import re
import time

import numpy as np

from . import program as P
from .program import E, S, lit
from .run import check


def signature(failure) -> str:
    """The failure's kind and message with its numbers and positions blanked: what a smaller
    program must still show to count as the same failure."""
    if failure.kind == "mismatch":
        return "mismatch"
    text = failure.message.splitlines()[0] if failure.message else ""
    text = re.sub(r"kernel\.cu:\d+(:\d+)?", "kernel.cu", text)
    text = re.sub(r"\d+", "#", text)
    text = re.sub(r"'[^']*'", "'…'", text) if failure.kind == "warning" else text
    return f"{failure.kind}: {text[:120]}"


def _subset_inputs(inputs: dict, threads: int, keep: list) -> dict:
    out = {}
    for code, a in inputs.items():
        rows = a.reshape(threads, P.NIN)[keep]
        out[code] = np.ascontiguousarray(rows.reshape(-1))
    return out


class Shrinker:
    """Shrinks one failing test; `run` returns the smallest (test, inputs, threads) found."""

    def __init__(self, test, inputs, threads, sig: str, seconds: float = 300.0,
                 predicate=None, fma=True):
        self.test, self.inputs, self.threads, self.sig = test.clone(), inputs, threads, sig
        self.deadline = time.monotonic() + seconds
        self.tries = 0
        self.fma = fma
        self.predicate = predicate or self._fails

    def _fails(self, test, inputs, threads) -> bool:
        rep = check([test], inputs, threads, fma=self.fma)
        return any(signature(f) == self.sig for f in rep.failures)

    def _try(self, test, inputs=None, threads=None) -> bool:
        if time.monotonic() > self.deadline:
            return False
        self.tries += 1
        inputs = self.inputs if inputs is None else inputs
        threads = self.threads if threads is None else threads
        if self.predicate(test, inputs, threads):
            self.test, self.inputs, self.threads = test, inputs, threads
            return True
        return False

    def run(self):
        self.shrink_threads()
        while time.monotonic() < self.deadline:
            before = self.size()
            self.delete_functions()
            self.delete_statements()
            self.unwrap_statements()
            self.simplify_expressions()
            if self.size() >= before:
                break
        self.inline_inputs()
        return self.test, self.inputs, self.threads

    def size(self) -> int:
        return len(self.test.render())

    # -- steps
    def shrink_threads(self):
        if getattr(self.test, "kind", "") == "kernel":
            return                  # a kernel's threads are its blocks
        while self.threads > 1:
            half = self.threads // 2
            for keep in (list(range(half)), list(range(half, self.threads))):
                if self._try(self.test, _subset_inputs(self.inputs, self.threads, keep),
                             len(keep)):
                    break
            else:
                return

    def delete_functions(self):
        i = 0
        while i < len(self.test.functions):
            t = self.test.clone()
            del t.functions[i]
            if not self._try(t):
                i += 1
        i = 0
        while i < len(self.test.decls):
            t = self.test.clone()
            del t.decls[i]
            if not self._try(t):
                i += 1

    def delete_statements(self):
        # the lists are found afresh on each clone, by their position in the walk
        n_lists = len(self.test.statement_lists())
        for li in range(n_lists):
            lists = self.test.statement_lists()
            if li >= len(lists):
                break
            chunk = max(len(lists[li]) // 2, 1)
            while chunk >= 1:
                i = 0
                while True:
                    lists = self.test.statement_lists()
                    if li >= len(lists) or i >= len(lists[li]):
                        break
                    t = self.test.clone()
                    del t.statement_lists()[li][i:i + chunk]
                    if not self._try(t):
                        i += chunk
                chunk //= 2

    def unwrap_statements(self):
        for li in range(len(self.test.statement_lists())):
            i = 0
            while True:
                lists = self.test.statement_lists()
                if li >= len(lists) or i >= len(lists[li]):
                    break
                s = lists[li][i]
                done = False
                if s.kind in ("if", "block"):
                    for part in ("body", "orelse"):
                        t = self.test.clone()
                        lst = t.statement_lists()[li]
                        lst[i:i + 1] = getattr(lst[i], part)
                        if getattr(s, part) and self._try(t):
                            done = True
                            break
                elif s.kind in ("for", "while", "do"):
                    t = self.test.clone()
                    lst = t.statement_lists()[li]
                    loop = lst[i]
                    counter = S("decl", text="const int", name=loop.name,
                                kids=[lit("0", P.cxx.INT)])
                    lst[i:i + 1] = [S("block", body=[counter] + loop.body)]
                    done = self._try(t)
                if not done:
                    i += 1

    def simplify_expressions(self):
        k = 0
        while True:
            slots = P.expression_slots(self.test)
            if k >= len(slots):
                break
            holder, i = slots[k]
            e = holder.kids[i]
            changed = False
            # an operand in its parent's place (of an arithmetic type: never an array or a
            # pointer, whose conversion to an integer would compare addresses)
            kids = [c for c in e.kids if c.type is not None and e.type is not None]
            cands = [c for c in kids if c.kind != "lit"] + [c for c in kids if c.kind == "lit"]
            if e.type is not None and e.kind not in ("lit",) and not (e.kind == "var" or
                                                (holder.kind == "decl" and e.kind == "index"
                                                 and e.kids and e.kids[0].text.startswith("in_"))):
                cands += [lit("0", P.cxx.INT), lit("1", P.cxx.INT)]
            for c in cands:
                t = self.test.clone()
                h2, i2 = P.expression_slots(t)[k]
                h2.kids[i2] = _clone(c)
                if self._try(t):
                    changed = True
                    break
            if not changed:
                k += 1

    def inline_inputs(self):
        """Each input read (``int a1 = in_i32[tid * 6 + 2];``) as its value, when the
        failure persists with it (the test then runs on constants)."""
        if self.threads != 1:
            return
        for s in list(self.test.body):
            if s.kind != "decl" or not s.kids or s.kids[0].kind != "index":
                continue
            arr = s.kids[0].kids[0].text
            if not arr.startswith("in_"):
                continue
            code = arr[3:]
            j = int(s.kids[0].kids[1].text.rsplit("+", 1)[1])
            value = self.inputs[code][j]
            t = self.test.clone()
            for s2 in t.body:
                if s2.kind == "decl" and s2.name == s.name:
                    s2.kids[0] = lit(_literal(value, P.INPUTS[code]), P.INPUTS[code])
            self._try(t)


def _clone(e: E) -> E:
    import copy
    return copy.deepcopy(e)


def _literal(value, t) -> str:
    """A C++ literal of `value` (a NumPy scalar of input type `t`) that converts to it
    exactly."""
    if t.floating:
        x = float(value)
        if np.isnan(x):
            return "__int_as_float(0x7fffffff)" if t.size == 4 else \
                "__longlong_as_double(0x7ff8000000000000ll)"
        if np.isinf(x):
            s = "-" if x < 0 else ""
            return f"({s}__int_as_float(0x7f800000))" if t.size == 4 else \
                f"({s}__longlong_as_double(0x7ff0000000000000ll))"
        return f"({float.hex(x)}{'f' if t.size == 4 else ''})"
    v = int(value)
    if v < 0:
        return f"({v + 1} - 1)" if v == -(1 << 63) else f"({v})"
    return f"{v}ull" if v > (1 << 31) - 1 else str(v)


def shrink(failure, inputs, threads, seconds: float = 300.0, fma: bool = True):
    """The smallest (test, inputs, threads) that fails as `failure` does."""
    s = Shrinker(failure.test, inputs, threads, signature(failure), seconds, fma=fma)
    test, inp, n = s.run()
    return test, inp, n, s.tries
