"""What the GPU computes: a broad probe of integer, conversion and float arithmetic.

Every expression reads kernel arguments (scalars passed at launch), so nvcc folds nothing;
each result is written as its exact bit pattern. The same kernel is compiled once per flag
set in `FLAG_SETS` (nvcc's options as PyCUDA passes them), and a second kernel sweeps the
approximate math functions over 128 inputs read from memory, for the ulp bounds.

Run on a GPU machine (PyCUDA importable):
    python bench/gpu_arith_probe.py --out bench/results/arith_h200.json
The test suite imports `EXPRESSIONS`, `INPUTS`, `probe_source` and `sweep_source` from here
(without PyCUDA) and runs the same sources on the emulator (tests/test_emulator_arithmetic.py).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

FLAG_SETS = {
    "default": [],
    "fmad_false": ["-fmad=false"],
    "fast_math": ["--use_fast_math"],
    "ftz": ["-ftz=true"],
    "prec_div_false": ["-prec-div=false"],
    "prec_sqrt_false": ["-prec-sqrt=false"],
}

# name -> (C type, value). Kernel arguments, in this order.
INPUTS = {
    "a1": ("int", 1), "am8": ("int", -8), "a7": ("int", 7), "a0": ("int", 0),
    "a3": ("int", 3), "a31": ("int", 31), "a32": ("int", 32), "a33": ("int", 33),
    "a64": ("int", 64), "am1": ("int", -1), "am3": ("int", -3), "amin": ("int", -2**31),
    "a24": ("int", 0x00FFFFFF), "ab": ("int", 0x01234567), "a9": ("int", 123456789),
    "u0": ("unsigned int", 0), "u1": ("unsigned int", 1), "u7": ("unsigned int", 7),
    "umax": ("unsigned int", 2**32 - 1), "u3": ("unsigned int", 3),
    "l0": ("long long", 0), "l1": ("long long", 1), "l7": ("long long", 7),
    "lm8": ("long long", -8), "lm1": ("long long", -1), "lmin": ("long long", -2**63),
    "q0": ("unsigned long long", 0), "q1": ("unsigned long long", 1),
    "q7": ("unsigned long long", 7),
    "f0": ("float", 0.0), "fm0": ("float", -0.0), "f1": ("float", 1.0), "f2": ("float", 2.0),
    "f3": ("float", 3.0), "f10": ("float", 10.0), "fm1": ("float", -1.0),
    "f0p5": ("float", 0.5), "f0p1": ("float", 0.1), "f0p7": ("float", 0.7),
    "fhalf": ("float", 0.49999997), "f2p5": ("float", 2.5), "fm2p5": ("float", -2.5),
    "f5p5": ("float", 5.5), "f3e9": ("float", 3e9), "fm3e9": ("float", -3e9),
    "f1e10": ("float", 1e10), "f1e20": ("float", 1e20), "fm1e20": ("float", -1e20),
    "f7e4": ("float", 70000.0), "f300": ("float", 300.0), "f1e38": ("float", 1e38),
    "f1e4": ("float", 1e4), "fden": ("float", 1e-40), "finf": ("float", np.inf),
    "fnan": ("float", np.nan), "fpi": ("float", 3.14159265),
    "fx": ("float", 1.0 + 2.0**-12), "fy": ("float", 1.0 - 2.0**-12),
    "fz": ("float", -1.0), "fw": ("float", 1.0 + 2.0**-11),
    "d3e9": ("double", 3e9), "dnan": ("double", np.nan), "d1e20": ("double", 1e20),
    "dx": ("double", 1.0 + 2.0**-30), "dy": ("double", 1.0 - 2.0**-30), "dz": ("double", -1.0),
}

# (result type, C expression or statements assigning RES). Result types: i32 u32 i64 u64 f32
# f64 (the value's bits: 32-bit types zero-extended into one unsigned word).
EXPRESSIONS = [
    # shifts by the width or more, and by negative counts
    ("i32", "a1 << a32"), ("i32", "am8 >> a32"), ("i32", "a1 << a33"), ("i32", "am8 >> a33"),
    ("i32", "a1 << a31"), ("i32", "am8 >> a31"), ("i32", "a1 << am3"), ("i32", "am8 >> am3"),
    ("u32", "u1 << a32"), ("u32", "umax >> a32"), ("u32", "umax >> am3"), ("u32", "u1 << a64"),
    ("i64", "l1 << a64"), ("i64", "lm8 >> a64"), ("i64", "l1 << a32"), ("i64", "l1 << am3"),
    ("i64", "lm8 >> am3"), ("u64", "q1 << a64"), ("u64", "q7 >> a64"),
    # division and remainder by zero, INT_MIN / -1
    ("i32", "a7 / a0"), ("i32", "a7 % a0"), ("i32", "am8 / a0"), ("i32", "am8 % a0"),
    ("u32", "u7 / u0"), ("u32", "u7 % u0"), ("i32", "amin / am1"), ("i32", "amin % am1"),
    ("i32", "am8 / a3"), ("i32", "am8 % a3"), ("i64", "l7 / l0"), ("i64", "l7 % l0"),
    ("i64", "lm8 / l0"), ("i64", "lm8 % l0"),
    ("i64", "lmin / lm1"), ("i64", "lmin % lm1"), ("u64", "q7 / q0"), ("u64", "q7 % q0"),
    # wrapping integer arithmetic
    ("i32", "abs(amin)"), ("i32", "-amin"), ("i32", "a9 * a9"), ("u32", "umax + u1"),
    ("i64", "llabs(lmin)"),
    # float -> integer conversions: out of range, NaN, infinity
    ("i32", "(int)f3e9"), ("i32", "(int)fm3e9"), ("i32", "(int)fnan"), ("i32", "(int)finf"),
    ("i32", "(int)(-finf)"), ("i32", "(int)fm2p5"), ("u32", "(unsigned)fm1"),
    ("u32", "(unsigned)f3e9"), ("u32", "(unsigned)f1e10"), ("u32", "(unsigned)fnan"),
    ("i64", "(long long)f1e20"), ("i64", "(long long)fm1e20"), ("i64", "(long long)fnan"),
    ("u64", "(unsigned long long)fm1"), ("u64", "(unsigned long long)f1e20"),
    ("i32", "(short)f7e4"), ("i32", "(short)(int)f7e4"), ("i32", "(char)f300"),
    ("i32", "(unsigned char)fm1"), ("i32", "(unsigned char)f300"),
    ("i32", "(int)d3e9"), ("i32", "(int)dnan"), ("i64", "(long long)d1e20"),
    ("f32", "(float)a9"), ("f32", "(float)umax"), ("f32", "(float)d1e20"),
    ("i32", "__float2int_rn(f2p5)"), ("i32", "__float2int_rn(fnan)"),
    ("i32", "__float2int_rz(f3e9)"), ("i32", "__float2int_rd(fm2p5)"),
    ("i32", "__float2int_ru(f1e10)"),
    # rounding functions
    ("f32", "roundf(fhalf)"), ("f32", "roundf(f2p5)"), ("f32", "roundf(fm2p5)"),
    ("f32", "rintf(f2p5)"), ("f32", "truncf(fm2p5)"), ("f32", "floorf(fm2p5)"),
    ("f32", "ceilf(fm2p5)"), ("f32", "nearbyintf(f5p5)"),
    # 24-bit multiplies, saturate
    ("i32", "__mul24(a24, a3)"), ("i32", "__mul24(ab, ab)"), ("u32", "__umul24(umax, u3)"),
    ("u32", "__umul24((unsigned)ab, (unsigned)ab)"),
    ("f32", "__saturatef(fnan)"), ("f32", "__saturatef(f2)"), ("f32", "__saturatef(fm1)"),
    # IEEE operations and math functions
    ("f32", "f1 / f3"), ("f32", "f2 / f3"), ("f32", "f10 / f3"), ("f32", "sqrtf(f2)"),
    ("f32", "sqrtf(f3)"), ("f32", "rsqrtf(f2)"), ("f32", "expf(f1)"), ("f32", "expf(f10)"),
    ("f32", "logf(f10)"), ("f32", "log2f(f10)"), ("f32", "sinf(f1)"), ("f32", "cosf(f1)"),
    ("f32", "sinf(f1e4)"), ("f32", "tanf(f1)"), ("f32", "powf(f10, f0p1)"),
    ("f32", "powf(f2, f0p5)"), ("f32", "exp2f(fpi)"), ("f32", "tanhf(f0p7)"),
    ("f32", "fmodf(f5p5, f2)"), ("f32", "fmodf(f1e10, f3)"), ("f32", "remainderf(f5p5, f2)"),
    ("f32", "remainderf(f10, f3)"), ("f32", "f1e20 * f1e20"), ("f32", "f0 / f0"),
    ("f32", "sqrtf(fm1)"), ("f32", "fnan + f1"),
    # fast intrinsics and the _rn forms
    ("f32", "__fdividef(f1, f3)"), ("f32", "__fdividef(f1, f1e38)"), ("f32", "__expf(f1)"),
    ("f32", "__expf(f10)"), ("f32", "__logf(f10)"), ("f32", "__sinf(f1)"),
    ("f32", "__cosf(f1)"), ("f32", "__sinf(f1e4)"), ("f32", "__powf(f10, f0p1)"),
    ("f32", "__fmul_rn(fx, fy) + fz"), ("f32", "__fadd_rn(__fmul_rn(fx, fy), fz)"),
    ("f32", "__fdiv_rn(f1, f3)"), ("f32", "__fsqrt_rn(f2)"), ("f32", "__frcp_rn(f3)"),
    # NaN in min/max, signs
    ("f32", "fminf(fnan, f1)"), ("f32", "fmaxf(f1, fnan)"), ("f32", "fminf(fnan, fnan)"),
    ("f32", "fminf(f0, fm0)"), ("f32", "fmaxf(fm0, f0)"), ("f32", "copysignf(f1, fm0)"),
    ("f32", "copysignf(f2, fnan)"), ("i32", "signbit(fm0) != 0"), ("i32", "signbit(f1) != 0"),
    ("f32", "fabsf(fm0)"), ("f32", "-f0"),
    # denormals (flushed under -ftz=true / --use_fast_math)
    ("f32", "fden * f1"), ("f32", "fden + f0"), ("f32", "fden / f3"), ("f32", "sqrtf(fden)"),
    ("i32", "(fden * f10) > f0"), ("f32", "fminf(fden, f1)"),
    # FMA contraction (nvcc's -fmad=true)
    ("f32", "fmaf(fx, fy, fz)"), ("f32", "fx * fy + fz"), ("f32", "fz + fx * fy"),
    ("f32", "fx * fy - fz"), ("f32", "fz - fx * fy"), ("f32", "-(fx * fy) + fz"),
    ("f32", "fx * fy + fw * fz"), ("f32", "fw * fz + fx * fy"),
    ("f32", "RES = fx * fy; RES = RES + fz;"),
    ("f32", "float p = fx * fy; RES = p + fz;"),
    ("f32", "RES = fz; RES += fx * fy;"),
    ("f32", "float p = fx * fy; RES = p + fz + p;"),
    ("f32", "(float)(fx * fy) + fz"),
    ("f32", "fx * f1 + fz"),
    ("f64", "dx * dy + dz"), ("f64", "fma(dx, dy, dz)"),
    ("f64", "(double)fx * (double)fy + (double)fz"),
]

_C_STORE = {
    "i32": "o32[{k}] = (unsigned int)({v});", "u32": "o32[{k}] = (unsigned int)({v});",
    "f32": "o32[{k}] = __float_as_uint({v});",
    "i64": "o64[{k}] = (unsigned long long)({v});", "u64": "o64[{k}] = (unsigned long long)({v});",
    "f64": "o64[{k}] = (unsigned long long)__double_as_longlong({v});",
}
_C_RES = {"i32": "int", "u32": "unsigned int", "f32": "float", "i64": "long long",
          "u64": "unsigned long long", "f64": "double"}


def slots():
    """(kind, index) of each expression: kind 32 for o32, 64 for o64."""
    out, n32, n64 = [], 0, 0
    for rtype, _ in EXPRESSIONS:
        if rtype in ("i64", "u64", "f64"):
            out.append((64, n64))
            n64 += 1
        else:
            out.append((32, n32))
            n32 += 1
    return out, n32, n64


def probe_source(lanes: bool = False) -> str:
    """The CUDA C of the probe kernel `probe(o32, o64, <INPUTS...>)` (what ran on the GPU).
    `lanes=True`: each input is an array instead, read at threadIdx.x (the emulator's
    per-thread path; every thread computes the same values and stores them alike)."""
    if lanes:
        params = ", ".join(f"const {t}* p_{name}" for name, (t, _) in INPUTS.items())
    else:
        params = ", ".join(f"{t} {name}" for name, (t, _) in INPUTS.items())
    lines = [f"__global__ void probe(unsigned int* o32, unsigned long long* o64, {params})", "{"]
    if lanes:
        lines += [f"    {t} {name} = p_{name}[threadIdx.x];" for name, (t, _) in INPUTS.items()]
    for (rtype, text), (_, k) in zip(EXPRESSIONS, slots()[0]):
        store = _C_STORE[rtype]
        if "RES" in text:
            lines.append(f"    {{ {_C_RES[rtype]} RES; {text} {store.format(k=k, v='RES')} }}")
        else:
            lines.append(f"    {{ {store.format(k=k, v=text)} }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def input_args():
    """The kernel's scalar arguments as NumPy scalars, in `INPUTS` order."""
    types = {"int": np.int32, "unsigned int": np.uint32, "long long": np.int64,
             "unsigned long long": np.uint64, "float": np.float32, "double": np.float64}
    return [types[t](v) for t, v in INPUTS.values()]


# Approximate functions, swept: name -> C expression of x (in [-20, 20]) and p (positive,
# log-uniform in [1e-3, 1e4]).
SWEEP = {
    "sinf": "sinf(x)", "cosf": "cosf(x)", "tanf": "tanf(x)", "expf": "expf(x)",
    "exp2f": "exp2f(x)", "tanhf": "tanhf(x)", "logf": "logf(p)", "log2f": "log2f(p)",
    "sqrtf": "sqrtf(p)", "rsqrtf": "rsqrtf(p)", "powf": "powf(p, 1.7f)", "div": "x / p",
    "__sinf": "__sinf(x)", "__cosf": "__cosf(x)", "__expf": "__expf(x)",
    "__logf": "__logf(p)", "__powf": "__powf(p, 1.7f)", "__fdividef": "__fdividef(x, p)",
}
SWEEP_N = 128


def sweep_inputs():
    """The sweep's inputs x (uniform in [-20, 20]) and p (log-uniform in [1e-3, 1e4]),
    float32 arrays of `SWEEP_N`, from a fixed seed."""
    rng = np.random.default_rng(20261201)
    x = rng.uniform(-20, 20, SWEEP_N).astype(np.float32)
    p = (10.0 ** rng.uniform(-3, 4, SWEEP_N)).astype(np.float32)
    return x, p


def sweep_source() -> str:
    """The CUDA C of `sweep(out, xs, ps, n)`: out[f * n + i] is function f at input i."""
    lines = ["__global__ void sweep(float* out, const float* xs, const float* ps, int n)", "{",
             "    int i = blockIdx.x * blockDim.x + threadIdx.x;", "    if (i >= n) return;",
             "    float x = xs[i]; float p = ps[i];"]
    for f, text in enumerate(SWEEP.values()):
        lines.append(f"    out[{f} * n + i] = {text};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _hex_words(a, bits):
    return [f"{int(v):0{bits // 4}x}" for v in a]


def main():
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule, compile as nvcc_compile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="arith_h200.json")
    parser.add_argument("--ptx-dir", default=None, help="also write each flag set's PTX here")
    args = parser.parse_args()

    where, n32, n64 = slots()
    src, ssrc = probe_source(), sweep_source()
    x, p = sweep_inputs()
    import datetime
    result = {"read_on": f"{drv.Device(0).name()}, {datetime.date.today()}",
              "flag_sets": FLAG_SETS, "script": "bench/gpu_arith_probe.py",
              "device": drv.Device(0).name(), "driver": drv.get_driver_version(),
              "expressions": [[r, e] for r, e in EXPRESSIONS], "results": {}, "sweep": {}}
    for label, opts in FLAG_SETS.items():
        try:
            mod = SourceModule(src + ssrc, options=opts)
        except Exception as exc:    # keep the other flag sets' results
            result["results"][label] = f"compile error: {exc}"
            print(label, "compile error:", exc)
            continue
        o32 = np.zeros(max(n32, 1), np.uint32)
        o64 = np.zeros(max(n64, 1), np.uint64)
        mod.get_function("probe")(drv.Out(o32), drv.Out(o64), *input_args(),
                                  block=(1, 1, 1), grid=(1, 1))
        result["results"][label] = [
            f"{int(o32[k]):08x}" if kind == 32 else f"{int(o64[k]):016x}" for kind, k in where]
        out = np.zeros(len(SWEEP) * SWEEP_N, np.float32)
        mod.get_function("sweep")(drv.Out(out), drv.In(x), drv.In(p), np.int32(SWEEP_N),
                                  block=(128, 1, 1), grid=((SWEEP_N + 127) // 128, 1))
        result["sweep"][label] = {name: _hex_words(out[f * SWEEP_N:(f + 1) * SWEEP_N]
                                                   .view(np.uint32), 32)
                                  for f, name in enumerate(SWEEP)}
        if args.ptx_dir:
            ptx = nvcc_compile(src + ssrc, options=opts, target="ptx")
            with open(f"{args.ptx_dir}/{label}.ptx", "wb") as fh:
                fh.write(ptx)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=0)
    print(f"wrote {args.out}: {len(EXPRESSIONS)} expressions x {len(FLAG_SETS)} flag sets, "
          f"{len(SWEEP)} swept functions")
    for (rtype, text), v in zip(EXPRESSIONS, result["results"]["default"]):
        print(f"{text:45s} {rtype} {v}")


if __name__ == "__main__":
    main()
