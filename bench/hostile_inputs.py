"""Hostile inputs against the emulator and the grader: the error class, wall time and peak
memory of each, every case in a fresh process of its own.

    python bench/hostile_inputs.py [--markdown] [NAME ...]

Peak memory is the child's ru_maxrss minus its ru_maxrss after importing tilinglib and
NumPy (so it is what the case itself took). The kernels' printf output goes to /dev/null.
`tests/test_hostile_inputs.py` asserts the error classes and generous bounds; this script
only measures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

KERNEL = "__global__ void k(int* a)\n{\n    int x = threadIdx.x;\n    BODY\n}\n"
SGEMM = "__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)"
DOUBLING = "#define A0 x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 21))


def k(body):
    return KERNEL.replace("BODY", body)


# name -> (what, source, keywords); what: "compile", "launch" or "grade". In a grade case
# GOOD is tests/submissions/good_if_else.cu (with its accumulator's declaration replaced by
# the keyword "_acc" where given) and PRINTF that kernel printing in its inner loop.
CASES = {
    '#include "/etc/passwd"': ("compile", '#include "/etc/passwd"\n' + k(""), {}),
    '#include "/dev/zero"': ("compile", '#include "/dev/zero"\n' + k(""), {}),
    "#include </dev/stdin>": ("compile", "#include </dev/stdin>\n" + k(""), {}),
    "#include __FILE__ after #line": ("compile", '#line 1 "/etc/passwd"\n#include __FILE__\n', {}),
    "20 doubling #defines": ("compile", DOUBLING + "int y = A20;\n", {}),
    "2,000 chained #defines": ("compile", "#define B0 x\n" + "".join(
        f"#define B{i} B{i - 1}\n" for i in range(1, 2000)) + "int y = B1999;\n", {}),
    "300 KiB source": ("compile", "int q;\n" * 50_000, {}),
    "150 nested parentheses": ("launch", k("a[x] = " + "(" * 150 + "x" + ")" * 150 + ";"), {}),
    "600-term sum": ("launch", k("a[x] = " + "+".join(["x"] * 600) + ";"), {}),
    "300 nested blocks": ("launch", k("{" * 300 + "a[x] = x;" + "}" * 300), {}),
    "5,000-term sum": ("compile", k("a[x] = " + "+".join(["x"] * 5000) + ";"), {}),
    "5,000 nested parentheses": ("compile", k("a[x] = " + "(" * 5000 + "x" + ")" * 5000 + ";"),
                                 {}),
    "'\\777'": ("compile", k("a[0] = '\\777';"), {}),
    "'\\u1234'": ("launch", k("a[0] = '\\u1234';"), {}),
    'printf("\\x")': ("compile", k('printf("\\x");'), {}),
    'printf("%c", 0x110000)': ("launch", k('printf("%c", 0x110000);'), {}),
    'printf("%1000000000d", 1)': ("launch", k('printf("%1000000000d\\n", 1);'), {}),
    "printf in a loop, 65,536 threads": (
        "launch", k('for (int i = 0; i < 100; i++) printf("%d %d\\n", x, i);'),
        {"block": (1024, 1, 1), "grid": (64, 1)}),
    "64 Ki-float local array, 65,536 threads": (
        "launch", k("float big[65536]; big[x] = 1.0f; a[0] = (int)big[x];"),
        {"block": (32, 1, 1), "grid": (2048, 1)}),
    "1 MiB local array": ("compile", k("float big[1 << 18]; a[0] = 1;"), {}),
    "48 KiB __shared__, 65,536 one-thread blocks": (
        "launch", "__global__ void k(int* a) { __shared__ float s[12288]; s[0] = 1;\n"
        " __syncthreads(); a[0] = (int)s[0]; }", {"block": (1, 1, 1), "grid": (65536, 1)}),
    "endless loop, max_seconds=5": (
        "launch", k("float s = 0; for (int i = 0; i >= 0; i += 0) s += a[x % 4]; a[0] = s;"),
        {"block": (1024, 1, 1), "grid": (64, 1), "max_seconds": 5, "max_steps": 10**12}),
    "loop-free grid of 2^31-1 blocks, max_seconds=5": (
        "launch", "__global__ void k(int* a) { if (blockIdx.x == 0) a[0] = 1; }",
        {"block": (1024, 1, 1), "grid": (2**31 - 1, 1), "max_seconds": 5}),
    "check_sgemm: #include /etc/passwd": ("grade", '#include "/etc/passwd"\nGOOD', {}),
    "check_sgemm: 20 doubling #defines": ("grade", DOUBLING + "int y = A20;\nGOOD", {}),
    "check_sgemm: '\\777'": ("grade", "GOOD", {"_acc": "float acc = '\\777';"}),
    "check_sgemm: 5,000-term sum": ("grade", "GOOD", {
        "_acc": "float acc = " + "+".join(["0.0f"] * 5000) + ";"}),
    "check_sgemm: endless loop, time_limit=10": (
        "grade", "#define TILE 16\n" + SGEMM + " { __shared__ float s[TILE][TILE];\n"
        " while (1) { s[0][0] = 1; } }", {"time_limit": 10}),
    "check_sgemm: printf flood": ("grade", "PRINTF", {}),
}

CHILD = r"""
import json, resource, sys, time, warnings
from pathlib import Path
import numpy as np
import tilinglib.emulator as em
from tilinglib.grading import check_sgemm
warnings.simplefilter("ignore")
out = sys.argv[1]
what, source, kw = json.loads(Path(out).read_text())
good = Path("tests/submissions/good_if_else.cu").read_text()
good = good.replace("float acc = 0.0f;", kw.pop("_acc", "float acc = 0.0f;"))
source = source.replace("GOOD", good).replace("PRINTF", good.replace(
    "acc += tileA", 'printf("%d %d\\n", row, col); acc += tileA'))
for key in ("block", "grid"):
    if key in kw: kw[key] = tuple(kw[key])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    if what == "grade":
        r = check_sgemm(source, "sgemm", **kw)
        first = r.failures[0] if r.failures else ""
        result = f"GradeReport {r.score:g}/{r.max_score:g}: {first}"
    else:
        mod = em.SourceModule(source)
        if what == "launch":
            a = em.Out(np.zeros(1 << 16, np.int32))
            mod.get_function("k")(a, **{"block": (32, 1, 1), **kw})
        result = "runs"
except Exception as exc:
    result = f"{type(exc).__name__}: {exc}"
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
Path(out).write_text(json.dumps([result, seconds, (peak - base) / 1024]))
"""


def run(name):
    what, source, kw = CASES[name]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([what, source, kw], f)
        out = f.name
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", CHILD, out],
                          cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=600)
    try:
        with open(out) as f:
            result, seconds, peak = json.load(f)
        seconds, peak = float(seconds), float(peak)
    except (OSError, ValueError, TypeError):
        result, seconds, peak = f"child failed: {proc.stderr[-300:]}", float("nan"), float("nan")
    os.unlink(out)
    return result, seconds, peak


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="cases to run (default: all)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    names = args.names or list(CASES)
    if args.markdown:
        print("| hostile input | result | time | peak memory |\n|---|---|---|---|")
    for name in names:
        result, seconds, peak = run(name)
        first = result.splitlines()[0]
        short = first if len(first) <= 110 else first[:107] + "..."
        if args.markdown:
            print(f"| {name} | {short.replace('|', '/')} | {seconds:.2f} s | {peak:.0f} MB |")
        else:
            print(f"{name:48s} {seconds:7.2f} s {peak:7.0f} MB  {short}", flush=True)


if __name__ == "__main__":
    main()
