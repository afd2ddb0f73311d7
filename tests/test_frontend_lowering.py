"""The CUDA C++ front end (tilinglib/frontend/): each C++ construct it lowers, run on the
emulator and checked against NumPy, and compile errors at the student's line and column.

The kernels are written for these tests, in the styles real CUDA code uses (SGEMM_CUDA's
templated kernels, cuda-samples' SharedMemory<T>, cooperative-groups reductions)."""

import numpy as np
import pytest

from tilinglib.emulator import In, InOut, Out, SourceModule
from tilinglib.errors import CompileError, KernelNotFoundError, UnsupportedFeatureError
from tilinglib.emulator.compiler import kernel_signatures
from tilinglib.frontend import mangled_names


def run(src, name, *args, block=(32, 1, 1), grid=(1, 1), **kw):
    f = SourceModule(src, **kw).get_function(name)
    f(*args, block=block, grid=grid)


TEMPLATED = r"""
template <int BM, typename T>
__global__ void scale_rev(T* a, T s) {
  __shared__ T tile[BM];
  const uint i = threadIdx.x;
  tile[i] = a[i] * s;
  __syncthreads();
  a[i] = tile[BM - 1 - i];
}
template __global__ void scale_rev<32, float>(float*, float);
template __global__ void scale_rev<16, double>(double*, double);
"""


def test_each_instantiation_is_a_kernel_found_by_its_text():
    a = np.arange(32, dtype=np.float32)
    run(TEMPLATED, "scale_rev<32, float>", InOut(a), np.float32(2))
    np.testing.assert_array_equal(a, (np.arange(32, dtype=np.float32) * 2)[::-1])
    d = np.arange(16, dtype=np.float64) + 0.5
    run(TEMPLATED, "scale_rev<16,double>", InOut(d), np.float64(-1), block=(16, 1, 1))
    np.testing.assert_array_equal(d, -(np.arange(16) + 0.5)[::-1])


def test_kernel_lookup_normalises_spaces_and_lists_instantiations():
    mod = SourceModule(TEMPLATED)
    assert mod.get_function("scale_rev< 32 ,  float >") is not None
    with pytest.raises(KernelNotFoundError, match=r"scale_rev<32, float>"):
        mod.get_function("scale_rev<64, float>")


def test_mangled_names_are_clangs_itanium_names():
    names = mangled_names(TEMPLATED)
    # Itanium ABI, by hand: _Z + <9>scale_rev + I Li32E f E (template args) + v + PT0_ T0_
    assert names == {"scale_rev<32, float>": "_Z9scale_revILi32EfEvPT0_S0_",
                     "scale_rev<16, double>": "_Z9scale_revILi16EdEvPT0_S0_"}
    assert mangled_names("extern \"C\" __global__ void k(float* a) {}") == {"k": "k"}


def test_signatures_of_instantiations():
    sigs = kernel_signatures(TEMPLATED)
    assert [(p.name, p.ctype.kind) for p in sigs["scale_rev<16, double>"]] == [
        ("a", "pointer"), ("s", "double")]
    assert sigs["scale_rev<16, double>"][0].ctype.target.kind == "double"


NAMESPACED = r"""
#include <cuda_runtime.h>
namespace tiling {
namespace detail {
template <typename T> __device__ T square(T x) { return x * x; }
}
template <int N> __device__ float poly(float x, float c = 1.0f) {
  return detail::square(x) * N + c;        // deduction: square<float>
}
constexpr int kWidth = 4;
}
namespace tl = tiling;
__global__ void k(const float* __restrict__ x, float* y, size_t n) {
  size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  static_assert(tl::kWidth == 4, "width");
  if (i < n) y[i] = tl::poly<tl::kWidth>(x[i]) + ::tiling::poly<2>(x[i], 0.5f);
}
"""


def test_namespaces_aliases_qualified_names_default_arguments_constexpr():
    x = np.linspace(-2, 2, 40).astype(np.float32)
    y = np.zeros(40, np.float32)
    run(NAMESPACED, "k", In(x), Out(y), np.uint64(40), block=(32, 1, 1), grid=(2, 1))
    want = (x * x * np.float32(4) + np.float32(1)) + (x * x * np.float32(2) + np.float32(0.5))
    np.testing.assert_allclose(y, want, rtol=1e-6)


SHARED_MEMORY = r"""
template <class T> struct SharedMemory {
  __device__ inline operator T*() {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
};
template <class T> __global__ void block_sum(const T* in, T* out) {
  T* s = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  s[tid] = in[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (unsigned int d = blockDim.x / 2; d > 0; d >>= 1) {
    if (tid < d) s[tid] += s[tid + d];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}
template __global__ void block_sum<int>(const int*, int*);
"""


def test_class_template_with_a_conversion_operator_to_dynamic_shared_memory():
    data = np.arange(128, dtype=np.int32) * 3 - 50
    out = np.zeros(2, np.int32)
    f = SourceModule(SHARED_MEMORY).get_function("block_sum<int>")
    f(In(data), Out(out), block=(64, 1, 1), grid=(2, 1), shared=64 * 4)
    np.testing.assert_array_equal(out, data.reshape(2, 64).sum(axis=1))


CLASSES = r"""
struct Complex {
  float re, im;
  __device__ Complex(float r, float i) : re(r), im(i) {}
  __device__ float norm2() const { return re * re + im * im; }
  __device__ Complex operator*(const Complex& o) const {
    return Complex(re * o.re - im * o.im, re * o.im + im * o.re);
  }
};
__device__ Complex operator+(Complex a, Complex b) { return Complex(a.re + b.re, a.im + b.im); }
__device__ void accumulate(float& acc, const float& v) { acc += v; }
__global__ void k(const float* re, const float* im, float* out, float* sums) {
  int i = threadIdx.x;
  Complex z(re[i], im[i]);
  auto w = z * z + Complex(1.0f, 0.0f);
  out[2 * i] = w.re;
  out[2 * i + 1] = w.im;
  accumulate(sums[i], w.norm2());
  float* p = nullptr;
  if (p == NULL) accumulate(sums[i], static_cast<float>(reinterpret_cast<const int*>(re) != 0));
}
"""


def test_struct_with_constructor_methods_operators_and_references():
    rng = np.random.default_rng(5)
    re = rng.standard_normal(32).astype(np.float32)
    im = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(64, np.float32)
    sums = np.full(32, 10, np.float32)
    run(CLASSES, "k", In(re), In(im), Out(out), InOut(sums))
    z = re.astype(np.complex64) + 1j * im.astype(np.complex64)
    w = z * z + 1
    np.testing.assert_allclose(out[0::2], w.real, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1::2], w.imag, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sums, 10 + np.abs(w) ** 2 + 1, rtol=1e-5)


CG = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void warp_sums(const float* in, float* out, int* ranks) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  float v = in[block.thread_rank()];
  for (int d = warp.size() / 2; d > 0; d /= 2)
    v += warp.shfl_down(v, d);
  block.sync();
  if (warp.thread_rank() == 0) out[warp.meta_group_rank()] = v;
  cg::sync(block);
  ranks[block.thread_rank()] = warp.thread_rank() + 100 * (int)warp.any(threadIdx.x == 40);
}
"""


def test_cooperative_groups_block_and_tile_reduction():
    x = np.arange(64, dtype=np.float32) / 4
    out = np.zeros(2, np.float32)
    ranks = np.zeros(64, np.int32)
    run(CG, "warp_sums", In(x), Out(out), Out(ranks), block=(64, 1, 1))
    np.testing.assert_allclose(out, x.reshape(2, 32).sum(axis=1))
    np.testing.assert_array_equal(ranks, np.arange(64) % 32 + np.repeat([0, 100], 32))


def test_a_failing_static_assert_is_a_compile_error_at_its_line():
    src = ("template <int TILE> __global__ void k(float* a) {\n"
           "  static_assert(TILE % 32 == 0, \"TILE must be a multiple of 32\");\n"
           "  a[0] = TILE;\n}\ntemplate __global__ void k<48>(float*);\n")
    with pytest.raises(CompileError) as info:
        SourceModule(src)
    assert info.value.line == 2 and "TILE must be a multiple of 32" in str(info.value)
    assert "k<48>" in str(info.value)            # which instantiation


def test_errors_point_at_the_students_line_and_column_all_listed():
    src = ("__global__ void k(float* a)\n{\n    a[0] = undeclared_thing;\n"
           "    float b = a[1]\n    a[2] = b;\n}\n")
    with pytest.raises(CompileError) as info:
        SourceModule(src)
    e = info.value
    assert (e.line, e.column) == (3, 12)
    assert "'undeclared_thing' is not declared" in str(e)
    assert "kernel.cu:4:19:" in str(e) and "2 errors" in str(e)
    assert "    3 |     a[0] = undeclared_thing;" in str(e)


def test_errors_inside_a_template_point_at_the_template_line():
    src = ("\ntemplate <typename T>\n__global__ void k(T* a) {\n  a[0] = a[1] % 2;\n}\n"
           "template __global__ void k<float>(float*);\n")
    with pytest.raises(CompileError) as info:
        SourceModule(src)
    assert (info.value.line, info.value.column) == (4, 15)
    assert "k<float>" in str(info.value)


def test_a_method_that_changes_its_object_gets_it_by_address():
    # (refused until the object could live in local memory; tests/test_cxx_constructs.py)
    src = ("struct C { int n; __device__ void bump() { n += 1; } };\n"
           "__global__ void k(int* a) { C c; c.n = 0; c.bump(); c.bump(); a[0] = c.n; }\n")
    a = np.zeros(1, np.int32)
    run(src, "k", Out(a), block=(1, 1, 1))
    assert a[0] == 2


def test_nvcc_headers_typedefs_and_macros():
    src = ("#include <cuda_runtime.h>\n__global__ void k(uint* u, ushort* s, ulong* l, "
           "float* f) {\n  u[0] = 7u; s[0] = (ushort)65535; l[0] = (ulong)1 << 40;\n"
           "  f[0] = INFINITY;\n#ifdef __CUDACC__\n  f[1] = __CUDA_ARCH__;\n#endif\n}\n")
    u, s = np.zeros(1, np.uint32), np.zeros(1, np.uint16)
    l, f = np.zeros(1, np.uint64), np.zeros(2, np.float32)
    run(src, "k", Out(u), Out(s), Out(l), Out(f), block=(1, 1, 1))
    assert (u[0], s[0], l[0]) == (7, 65535, 1 << 40)
    assert np.isinf(f[0]) and f[1] == 900


def test_cooperative_groups_reduce_on_tiles_of_16_and_sync_of_a_tile():
    src = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
           "__global__ void k(const float* in, float* out) {\n"
           "  auto block = cg::this_thread_block();\n"
           "  auto tile = cg::tiled_partition<16>(block);\n"
           "  float v = cg::reduce(tile, in[block.thread_rank()], cg::plus<float>());\n"
           "  cg::sync(tile);\n"
           "  if (tile.thread_rank() == 0) out[tile.meta_group_rank()] = v;\n}\n")
    x = np.arange(64, dtype=np.float32) ** 2
    out = np.zeros(4, np.float32)
    run(src, "k", In(x), Out(out), block=(64, 1, 1))
    np.testing.assert_array_equal(out, x.reshape(4, 16).sum(axis=1))


def test_a_base_class_is_the_first_member_and_virtual_functions_are_refused():
    # (inheritance was refused; tests/test_cxx_constructs.py has more)
    src = ("struct A { int a; };\nstruct B : A { int b; };\n"
           "__global__ void k(int* o) { B b; b.a = 2; b.b = 1; o[0] = b.b + 10 * b.a; "
           "o[1] = sizeof(B); }\n")
    o = np.zeros(2, np.int32)
    run(src, "k", Out(o), block=(1, 1, 1))
    assert o.tolist() == [21, 8]
    src = ("struct A { __device__ virtual int f() const { return 1; } };\n"
           "__global__ void k(int* o) { A a; o[0] = a.f(); }\n")
    with pytest.raises(UnsupportedFeatureError, match=r"kernel.cu:1: .*virtual functions \('A'"):
        SourceModule(src)


def test_a_kernel_template_never_instantiated_is_named_when_looked_up():
    mod = SourceModule("template <int N> __global__ void k(float* a) { a[0] = N; }\n")
    with pytest.raises(KernelNotFoundError, match=r"'k' is a template: instantiate it"):
        mod.get_function("k<4>")


def test_overloaded_device_functions_are_each_called():
    src = ("__device__ float twice(float x) { return 2.0f * x; }\n"
           "__device__ int twice(int x) { return 2 * x + 1; }\n"
           "namespace ops { __global__ void k(float* f, int* i) {\n"
           "  f[threadIdx.x] = twice(f[threadIdx.x]);\n"
           "  i[threadIdx.x] = twice(i[threadIdx.x]);\n} }\n")
    f = np.arange(32, dtype=np.float32) + 0.25
    i = np.arange(32, dtype=np.int32)
    run(src, "k", InOut(f), InOut(i))             # 'ops::k' by its own name
    np.testing.assert_array_equal(f, 2 * (np.arange(32) + 0.25))
    np.testing.assert_array_equal(i, 2 * np.arange(32) + 1)
