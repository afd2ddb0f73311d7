"""Differential testing of the emulator against the GPU: nvcc on the H200.

    TILINGLIB_BACKEND=pycuda python3 bench/differential_gpu.py [--seed 1] [--count 160]
        [--batch 40] [--kernels 8] [--out bench/results/differential_h200.json]
    python3 bench/differential_gpu.py --no-gpu      (no GPU: the host in its place)

What the host compiler cannot judge, the GPU does (tests/test_differential.py checks the
rest on every CI run):

1. the cast table of issue 24, and more conversions: each expression computed by a kernel
   on the GPU, on the emulator and (where C++ defines it) on the host, side by side;
2. random tests of the generator's ``"gpu"`` profile (tools/difftest/generate.py): the
   host's tests and kernels (shared memory, barriers, shuffles, atomics), and also shift
   counts of the width or more, division by zero and float-to-integer conversions out of
   range, left unguarded; compiled by nvcc with ``-fmad=false`` and run by 64 threads,
   and on the emulator with ``-fmad=false``: every word must have the same bits;
3. the same tests under nvcc's default (``-fmad=true``, FMA contraction) against the
   emulator's default: the emulator fuses a product inside the add's expression, nvcc
   also across statements (docs/emulator.md, "FMA contraction"), so float and double words
   may differ there; they are counted apart from integer words, which may not.

Each instance (test, thread) is also run on the host (zig c++): where C++ leaves it
undefined (the shift, division and conversion rules above, signed overflow) it is counted
apart, as those differences are between the GPU's rule and the emulator's rule for
undefined C++, which docs/emulator.md ("Arithmetic") states. Prints every mismatch with
its test's source, thread and words, and the totals; exit status 1 if an instance C++
defines differs (under the default flags: in an integer word), if nvcc refuses a test the
emulator accepts, or if a row of the cast table differs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

from difftest import host as H              # noqa: E402
from difftest import kernels as K           # noqa: E402
from difftest import program as P           # noqa: E402
from difftest import run as R               # noqa: E402
from difftest import generate as G          # noqa: E402

# nvcc's device code gets the <stdint.h> names from this; the emulator satisfies it itself
PREFIX = "#include <stdint.h>\n"

# The cast table of issue 24 (a = b = 100000, one = 1, two = 2), then more conversions:
# (expression, kind of the word: int or float or double)
CASTS = [
    ("static_cast<size_t>(a) * b", "int"), ("size_t(a) * b", "int"),
    ("static_cast<long long>(a) * b", "int"), ("(size_t)a * b", "int"),
    ("static_cast<float>(one) / two", "float"), ("float(one) / two", "float"),
    ("one / static_cast<float>(two)", "float"), ("(float)one / two", "float"),
    # more of every form
    ("static_cast<unsigned>(a) * b", "int"), ("a * static_cast<long long>(b)", "int"),
    ("(long long)a * b", "int"), ("static_cast<double>(one) / two", "double"),
    ("double(one) / two", "double"), ("one / double{2.0f}", "double"),
    ("int64_t(a) * b", "int"), ("static_cast<uint64_t>(a) * b", "int"),
    ("static_cast<unsigned char>(a + 44)", "int"), ("(short)(a * 3)", "int"),
    ("static_cast<char>(a - 99800)", "int"), ("bool(two) + bool(0)", "int"),
    ("static_cast<float>(a * 167 + 1)", "float"), ("float(0.1)", "float"),
    ("reinterpret_cast<const unsigned&>(fone)", "int"),
    ("*reinterpret_cast<const int*>(&fone)", "int"),
    ("const_cast<int&>(static_cast<const int&>(a)) + 1", "int"),
    ("static_cast<int>(-2.7f * one)", "int"), ("int(2.7f * one)", "int"),
    ("sizeof(static_cast<size_t>(a) * b)", "int"), ("sizeof(one ? 'a' : 'b')", "int"),
    ("min(a, 7u)", "int"), ("max(-1ll, 3ull)", "int"), ("umin(fone * 3.5f, 2.5f)", "int"),
    ("sqrt(fone * 2)", "float"), ("sqrt((double)two)", "double"), ("abs(-2.5f * one)", "float"),
    ("static_cast<int>(3e9f * one)", "int"), ("static_cast<unsigned>(-1.0f * one)", "int"),
    ("(int)(fone / (one - 1))", "int"), ("(1 << (31 + one))", "int"), ("a / (one - 1)", "int"),
]


def casts_source() -> str:
    lines = [f"extern \"C\" __global__ void casts(const int* in, unsigned long long* out) {{",
             "  int a = in[0], b = in[1], one = in[2], two = in[3];",
             "  float fone = (float)in[2];"]
    for i, (expr, kind) in enumerate(CASTS):
        value = {"float": f"__float_as_uint({expr})", "double": f"__double_as_longlong({expr})",
                 "int": f"(unsigned long long)({expr})"}[kind]
        lines.append(f"  out[{i}] = {value};")
    return "\n".join(lines) + "\n}\n"


CAST_INPUTS = np.array([100000, 100000, 1, 2], np.int32)


def show(word: int, kind: str) -> str:
    if kind == "float":
        return repr(float(np.uint32(word & 0xFFFFFFFF).view(np.float32)))
    if kind == "double":
        return repr(float(np.uint64(word).view(np.float64)))
    return str(int(np.uint64(word).astype(np.int64)))


def host_casts():
    """The cast table on the host: (words, defined per row), a row undefined in C++ (or
    refused by clang) left as None. One test per row, all in one compile."""
    tests = []
    for i, (expr, kind) in enumerate(CASTS):
        body = (f"  int a = {CAST_INPUTS[0]} + tid, b = {CAST_INPUTS[1]} + tid, one = 1 + tid, "
                f"two = 2 + tid; float fone = (float)one;\n")
        value = {"float": f"__float_as_uint({expr})", "double": f"__double_as_longlong({expr})",
                 "int": f"(unsigned long long)({expr})"}[kind]
        src = f"__device__ void t{i}({P.PARAMS}) {{\n{body}  out[0] = {value};\n}}\n"
        tests.append(P.Test.from_source(i, src, [kind]))
    try:
        out, flags = H.compile_and_run(tests, G.inputs(1, 1), 1)
    except H.HostCompileError:
        out, flags = None, None
    words, defined = [], []
    for i, t in enumerate(tests):
        if out is None:             # find the rows clang refuses, one by one
            try:
                o, f = H.compile_and_run([t], G.inputs(1, 1), 1)
                w, fl = int(o[0]), int(f[0, 0])
            except H.HostCompileError:
                words.append(None)
                defined.append(False)
                continue
        else:
            w, fl = int(out[i]), int(flags[i, 0])
        ok = not fl & (H.UNDEFINED | H.TRAPPED)
        words.append(w if ok else None)
        defined.append(bool(ok))
    return words, defined


def emulator_casts(options=None):
    from tilinglib.emulator import In, Out, SourceModule
    out = np.zeros(len(CASTS), np.uint64)
    SourceModule(PREFIX + casts_source(), options=options).get_function("casts")(
        In(CAST_INPUTS), Out(out), block=(1, 1, 1), grid=(1, 1))
    return [int(w) for w in out]


def gpu_casts(options=None):
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule
    out = np.zeros(len(CASTS), np.uint64)
    mod = SourceModule(PREFIX + casts_source(), no_extern_c=True, options=options or [])
    mod.get_function("casts")(drv.In(CAST_INPUTS), drv.Out(out), block=(1, 1, 1),
                              grid=(1, 1))
    return [int(w) for w in out]


def gpu_run(tests, inputs, threads, options):
    """The batch on the GPU (PyCUDA, nvcc with `options`): words as `program.layout`."""
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule
    src = PREFIX + P.device_source(tests, threads)
    mod = SourceModule(src, no_extern_c=True, options=list(options))
    lay = P.layout(tests, threads)
    total = sum(n * threads for _, n in lay) or 1
    out = np.zeros(total, np.uint64)
    args = [drv.In(np.ascontiguousarray(inputs[c])) for c in P.INPUTS]
    if any(getattr(t, "kind", "") != "kernel" for t in tests):
        mod.get_function("all_tests")(*args, drv.InOut(out), block=(threads, 1, 1),
                                      grid=(1, 1))
    for t, (offset, n) in zip(tests, lay):
        if getattr(t, "kind", "") == "kernel":
            words = np.zeros(n * threads, np.uint64)
            mod.get_function(f"k{t.index}")(*args, drv.InOut(words),
                                           block=(t.block[0], t.block[1], 1), grid=(t.grid, 1))
            out[offset:offset + n * threads] = words
    drv.Context.synchronize()
    return out


def gpu_accepted(tests, inputs, options, refused, emu_options=(), both=None):
    """`tests` without those nvcc refuses. One nvcc refuses and the emulator compiles is a
    difference (printed and added to `refused`); one both refuse (the generator's "gpu"
    profile leaves division unguarded, so a constexpr initialiser may divide by zero, which
    C++ makes ill-formed) agrees, and is added to `both`."""
    from tilinglib.errors import CompileError as EmulatorCompileError
    from pycuda.driver import CompileError
    try:
        gpu_run(tests, inputs, 64, options)
        return tests
    except CompileError:
        pass
    kept = []
    for t in tests:
        try:
            gpu_run([t], inputs, 64, options)
            kept.append(t)
        except CompileError as exc:
            lines = str(exc).strip().splitlines() or [""]
            first = next((line for line in lines if "error" in line), lines[-1])
            try:
                R.emulate([t], inputs, 64, options=list(emu_options), prefix=PREFIX)
            except EmulatorCompileError as emu_exc:
                if both is not None:
                    both.append(t)
                print(f"\nnvcc and the emulator both refused {t.name}: nvcc: {first[:200]}; "
                      f"emulator: {str(emu_exc).splitlines()[0][:200]}")
                continue
            refused.append(t)
            print(f"\nnvcc refused {t.name}: {first[:300]}")
            print(t.render())
    return kept


def host_words(tests, inputs, threads):
    """The host's words and flags for the batch (for what C++ defines), or None."""
    try:
        return H.compile_and_run(tests, inputs, threads, fma=H.has_fma())
    except H.HostCompileError as exc:
        print("host compiler refused the batch:", str(exc)[:300])
        return None


def compare(tests, threads, ref, emu, flags, fmad: bool, tally, shown, limit):
    """Count and print the differences between `ref` (the GPU's words, or the host's) and
    `emu` for one batch; `flags` the host's, for which instances C++ leaves undefined."""
    for i, (t, (offset, n)) in enumerate(zip(tests, P.layout(tests, threads))):
        g = ref[offset:offset + n * threads].reshape(threads, n)
        e = emu[offset:offset + n * threads].reshape(threads, n)
        for tid in range(threads):
            fl = int(flags[i, tid]) if flags is not None else 0
            cls = "undefined in C++" if fl & (H.UNDEFINED | H.TRAPPED) else \
                "signed overflow" if fl & H.OVERFLOW else "defined"
            tally[cls]["instances"] += 1
            for j, kind in enumerate(t.outs):
                if R._same(kind, g[tid:tid + 1, j], e[tid:tid + 1, j]).all():
                    continue
                key = "float words" if fmad and kind != "int" else "words"
                tally[cls][key] += 1
                if shown[0] < limit:
                    shown[0] += 1
                    print(f"\n{cls}: {t.name} thread {tid} word {j} ({kind}): reference "
                          f"0x{int(g[tid, j]):x} emulator 0x{int(e[tid, j]):x}")
                    print(t.render())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=160, help="tests in all (per flag set)")
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--kernels", type=int, default=8, help="kernel tests per batch")
    ap.add_argument("--show", type=int, default=20, help="mismatches printed in full")
    ap.add_argument("--no-gpu", action="store_true",
                    help="no GPU: compare with the host where C++ defines the result (a "
                         "check of this script)")
    ap.add_argument("--out", default=None, help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    start = time.time()
    figures = {"seed": args.seed, "casts": [], "runs": {}}
    bad = False

    # 1. the cast table
    h_words, h_def = host_casts()
    e_words = emulator_casts()
    g_words = None if args.no_gpu else gpu_casts()
    print("| expression | emulator | GPU | host (C++) | emulator = GPU |")
    print("|---|---|---|---|---|")
    for i, (expr, kind) in enumerate(CASTS):
        e = show(e_words[i], kind)
        g = show(g_words[i], kind) if g_words else "-"
        h = show(h_words[i], kind) if h_words[i] is not None else "undefined"
        same = (g_words is not None and R._same(kind, np.array([g_words[i]], np.uint64),
                                                 np.array([e_words[i]], np.uint64)).all())
        if g_words is None:
            same = h_words[i] is None or e_words[i] == h_words[i] or \
                R._same(kind, np.array([h_words[i]], np.uint64),
                        np.array([e_words[i]], np.uint64)).all()
        bad |= not same
        print(f"| `{expr}` | {e} | {g} | {h} | {'yes' if same else 'NO'} |")
        figures["casts"].append({"expression": expr, "kind": kind, "emulator": e, "gpu": g,
                                 "host": h, "same": bool(same)})

    # 2 and 3. random tests
    configs = [("-fmad=false", ["-fmad=false"], ["-fmad=false"], False),
               ("default (-fmad=true)", [], [], True)]
    for label, nv_opts, emu_opts, fmad in configs:
        if args.no_gpu and fmad:
            continue                 # the host does not contract
        tally = {c: {"instances": 0, "words": 0, "float words": 0}
                 for c in ("defined", "signed overflow", "undefined in C++")}
        shown = [0]
        refused, both = [], []
        tests_run = 0
        k = 0
        t0 = time.time()
        while tests_run < args.count:
            n = min(args.batch, args.count - tests_run)
            nk = min(args.kernels, n // 4)
            s = args.seed * 100003 + k
            gen = K.KernelGenerator(s, profile="gpu", fma=True)
            tests = [gen.test(i) for i in range(n - nk)] + \
                [gen.kernel(n - nk + i) for i in range(nk)]
            inputs = G.inputs(s, 64)
            if not args.no_gpu:
                tests = gpu_accepted(tests, inputs, nv_opts, refused, emu_opts, both)
            hw = host_words(tests, inputs, 64)
            flags = hw[1] if hw else None
            emu, _ = R.emulate(tests, inputs, 64, options=emu_opts, prefix=PREFIX)
            if args.no_gpu:
                ref = hw[0]
                # the host's words stand for the GPU's only where C++ defines them
                flags = flags.copy()
            else:
                ref = gpu_run(tests, inputs, 64, nv_opts)
            if args.no_gpu:
                keep = (flags & (H.UNDEFINED | H.TRAPPED)) == 0
                lay = P.layout(tests, 64)
                ref = ref.copy()
                for i, (offset, m) in enumerate(lay):
                    for tid in np.nonzero(~keep[i])[0]:
                        ref[offset + tid * m: offset + (tid + 1) * m] = \
                            emu[offset + tid * m: offset + (tid + 1) * m]
            compare(tests, 64, ref, emu, flags, fmad, tally, shown, args.show)
            tests_run += n
            k += 1
        el = time.time() - t0
        print(f"\n{label}: {tests_run} tests ({args.kernels} kernels per batch of "
              f"{args.batch}), 64 threads each, in {el:.0f} s")
        for cls, c in tally.items():
            extra = f", float/double words differing {c['float words']}" if fmad else ""
            print(f"  {cls:18s} instances {c['instances']:6d}, words differing "
                  f"{c['words']}{extra}")
        if refused:
            print(f"  nvcc refused {len(refused)} tests the emulator accepts (each a "
                  f"finding: printed above)")
        if both:
            print(f"  nvcc and the emulator both refused {len(both)} tests (agreeing)")
        figures["runs"][label] = {"tests": tests_run, "seconds": round(el, 1),
                                  "tally": tally, "refused_by_nvcc": len(refused),
                                  "refused_by_both": len(both)}
        bad |= bool(refused)
        # what must match: every word of an instance C++ defines under -fmad=false, its
        # integer words under the default (the other classes are printed: nvcc may
        # compile undefined C++ as it likes)
        bad |= bool(tally["defined"]["words"])
    figures["seconds"] = round(time.time() - start, 1)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(figures, f, indent=1)
    print(f"\n{'MISMATCHES' if bad else 'all equal'} ({figures['seconds']} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    if os.environ.get("TILINGLIB_BACKEND") != "pycuda" and "--no-gpu" not in sys.argv:
        print("note: TILINGLIB_BACKEND is not 'pycuda'; this script uses PyCUDA directly "
              "(run with --no-gpu where there is no GPU)", file=sys.stderr)
    sys.exit(main())
