"""A .cu file as written, on a GPU and on the emulator: headers, host code, barriers.

For issue 24 (items 3 and 5). Three parts, each run through PyCUDA (nvcc) and through
tilinglib's emulator, side by side:

1. headers: a small kernel after ``#include <H>`` for every header name of
   tilinglib/toolchain/frontend/headers.py, in PyCUDA's C++ mode (``no_extern_c=True``) and inside
   its default ``extern "C" { }`` wrapping: does nvcc compile it and does the kernel run;
   the emulator's verdict (it refuses a header marked C++ inside the wrapping) beside it.
   Also what device code gets: ``std::sqrt(float)``, ``std::min``, ``cudaMalloc``... in a
   kernel (which compile, and nvcc's first error line for those that do not);
2. a whole file with host code and ``main`` (includes, a CHECK macro, std::vector,
   std::cout, cudaMalloc, launches of a kernel and of a template kernel that only the
   launch instantiates): its kernels launched, outputs compared;
3. barriers in conditional code: an early return before ``__syncthreads()`` at a size that
   is not a multiple of the block, the same body under ``if (i < n)``, ``__syncthreads()``
   in both branches of a divergent if (a producer/consumer double buffer), and a condition
   the same in the whole block: the H200's output against the emulator's (which completes
   them as sm_70+ does, with a DivergentBarrierWarning).

Run from the repository root on the GPU machine (PyCUDA, nvcc, tilinglib importable;
the emulator needs clang from the ziglang wheel, or TILINGLIB_CLANG):

    TILINGLIB_BACKEND=pycuda python3 bench/gpu_cu_files.py --out $OUT/gpu_cu_files.json

``--emulator-only`` runs the emulator's side alone (any machine): what the tests check;
``--gpu-json RUN.json`` sets the current emulator beside an earlier GPU run's answers.
Compiles go 16 at a time (``--jobs``); ``-k TEXT`` keeps the headers whose name has TEXT.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# A kernel after each header: extern "C" so that its name is `k` in both modes.
HEADER_KERNEL = 'extern "C" __global__ void k(int *out) { out[threadIdx.x] = 7 * threadIdx.x + 1; }\n'

# Device code using a name a header brings: (name, headers, kernel body). On nvcc the
# std:: math of <cmath> is __device__ for float; std::min is constexpr host (an error
# without --expt-relaxed-constexpr); cudaMalloc and std::cout are host code.
DEVICE_USES = [
    ("std::sqrt(float)", ["cmath"], "out[0] = std::sqrt(2.25f) + std::fabs(-1.0f);"),
    ("sqrtf, fmaxf", ["math.h"], "out[0] = sqrtf(2.25f) + fmaxf(1.0f, 0.5f);"),
    ("printf", ["cstdio"], 'if (threadIdx.x == 99) printf("%d\\n", 1); out[0] = 2.5f;'),
    ("memcpy", ["cstring"], "float v = 2.5f; memcpy(out, &v, 4);"),
    ("INT_MAX, FLT_MAX", ["climits", "cfloat"], "out[0] = (INT_MAX > 0) + (FLT_MAX > 0) + 0.5f;"),
    ("std::min (constexpr host)", ["algorithm"], "out[0] = std::min(2.5f, 3.0f);"),
    ("std::max (constexpr host)", ["algorithm"], "out[0] = std::max(1, 2) + 0.5f;"),
    ("std::numeric_limits", ["limits"], "out[0] = std::numeric_limits<float>::max() > 0 ? 2.5f : 0;"),
    # <cmath>'s overloads by argument type: CUDA declares pow(float, int) and
    # pow(double, int); an integer (or mixed float/double) argument picks libstdc++'s
    # templates, constexpr host functions (the emulator refuses them in device code)
    ("pow(float, int)", ["cmath"], "int n = 2; out[0] = pow(1.5f, n);"),
    ("pow(double, int)", ["cmath"], "int n = 2; out[0] = pow(1.5, n);"),
    ("pow(int, int)", ["cmath"], "int n = 2; out[0] = pow(n, n);"),
    ("sqrt(int)", ["cmath"], "int n = 4; out[0] = sqrt(n);"),
    ("fabs(int)", ["cmath"], "int n = -4; out[0] = fabs(n);"),
    ("fmin(float, double)", ["cmath"], "float x = 1.5f; out[0] = fmin(x, 2.0);"),
    ("cudaMalloc in a kernel", ["cuda_runtime.h"], "float *p; cudaMalloc(&p, 4); out[0] = 2.5f;"),
    ("std::cout in a kernel", ["iostream"], "std::cout << 1; out[0] = 2.5f;"),
    ("rand() in a kernel", ["cstdlib"], "out[0] = rand();"),
    ("a host variable", ["cstdio"], "out[0] = host_value;"),
    ("a host function", ["cstdio"], "out[0] = host_twice(1.25f);"),
]
USE_PREFIX = "int host_value = 3;\nfloat host_twice(float x) { return 2 * x; }\n"


def use_source(headers, body):
    return ("".join(f"#include <{h}>\n" for h in headers) + USE_PREFIX
            + 'extern "C" __global__ void k(float *out) {\n    ' + body + "\n}\n")


# A whole file as a repository has it (our own, in the style of the samples).
WHOLE_FILE = r"""
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <iostream>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
    exit(EXIT_FAILURE); } } while (0)

const int BLOCK = 256;

__global__ void add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

template <typename T> __global__ void scale(T *x, T s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

void fill(std::vector<float> &v) { for (auto &x : v) x = rand() / (float)RAND_MAX; }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
    std::vector<float> a(n), b(n), c(n);
    fill(a); fill(b);
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, n * sizeof(float)));
    CHECK(cudaMalloc(&db, n * sizeof(float)));
    CHECK(cudaMalloc(&dc, n * sizeof(float)));
    CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    dim3 block(BLOCK), grid((n + BLOCK - 1) / BLOCK);
    add<<<grid, block>>>(da, db, dc, n);
    scale<float><<<grid, block>>>(dc, 2.0f, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
    std::cout << "max " << *std::max_element(c.begin(), c.end()) << std::endl;
    cudaFree(da); cudaFree(db); cudaFree(dc);
    return 0;
}
"""

STENCIL = r"""
extern "C" __global__ void stencil(const float *in, float *out, int n) {
    __shared__ float s[256 + 2];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x + 1] = in[i];
    if (threadIdx.x == 0) s[0] = i > 0 ? in[i - 1] : 0.0f;
    if (threadIdx.x == blockDim.x - 1 || i == n - 1) s[threadIdx.x + 2] = i + 1 < n ? in[i + 1] : 0.0f;
    __syncthreads();
    out[i] = s[threadIdx.x] + s[threadIdx.x + 1] + s[threadIdx.x + 2];
}
"""
GUARDED = STENCIL.replace("if (i >= n) return;", "if (i < n) {").replace(
    "s[threadIdx.x + 2];\n}", "s[threadIdx.x + 2];\n    }\n}")
PIPE = r"""
extern "C" __global__ void pipe(const float *in, float *out, int steps) {
    __shared__ float s[2][32];
    int t = threadIdx.x;
    float acc = 0.0f;
    if (t < 32) s[0][t] = in[blockIdx.x * steps * 32 + t];
    __syncthreads();
    for (int k = 1; k <= steps; ++k) {
        if (t < 32) {
            if (k < steps) s[k % 2][t] = in[blockIdx.x * steps * 32 + k * 32 + t];
            __syncthreads();
        } else {
            acc += s[(k - 1) % 2][t - 32];
            __syncthreads();
        }
    }
    if (t >= 32) out[blockIdx.x * 32 + t - 32] = acc;
}
"""
UNIFORM = r"""
extern "C" __global__ void uniform(float *out) {
    __shared__ float s[64];
    if (blockIdx.x % 2) { s[threadIdx.x] = 1.0f; __syncthreads(); out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x]; }
    else { s[threadIdx.x] = 2.0f; __syncthreads(); out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x] + threadIdx.x; }
}
"""


def barrier_cases():
    """(name, source, kernel, args builder, block, grid, the NumPy answer): each args
    builder returns fresh arrays (kind, array) and scalars."""
    rng = np.random.default_rng(24)
    x = rng.standard_normal(1000).astype(np.float32)
    stencil_want = x + np.r_[0, x[:-1]] + np.r_[x[1:], 0]
    p = rng.standard_normal(2 * 5 * 32).astype(np.float32)
    pipe_want = p.reshape(2, 5, 32).astype(np.float64).sum(1).reshape(-1)
    u_want = np.concatenate([np.where(b % 2, 1.0, 2.0 + np.arange(64)) for b in range(4)])
    return [
        ("early return, then __syncthreads(); n = 1000, block 256", STENCIL, "stencil",
         lambda: [("in", x.copy()), ("out", np.zeros(1000, np.float32)), np.int32(1000)],
         (256, 1, 1), (4, 1), stencil_want),
        ("if (i < n) { ... __syncthreads(); ... }; n = 1000, block 256", GUARDED, "stencil",
         lambda: [("in", x.copy()), ("out", np.zeros(1000, np.float32)), np.int32(1000)],
         (256, 1, 1), (4, 1), stencil_want),
        ("__syncthreads() in both branches of if (t < 32), block 64, 5 steps", PIPE, "pipe",
         lambda: [("in", p.copy()), ("out", np.zeros(64, np.float32)), np.int32(5)],
         (64, 1, 1), (2, 1), pipe_want),
        ("both branches, condition the same in each block", UNIFORM, "uniform",
         lambda: [("out", np.zeros(256, np.float32))], (64, 1, 1), (4, 1), u_want),
    ]


# ------------------------------------------------------------------------------ emulator
def _first_line(exc) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def emulator_compile(source, no_extern_c):
    """'ok' or the emulator's refusal (first line)."""
    from tilinglib import emulator
    try:
        emulator.SourceModule(source, no_extern_c=no_extern_c)
        return "ok"
    except Exception as exc:                      # noqa: BLE001 (recorded)
        return f"refused: {_first_line(exc)}"


def emulator_run(source, kernel, args, block, grid, no_extern_c=False, hazards="warn"):
    """(outputs, hazard kinds, warning categories) of one emulated launch, or raises."""
    from tilinglib import emulator
    wrap = {"in": emulator.In, "out": emulator.Out, "inout": emulator.InOut}
    call = [wrap[a[0]](a[1]) if isinstance(a, tuple) else a for a in args]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = emulator.SourceModule(source, no_extern_c=no_extern_c).get_function(kernel)
        f(*call, block=block, grid=grid, hazards=hazards)
    outs = [a[1] for a in args if isinstance(a, tuple) and a[0] != "in"]
    return outs, sorted({h.kind for h in f.last_report.hazards}), \
        sorted({type(w.message).__name__ for w in caught})


def emulator_side(names=None) -> dict:
    """Everything the emulator says, as the GPU side records it (see `gpu_side`)."""
    from tilinglib.toolchain.frontend.headers import HEADERS
    out = {"headers": {}, "uses": {}, "whole_file": {}, "barriers": {}}
    for name in sorted(names if names is not None else HEADERS):
        src = f"#include <{name}>\n" + HEADER_KERNEL
        out["headers"][name] = {mode: emulator_compile(src, mode == "cxx")
                                for mode in ("cxx", "extern_c")}
    for label, headers, body in DEVICE_USES:
        out["uses"][label] = emulator_compile(use_source(headers, body), True)
    n = 1000
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    try:
        (c,), _, _ = emulator_run(WHOLE_FILE, "add", [("in", a), ("in", b),
                                                      ("out", np.zeros(n, np.float32)),
                                                      np.int32(n)], (256, 1, 1), (4, 1), True)
        (c2,), _, _ = emulator_run(WHOLE_FILE, "scale<float>", [("inout", c.copy()),
                                                                np.float32(2), np.int32(n)],
                                   (256, 1, 1), (4, 1), True)
        out["whole_file"] = {"result": "ok" if np.array_equal(c2, 2 * (a + b)) else "wrong",
                             "default mode": emulator_compile(WHOLE_FILE, False)}
    except Exception as exc:                      # noqa: BLE001
        out["whole_file"] = {"result": f"refused: {_first_line(exc)}"}
    for label, src, kernel, build, block, grid, want in barrier_cases():
        row = {}
        try:
            (got,), kinds, cats = emulator_run(src, kernel, build(), block, grid)
            row.update(matches_numpy=bool(np.allclose(got, want, rtol=1e-5, atol=1e-5)),
                       hazards=kinds, warnings=cats, output=got.tolist())
        except Exception as exc:                  # noqa: BLE001
            row["error"] = _first_line(exc)
        try:
            emulator_run(src, kernel, build(), block, grid, hazards="raise")
            row["hazards_raise"] = "completes"
        except Exception as exc:                  # noqa: BLE001
            row["hazards_raise"] = f"{type(exc).__name__}"
        out["barriers"][label] = row
    return out


# ------------------------------------------------------------------------------ the GPU
def _nvcc(source, no_extern_c, arch, target="cubin"):
    from pycuda.compiler import compile as nvcc_compile
    try:
        return nvcc_compile(source, no_extern_c=no_extern_c, arch=arch, target=target), None
    except Exception as exc:                      # noqa: BLE001
        lines = [ln.strip() for ln in str(exc).splitlines() if "error" in ln.lower()]
        return None, (lines[0] if lines else _first_line(exc))[:300]


def _entry(ptx: bytes, kernel: str) -> str:
    """The .entry of `kernel` (a template's instantiation by its base name) in PTX."""
    names = re.findall(r"\.entry\s+([\w$]+)\s*\(", ptx.decode())
    base = kernel.split("<")[0]
    for n in names:
        if n == base or n.startswith(f"_Z{len(base)}{base}"):
            return n
    raise LookupError(f"no .entry for {kernel} among {names}")


def gpu_run(source, kernel, args, block, grid, no_extern_c=False, arch=None):
    import pycuda.driver as cuda
    from pycuda.compiler import SourceModule
    mod = SourceModule(source, no_extern_c=no_extern_c, arch=arch)
    name = kernel
    if no_extern_c:
        ptx, _ = _nvcc(source, True, arch, "ptx")
        name = _entry(ptx, kernel)
    f = mod.get_function(name)
    wrap = {"in": cuda.In, "out": cuda.Out, "inout": cuda.InOut}
    f(*[wrap[a[0]](a[1]) if isinstance(a, tuple) else a for a in args], block=block, grid=grid)
    cuda.Context.synchronize()
    return [a[1] for a in args if isinstance(a, tuple) and a[0] != "in"]


def gpu_side(names, jobs) -> dict:
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as cuda
    from pycuda.compiler import SourceModule
    dev = cuda.Context.get_device()
    arch = "sm_%d%d" % dev.compute_capability()
    out = {"device": dev.name(), "arch": arch, "headers": {}, "uses": {}, "whole_file": {},
           "barriers": {}}
    jobs_list = [(name, mode) for name in names for mode in ("cxx", "extern_c")]
    t0 = time.time()
    with ThreadPoolExecutor(jobs) as pool:        # nvcc in parallel, into PyCUDA's cache
        built = list(pool.map(lambda j: _nvcc(f"#include <{j[0]}>\n" + HEADER_KERNEL,
                                              j[1] == "cxx", arch), jobs_list))
    print(f"compiled {len(jobs_list)} header sources in {time.time() - t0:.0f} s", flush=True)
    for (name, mode), (cubin, err) in zip(jobs_list, built):
        row = out["headers"].setdefault(name, {})
        if cubin is None:
            row[mode] = f"refused: {err}"
            continue
        try:
            mod = SourceModule(f"#include <{name}>\n" + HEADER_KERNEL, no_extern_c=mode == "cxx",
                               arch=arch)
            o = np.zeros(32, np.int32)
            mod.get_function("k")(cuda.Out(o), block=(32, 1, 1), grid=(1, 1))
            row[mode] = "ok" if o.tolist() == [7 * t + 1 for t in range(32)] else "wrong"
        except Exception as exc:                  # noqa: BLE001
            row[mode] = f"error: {_first_line(exc)[:200]}"
    for label, headers, body in DEVICE_USES:
        cubin, err = _nvcc(use_source(headers, body), True, arch)
        out["uses"][label] = "ok" if cubin is not None else f"refused: {err}"
    n = 1000
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    try:
        (c,) = gpu_run(WHOLE_FILE, "add", [("in", a), ("in", b), ("out", np.zeros(n, np.float32)),
                                           np.int32(n)], (256, 1, 1), (4, 1), True, arch)
        (c2,) = gpu_run(WHOLE_FILE, "scale<float>", [("inout", c.copy()), np.float32(2),
                                                     np.int32(n)], (256, 1, 1), (4, 1), True, arch)
        _, err = _nvcc(WHOLE_FILE, False, arch)
        out["whole_file"] = {"result": "ok" if np.array_equal(c2, 2 * (a + b)) else "wrong",
                             "default mode": "ok" if err is None else f"refused: {err}"}
    except Exception as exc:                      # noqa: BLE001
        out["whole_file"] = {"result": f"error: {_first_line(exc)[:200]}"}
    for label, src, kernel, build, block, grid, want in barrier_cases():
        try:
            (got,) = gpu_run(src, kernel, build(), block, grid, False, arch)
            out["barriers"][label] = {"matches_numpy": bool(np.allclose(got, want, rtol=1e-5,
                                                                        atol=1e-5)),
                                      "output": got.tolist()}
        except Exception as exc:                  # noqa: BLE001
            out["barriers"][label] = {"error": _first_line(exc)[:200]}
    return out


# ------------------------------------------------------------------------------ tables
def _verdict(text):
    return "ok" if text == "ok" else ("refused" if text.startswith("refused") else text[:20])


def print_tables(emu: dict, gpu: dict | None) -> list:
    """Print the side-by-side tables; returns the disagreements (for the summary)."""
    from tilinglib.toolchain.frontend.headers import HEADERS, MACHINE_DEPENDENT
    bad = []
    print("\n## headers: a kernel after #include <H>  (cxx: no_extern_c=True; extern_c: "
          "PyCUDA's default wrapping)")
    print(f"{'header':36s} {'library':34s} {'emu cxx':8s} {'nvcc cxx':9s} {'emu extC':9s} "
          f"{'nvcc extC':9s} agree")
    for name in sorted(set(emu["headers"]) | set((gpu or {}).get("headers", {}))):
        e = emu["headers"].get(name, {"cxx": "-", "extern_c": "-"})
        g = (gpu or {}).get("headers", {}).get(name, {})
        cells = [_verdict(e["cxx"]), _verdict(g.get("cxx", "-")), _verdict(e["extern_c"]),
                 _verdict(g.get("extern_c", "-"))]
        agree = "-" if not g or "-" in (cells[0], cells[2]) else (
            "yes" if cells[0] == cells[1] and cells[2] == cells[3] else "NO")
        if agree == "NO" and name in MACHINE_DEPENDENT:
            agree = "machine"             # nvcc lacked a file other machines have
        if agree == "NO":
            bad.append(("header", name, e, g))
        library = HEADERS[name].library if name in HEADERS else "refused by nvcc"
        print(f"{name:36s} {library[:34]:34s} {cells[0]:8s} {cells[1]:9s} "
              f"{cells[2]:9s} {cells[3]:9s} {agree}")
    print("\n## device code using a header's names (C++ mode)")
    for label in list(dict.fromkeys(list(emu["uses"]) + list((gpu or {}).get("uses", {})))):
        e = emu["uses"].get(label, "-")
        g = (gpu or {}).get("uses", {}).get(label, "-")
        agree = "-" if "-" in (e, g) else ("yes" if _verdict(e) == _verdict(g) else "NO")
        if agree == "NO":
            bad.append(("use", label, e, g))
        print(f"{label:28s} emulator: {e[:110]}")
        print(f"{'':28s} nvcc:     {g[:110]}   agree: {agree}")
    print("\n## a whole file with host code and main")
    print(f"emulator: {emu['whole_file']}")
    if gpu:
        print(f"H200:     {gpu['whole_file']}")
    print("\n## barriers in conditional code")
    for label in list(dict.fromkeys(list(emu["barriers"]) + list((gpu or {}).get("barriers",
                                                                                 {})))):
        e = emu["barriers"].get(label, {})
        g = (gpu or {}).get("barriers", {}).get(label, {})
        same = "-"
        if g and "output" in g and "output" in e:
            same = "yes" if np.allclose(e["output"], g["output"], rtol=1e-5, atol=1e-5) else "NO"
            if same == "NO":
                bad.append(("barrier", label, e, g))
        print(f"{label}")
        print(f"    emulator: matches NumPy {e.get('matches_numpy', e.get('error'))}, hazards "
              f"{e.get('hazards')}, warnings {e.get('warnings')}, hazards='raise': "
              f"{e.get('hazards_raise')}")
        if g:
            print(f"    H200:     matches NumPy {g.get('matches_numpy', g.get('error'))}; "
                  f"emulator output = H200 output: {same}")
    print(f"\n{len(bad)} disagreement(s)" + (": " + "; ".join(f"{k} {n}" for k, n, _, _ in bad)
                                            if bad else ""))
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--emulator-only", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    ap.add_argument("-k", dest="only", default=None, help="only the headers containing this")
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--gpu-json", type=Path, default=None,
                    help="take the GPU side from this earlier run's JSON (any machine): the "
                         "current emulator against what nvcc did then")
    opts = ap.parse_args(argv)
    from tilinglib.toolchain.frontend.headers import HEADERS, NVCC_REFUSED
    names = sorted(n for n in {**HEADERS, **NVCC_REFUSED} if not opts.only or opts.only in n)
    try:
        emu = emulator_side(names)
    except Exception as exc:                      # noqa: BLE001 (no clang here, say)
        print(f"the emulator side could not run: {type(exc).__name__}: {exc}")
        emu = {"headers": {}, "uses": {}, "whole_file": {}, "barriers": {}}
    if opts.gpu_json is not None:
        gpu = json.loads(opts.gpu_json.read_text())["gpu"]
    else:
        gpu = None if opts.emulator_only else gpu_side(names, opts.jobs)
    bad = print_tables(emu, gpu)
    dest = opts.out or (Path(os.environ["OUT"]) / "gpu_cu_files.json" if os.environ.get("OUT")
                        else None)
    if dest is not None:
        dest.write_text(json.dumps({"emulator": emu, "gpu": gpu,
                                    "disagreements": [[k, n] for k, n, _, _ in bad]},
                                   indent=1, default=str))
        print("wrote", dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
