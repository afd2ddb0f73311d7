"""Shrunk failures kept as files: a test's CUDA text with what running it needs.

A case file (``tests/differential/*.cu``) is the test's source (`program.Test.render`)
after a header of ``//`` lines::

    // difftest case: <the failure's signature when it was found>
    // class: <the bug's class: cast, promotion, compound assignment, ...>
    // outs: int float ...        (the kind of each output word)
    // threads: 1
    // inputs: {"i8": [...], ...} (threads * NIN values of each input array)

`load` gives back (test, inputs, threads); `run.check([test], inputs, threads)` then
compares the host and the emulator on it again.
"""

from __future__ import annotations

import json
import re

import numpy as np

from . import program as P
from .generate import _DTYPE_OF


HOST_MARK = "// ---- the host's version of this kernel (tools/difftest/kernels.py) ----"


def dump(test, inputs: dict, threads: int, signature: str, cls: str = "") -> str:
    """The text of a case file for `test` (see the module docstring); a kernel's also says
    its launch (``// kernel: block 32 2 grid 1``) and ends with its host version."""
    head = [f"// difftest case: {signature}", f"// class: {cls}",
            f"// outs: {' '.join(test.outs)}", f"// threads: {threads}",
            "// inputs: " + json.dumps({c: np.asarray(v).tolist() for c, v in inputs.items()})]
    if getattr(test, "kind", "") == "kernel":
        head.append(f"// kernel: block {test.block[0]} {test.block[1]} grid {test.grid}")
        return "\n".join(head) + "\n" + test.render() + HOST_MARK + "\n" + test.host_function()
    return "\n".join(head) + "\n" + test.render()


def parse(text: str):
    """(test, inputs, threads, header fields) from a case file's text."""
    fields = dict(re.findall(r"^// (difftest case|class|outs|threads|inputs|kernel): ?(.*)$",
                             text, re.M))
    outs = fields["outs"].split()
    threads = int(fields["threads"])
    raw = json.loads(fields["inputs"])
    inputs = {c: np.array(raw[c], dtype=_DTYPE_OF[c]) for c in P.INPUTS}
    host = ""
    if HOST_MARK in text:
        text, host = text.split(HOST_MARK + "\n", 1)
    body = "\n".join(line for line in text.split("\n") if not re.match(
        r"// (difftest case|class|outs|threads|inputs|kernel):", line))
    if "kernel" in fields:
        from .kernels import KernelTest
        bx, by, _, grid = fields["kernel"].split()[1:5]
        index = int(re.search(r"__global__ void k(\d+)\(", text).group(1))
        test = KernelTest(index, outs=outs, source=body, block=(int(bx), int(by)),
                          grid=int(grid), host_text=host)
        return test, inputs, threads, fields
    index = int(re.search(r"__device__ void t(\d+)\(", text).group(1))
    return P.Test.from_source(index, body, outs), inputs, threads, fields


def load(path):
    with open(path) as f:
        return parse(f.read())
