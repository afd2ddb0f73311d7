"""Check on the H200 that nvcc mangles templated kernels as clang does (the tilinglib front
end looks kernels up by clang's mangledName under PyCUDA's no_extern_c=True).

Standalone: pycuda + numpy only. The mangled names below were printed by
tilinglib.toolchain.frontend.mangled_names (zig clang 0.17.1, 2026-12-01) for SRC. Run:
    python3 mangle_check.py
Prints OK/FAIL per kernel, and runs each once against NumPy.
"""
import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv
from pycuda.compiler import SourceModule

SRC = '\ntemplate <int BM, int BN, int BK, int TM, int TN>\n__global__ void sgemm2D(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < M * N) C[i] = alpha * A[i] * (BM + BN + BK + TM + TN) + beta * C[i];\n}\ntemplate __global__ void sgemm2D<128, 128, 8, 8, 8>(int, int, int, float, const float*, const float*, float, float*);\ntemplate <typename T> __global__ void axpy(T a, const T* x, T* y, unsigned n) {\n  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i] + y[i];\n}\ntemplate __global__ void axpy<float>(float, const float*, float*, unsigned);\ntemplate __global__ void axpy<double>(double, const double*, double*, unsigned);\nnamespace tl { template <unsigned TILE, bool PAD> __global__ void copy(const float* __restrict__ in, float* out) {\n  out[blockIdx.x * TILE + threadIdx.x] = in[blockIdx.x * TILE + threadIdx.x] + (PAD ? 1.0f : 0.0f);\n} }\ntemplate __global__ void tl::copy<32u, true>(const float* __restrict__, float*);\n__global__ void plain(float* x) { x[threadIdx.x] *= 2.0f; }\n'

MANGLED = {'sgemm2D<128, 128, 8, 8, 8>': '_Z7sgemm2DILi128ELi128ELi8ELi8ELi8EEviiifPKfS1_fPf', 'axpy<float>': '_Z4axpyIfEvT_PKS0_PS0_j', 'axpy<double>': '_Z4axpyIdEvT_PKS0_PS0_j', 'tl::copy<32, true>': '_ZN2tl4copyILj32ELb1EEEvPKfPf', 'plain': '_Z5plainPf'}


def main():
    mod = SourceModule(SRC, no_extern_c=True)
    fails = 0
    for name, mangled in MANGLED.items():
        try:
            f = mod.get_function(mangled)
        except Exception as exc:  # noqa: BLE001
            print(f"FAIL {name}: get_function({mangled!r}): {exc}")
            fails += 1
            continue
        ok = True
        n = 64
        if name.startswith("sgemm2D"):
            a = np.arange(n, dtype=np.float32); b = a.copy(); c = np.ones(n, np.float32)
            want = 2.0 * a * (128 + 128 + 8 + 8 + 8) + 0.5 * c
            f(np.int32(8), np.int32(8), np.int32(8), np.float32(2), drv.In(a), drv.In(b),
              np.float32(0.5), drv.InOut(c), block=(64, 1, 1), grid=(1, 1))
            ok = np.allclose(c, want)
        elif name.startswith("axpy"):
            dt = np.float32 if "float" in name else np.float64
            x = np.arange(n, dtype=dt); y = np.ones(n, dt)
            f(dt(3), drv.In(x), drv.InOut(y), np.uint32(n), block=(64, 1, 1), grid=(1, 1))
            ok = np.allclose(y, 3 * np.arange(n) + 1)
        elif name.startswith("tl::copy"):
            x = np.arange(n, dtype=np.float32); y = np.zeros(n, np.float32)
            f(drv.In(x), drv.Out(y), block=(32, 1, 1), grid=(2, 1))
            ok = np.allclose(y, x + 1)
        else:
            x = np.arange(32, dtype=np.float32)
            f(drv.InOut(x), block=(32, 1, 1), grid=(1, 1))
            ok = np.allclose(x, 2 * np.arange(32))
        print(("OK  " if ok else "FAIL") + f" {name}: {mangled}" + ("" if ok else " (wrong result)"))
        fails += not ok
    print("all OK" if not fails else f"{fails} FAILED")


if __name__ == "__main__":
    main()
