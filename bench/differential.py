"""Differential testing of the emulator against a real compiler: a long run.

    python3 bench/differential.py [--seed S] [--count N | --seconds T] [--batch B]
                                  [--threads 64] [--shrink SECONDS] [--out DIR]

Generates random, well-defined CUDA C++ tests (tools/difftest/generate.py), B to a batch;
each batch is one host compile with ``zig c++`` (the ziglang wheel's clang, run on this
CPU) and one emulator module, every test run by every thread on its own inputs, and every
output word compared bit for bit (tools/difftest/run.py). Prints, as it goes, each failure
with its test shrunk to a minimal one (``--shrink`` seconds each, 0 to skip), and at the end
the tests tried, tests per second (and per second of host and of emulator time), the
instances compared and left out, and the failures by signature. ``--out DIR`` writes each
shrunk failure there as a .cu file with its inputs. Exit status 1 if anything failed.

Seeds: batch k of a run of seed S is generated from S * 100003 + k, so ``--seed S
--count N`` is reproducible and two runs of different seeds share no batch.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
# the tree whose tilinglib is tested (TILINGLIB_BENCH_TREE, as bench/emulator_speed.py: an older
# checkout, to count what the tester finds there)
sys.path.insert(0, os.environ.get("TILINGLIB_BENCH_TREE", str(ROOT)))

from difftest import cases as C             # noqa: E402
from difftest import generate as G          # noqa: E402
from difftest import host as H              # noqa: E402
from difftest import kernels as K           # noqa: E402
from difftest import run as R               # noqa: E402
from difftest import shrink as SH           # noqa: E402


def batch_seed(seed: int, k: int) -> int:
    return seed * 100003 + k


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=None, help="tests to run")
    ap.add_argument("--seconds", type=float, default=None, help="run this long instead")
    ap.add_argument("--batch", type=int, default=40, help="tests per compile")
    ap.add_argument("--kernels", type=int, default=8,
                    help="kernel tests (shared memory, barriers, shuffles) per batch, "
                         "counted in --batch")
    ap.add_argument("--threads", type=int, default=64, help="threads (input sets) per test")
    ap.add_argument("--shrink", type=float, default=120.0,
                    help="seconds to shrink each new failure (0: do not)")
    ap.add_argument("--out", default=None, help="write shrunk failures to this folder")
    args = ap.parse_args(argv)
    if args.count is None and args.seconds is None:
        args.count = 400
    if args.threads != 64 and args.kernels:
        print("kernel tests run 64 threads: --kernels 0 with --threads", args.threads)
        args.kernels = 0
    fma = H.has_fma()
    total = R.Report()
    seen = collections.Counter()
    shrunk = {}
    work = tempfile.mkdtemp(prefix="difftest-")
    start = time.perf_counter()
    k = 0
    while True:
        if args.count is not None and total.tests >= args.count:
            break
        if args.seconds is not None and time.perf_counter() - start >= args.seconds:
            break
        n = args.batch if args.count is None else min(args.batch, args.count - total.tests)
        s = batch_seed(args.seed, k)
        nk = min(args.kernels, n // 4) if n < args.batch else min(args.kernels, n)
        tests = K.make_batch(s, n - nk, nk, fma=fma)
        inputs = G.inputs(s, args.threads)
        rep = R.check(tests, inputs, args.threads, workdir=work, fma=fma)
        total.add(rep)
        for f in rep.failures:
            sig = SH.signature(f)
            seen[sig] += 1
            if seen[sig] > 1:
                continue
            print(f"\n[batch {k}, seed {s}] {f.summary()}", flush=True)
            if args.shrink > 0:
                test, inp, thr, tries = SH.shrink(f, inputs, args.threads, args.shrink, fma=fma)
                shrunk[sig] = (test, inp, thr)
                print(f"shrunk ({tries} tries, {thr} thread{'s' if thr > 1 else ''}):")
                print(test.render())
                if thr == 1:
                    vals = {c: v.tolist() for c, v in inp.items()}
                    print("inputs:", json.dumps(vals))
                if args.out:
                    os.makedirs(args.out, exist_ok=True)
                    name = os.path.join(args.out, f"failure_{len(shrunk)}.cu")
                    with open(name, "w") as fh:
                        fh.write(C.dump(test, inp, thr, sig))
                    print(f"written to {name}")
        k += 1
        el = time.perf_counter() - start
        print(f"\r{total.tests} tests, {total.tests / el:.1f}/s, {len(total.failures)} "
              f"failures", end="", file=sys.stderr, flush=True)
    el = time.perf_counter() - start
    print(file=sys.stderr)
    host_s = total.seconds.get("host", 0.0)
    emu_s = total.seconds.get("emulator", 0.0)
    print(f"\nseed {args.seed}: {total.tests} tests in {el:.1f} s: {total.tests / el:.1f} "
          f"tests/s (host compile and run {host_s:.1f} s, emulator {emu_s:.1f} s, the rest "
          f"generating, shrinking and comparing)")
    print(f"instances (test x thread) compared: {total.instances}, left out as undefined "
          f"on the host: {total.undefined}, with signed overflow (wrapped, compared): "
          f"{total.overflowed}; words compared: {total.words}")
    print(f"failures: {len(total.failures)} in {len(seen)} signatures")
    for sig, c in seen.most_common():
        print(f"  {c:5d}  {sig}")
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())
