"""What tracking the written elements of Out(...) arrays costs the emulator (the
OutputNotWrittenWarning's bitmap): the tiled SGEMM at N=256, TILE=32, launched with C as
Out(C) (tracked) and with tracking switched off, best of `--repeat` runs each.

    .venv/bin/python bench/output_written_cost.py [--repeat 5]

Prints both times and the difference in percent; the CPU time, not a GPU figure.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tilinglib import kernels, sgemm
from tilinglib.emulator import In, Out, SourceModule
from tilinglib.toolchain.model import memory


def best_of(f, args, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(*args, block=(32, 32, 1), grid=(8, 8))
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    n = 256
    A, B = sgemm.random_matrices(n, seed=0)
    C = np.zeros_like(A)
    f = SourceModule(kernels.load("sgemm_tiled"), options=["-DTILE=32"]).get_function("sgemmTiled")
    args = (np.int32(n), In(A), In(B), Out(C))
    best_of(f, args, 1)                                      # warm up
    tracked = best_of(f, args, repeat)
    allocate = memory.GlobalMemory.allocate

    def untracked(self, *a, track_writes=False, **kw):
        return allocate(self, *a, **kw)
    memory.GlobalMemory.allocate = untracked
    try:
        plain = best_of(f, args, repeat)
    finally:
        memory.GlobalMemory.allocate = allocate
    # The two totals above differ by less than the noise of a shared machine; the time
    # spent in the bitmap itself is measured directly too.
    mark, spent = memory.Allocation.mark_written, [0.0, 0]

    def timed(self, off, size):
        t0 = time.perf_counter()
        mark(self, off, size)
        spent[0] += time.perf_counter() - t0
        spent[1] += 1
    memory.Allocation.mark_written = timed
    try:
        t0 = time.perf_counter()
        f(*args, block=(32, 32, 1), grid=(8, 8))
        launch = time.perf_counter() - t0
    finally:
        memory.Allocation.mark_written = mark
    print(f"tiled SGEMM N={n} TILE=32, best of {repeat}: Out tracked {tracked * 1e3:.1f} ms, "
          f"untracked {plain * 1e3:.1f} ms ({100 * (tracked - plain) / plain:+.1f}%); the "
          f"bitmap itself: {spent[1]} stores marked in {spent[0] * 1e3:.2f} ms of a "
          f"{launch * 1e3:.1f} ms launch ({100 * spent[0] / launch:.2f}%)")


if __name__ == "__main__":
    main()
