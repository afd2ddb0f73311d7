"""The CUDA C++ front end (tilinglib/toolchain/frontend/): each C++ construct it lowers, run on the
emulator and checked against NumPy, and compile errors at the student's line and column.

The kernels are written for these tests, in the styles real CUDA code uses (SGEMM_CUDA's
templated kernels, cuda-samples' SharedMemory<T>, cooperative-groups reductions)."""

import numpy as np
import pytest

from tilinglib.emulator import In, InOut, Out, SourceModule
from tilinglib.errors import CompileError, KernelNotFoundError, UnsupportedFeatureError
from tilinglib.toolchain.codegen.compiler import kernel_signatures
from tilinglib.toolchain.frontend import mangled_names


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
    run(CG, "warp_sums", In(x), Out(out), Out(ranks), block=(64, 1, 1), no_extern_c=True)
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
    run(src, "k", In(x), Out(out), block=(64, 1, 1), no_extern_c=True)
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


ACTIVEMASK = r"""
__global__ void k(const int* keys, unsigned int* a, unsigned int* b, unsigned int* c) {
  int i = threadIdx.x;
  a[i] = __activemask();                       // every lane of the (possibly partial) warp
  b[i] = 0;
  c[i] = 0;
  if (keys[i] % 3 != 0) {
    if (keys[i] % 2 == 0) b[i] = __activemask();
  }
  for (int j = 0; j < 4; ++j) {
    if (j == keys[i] % 4) break;
    c[i] = __activemask();                     // the lanes still in the loop at its last trip
  }
}
"""


def test_activemask_is_the_lanes_executing_the_call():
    n = 40                                     # one full warp and one of 8 lanes
    keys = np.random.default_rng(11).integers(0, 50, n).astype(np.int32)
    a, b, c = (np.zeros(n, np.uint32) for _ in range(3))
    run(ACTIVEMASK, "k", In(keys), Out(a), Out(b), Out(c), block=(n, 1, 1))

    def mask(lanes):
        return sum(1 << (i % 32) for i in lanes)
    want_b, want_c = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    for w0, w1 in ((0, 32), (32, n)):
        lanes = range(w0, w1)
        np.testing.assert_array_equal(a[w0:w1], mask(lanes))
        inner = [i for i in lanes if keys[i] % 3 != 0 and keys[i] % 2 == 0]
        want_b[inner] = mask(inner)
        for j in range(4):                      # trip j: lanes whose key % 4 > j
            running = [i for i in lanes if keys[i] % 4 > j]
            want_c[running] = mask(running)
    np.testing.assert_array_equal(b, want_b)
    np.testing.assert_array_equal(c, want_c)


REFERENCES = r"""
struct Acc { float sum; int count; };
__device__ void add(Acc& acc, float v) { acc.sum += v; acc.count++; }
__device__ void twice(int& x) { x *= 2; }
__device__ void through(int& x) { twice(x); twice(x); }      // a reference passed on
__device__ int byValue(int v) { twice(v); return v; }          // a parameter's address
__device__ void order(float& lo, float& hi) { if (lo > hi) { float t = lo; lo = hi; hi = t; } }
__global__ void k(const float* x, float* lo_hi, float* sums, int* ints, int n) {
  int i = threadIdx.x;
  Acc acc = {0.0f, 0};
  for (int j = i; j < n; j += 8) add(acc, x[j]);
  sums[i] = acc.sum;
  ints[4 * i] = acc.count;
  int v = i;
  through(v);
  ints[4 * i + 1] = v;
  ints[4 * i + 2] = byValue(i + 1);
  int* p = &v;
  int& r = *p;
  r += 1;
  *p += 10;
  float lo = x[i], hi = x[n - 1 - i];
  twice(n);
  ints[4 * i + 3] = v + 1000 * n;
  order(lo, hi);
  lo_hi[2 * i] = lo;
  lo_hi[2 * i + 1] = hi;
}
"""


def test_references_and_pointers_to_locals_and_parameters():
    n = 40
    x = np.random.default_rng(12).standard_normal(n).astype(np.float32)
    lo_hi, sums, ints = np.zeros(16, np.float32), np.zeros(8, np.float32), np.zeros(32, np.int32)
    run(REFERENCES, "k", In(x), Out(lo_hi), Out(sums), Out(ints), np.int32(n),
        block=(8, 1, 1))
    i = np.arange(8)
    want_sums = np.array([x[j::8].astype(np.float32).sum(dtype=np.float32) for j in i])
    np.testing.assert_allclose(sums, want_sums, rtol=1e-6)
    ints = ints.reshape(8, 4)
    np.testing.assert_array_equal(ints[:, 0], [len(range(j, n, 8)) for j in i])
    np.testing.assert_array_equal(ints[:, 1], 4 * i)
    np.testing.assert_array_equal(ints[:, 2], 2 * (i + 1))
    np.testing.assert_array_equal(ints[:, 3], 4 * i + 11 + 1000 * 2 * n)  # kernel's n doubled
    np.testing.assert_array_equal(lo_hi[0::2], np.minimum(x[:8], x[::-1][:8]))  # order()
    np.testing.assert_array_equal(lo_hi[1::2], np.maximum(x[:8], x[::-1][:8]))


def test_references_to_locals_change_no_counter():
    """A local bound to a reference lives in local memory, which is registers on a GPU after
    nvcc inlines the call: the counters equal those of the same kernel written inline."""
    with_refs = ("__device__ void acc(float& s, const float* a, int i) { s += a[i]; }\n"
                 "__global__ void k(const float* a, float* o) {\n"
                 "  float s = 0.0f;\n"
                 "  for (int j = 0; j < 4; ++j) acc(s, a, 32 * j + threadIdx.x);\n"
                 "  o[threadIdx.x] = s;\n}\n")
    inline = ("__global__ void k(const float* a, float* o) {\n"
              "  float s = 0.0f;\n"
              "  for (int j = 0; j < 4; ++j) s += a[32 * j + threadIdx.x];\n"
              "  o[threadIdx.x] = s;\n}\n")
    a = np.random.default_rng(13).standard_normal(128).astype(np.float32)
    reports = []
    for src in (with_refs, inline):
        o = np.zeros(32, np.float32)
        f = SourceModule(src).get_function("k")
        f(In(a), Out(o), block=(32, 1, 1), grid=(1, 1))
        np.testing.assert_allclose(o, a.reshape(4, 32).sum(axis=0), rtol=1e-6)
        reports.append(f.last_report)
    names = ("global_load_requests", "global_load_sectors", "global_store_requests",
             "shared_load_instructions", "shared_store_instructions", "flops")
    assert [getattr(reports[0], k) for k in names] == [getattr(reports[1], k) for k in names]
    assert reports[0].global_load_requests == 4


def test_a_local_read_through_a_pointer_before_any_write_warns():
    from tilinglib.errors import UninitializedReadWarning
    src = ("__global__ void k(int* o) {\n  int n;\n  int* p = &n;\n"
           "  if (threadIdx.x < 5) *p = 3;\n  o[threadIdx.x] = n;\n}\n")
    o = np.zeros(32, np.int32)
    with pytest.warns(UninitializedReadWarning, match=r"'n' is read at line 5 before it is "
                                                      r"given a value.*thread \(5, 0, 0\)"):
        run(src, "k", Out(o))
    np.testing.assert_array_equal(o[:5], 3)


def test_a_reference_to_a_methods_field_reaches_the_callers_object():
    # bump() binds inc's reference to its own field: a method that changes its object gets
    # it by address, so the caller's c.n changes (C++); next() is const and works on a copy.
    src = ("__device__ void inc(int& x) { x++; }\n"
           "struct C { int n; __device__ int next() const { int m = n; inc(m); return m; }\n"
           "  __device__ void bump() { inc(n); } };\n"
           "__global__ void k(int* a) { C c; c.n = 4; a[0] = c.next(); c.bump(); c.bump();\n"
           "  a[1] = c.n; }\n")
    a = np.zeros(2, np.int32)
    run(src, "k", Out(a))
    np.testing.assert_array_equal(a, [5, 6])


def test_tile_votes_are_the_tiles_own_lanes():
    src = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
           "__global__ void k(const int* p, unsigned int* o) {\n"
           "  auto t = cg::tiled_partition<8>(cg::this_thread_block());\n"
           "  int v = p[threadIdx.x];\n"
           "  o[3 * threadIdx.x] = t.ballot(v);\n"
           "  o[3 * threadIdx.x + 1] = t.any(v);\n"
           "  o[3 * threadIdx.x + 2] = t.all(v);\n}\n")
    p = (np.random.default_rng(14).random(64) < 0.6).astype(np.int32)
    p[:8] = 1                                   # a tile where all hold
    p[8:16] = 0                                 # and one where none does
    o = np.zeros(3 * 64, np.uint32)
    run(src, "k", In(p), Out(o), block=(64, 1, 1), no_extern_c=True)
    tiles = p.reshape(8, 8)
    ballot = (tiles << np.arange(8)).sum(axis=1)
    want = np.stack([np.repeat(ballot, 8), np.repeat(tiles.any(axis=1), 8),
                     np.repeat(tiles.all(axis=1), 8)], axis=1)
    np.testing.assert_array_equal(o.reshape(64, 3), want)


@pytest.mark.parametrize("tile, line, message", [
    (48, 4, "tiled_partition<N>: N must be a power of two from 1 to 1024"),
    (2048, 4, "tiled_partition<N>: N must be a power of two from 1 to 1024"),
])
def test_a_tile_size_cuda_refuses_is_a_compile_error_at_its_line(tile, line, message):
    src = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
           "__global__ void k(int* o) {\n"
           f"  auto t = cg::tiled_partition<{tile}>(cg::this_thread_block());\n"
           "  o[0] = t.thread_rank();\n}\n")
    with pytest.raises(CompileError) as info:
        SourceModule(src, no_extern_c=True)
    assert info.value.line == line and message in str(info.value)


def test_a_shuffle_on_a_tile_of_several_warps_is_a_compile_error_at_its_line():
    src = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
           "__global__ void k(int* o) {\n"
           "  auto t = cg::tiled_partition<64>(cg::this_thread_block());\n"
           "  o[t.thread_rank()] = t.shfl(o[0], 3);\n}\n")
    with pytest.raises(CompileError) as info:
        SourceModule(src, no_extern_c=True)
    assert (info.value.line, info.value.column) == (5, 26)      # at 'shfl' 
    assert "shfl on a tile of more than 32 threads" in str(info.value)
    assert "thread_block_tile<64>::shfl<int>" in str(info.value)


CAST_FORMS = r"""
extern "C" __global__ void casts(long long *wide, float *ratio, int a, int b, int one, int two) {
  wide[0] = static_cast<size_t>(a) * b;
  wide[1] = size_t(a) * b;
  wide[2] = static_cast<long long>(a) * b;
  wide[3] = (size_t)a * b;
  ratio[0] = static_cast<float>(one) / two;
  ratio[1] = float(one) / two;
  ratio[2] = one / static_cast<float>(two);
  ratio[3] = (float)one / two;
}
"""


def test_every_cast_form_converts_before_the_arithmetic():
    """static_cast<T>(x) and T(x) convert x first, as (T)x does: 100000 * 100000 in 64 bits
    and 1 / 2 in float (the H200 gives 10000000000 and 0.5 for every row; clang keeps the
    conversion of the C++ forms in an ImplicitCastExpr marked part of the explicit cast)."""
    wide = np.zeros(4, np.int64)
    ratio = np.zeros(4, np.float32)
    run(CAST_FORMS, "casts", Out(wide), Out(ratio), np.int32(100000), np.int32(100000),
        np.int32(1), np.int32(2), block=(1, 1, 1))
    assert wide.tolist() == [100000 * 100000] * 4
    assert ratio.tolist() == [0.5] * 4


LAMBDA_SHARED_2D = r"""
extern "C" __global__ void rows(float *out) {
  __shared__ float tile[4][8];
  __shared__ float line[8];
  int t = threadIdx.x;
  tile[t / 8][t % 8] = t;
  if (t < 8) line[t] = 100 + t;
  __syncthreads();
  auto at = [](int r, int c) { return tile[r][c]; };
  auto row_sum = [&](int r) { float s = 0; for (int c = 0; c < 8; ++c) s += tile[r][c]; return s; };
  out[t] = at(3 - t / 8, 7 - t % 8) + row_sum(t / 8) + line[7 - t % 8];
}
"""


def test_lambdas_name_the_kernels_shared_arrays_of_one_and_two_dimensions():
    """A lambda naming a __shared__ array (static storage: not captured in C++) reads the
    kernel's array, rows of a 2-D one included (found merging the differential tester's
    lambda fix with the pointer-to-array types: the array was passed as a reference to the
    whole array and indexed as rows)."""
    out = np.zeros(32, np.float32)
    run(LAMBDA_SHARED_2D, "rows", Out(out), block=(32, 1, 1))
    t = np.arange(32)
    tile = t.reshape(4, 8).astype(np.float32)
    expected = tile[3 - t // 8, 7 - t % 8] + tile.sum(axis=1)[t // 8] + (100 + (7 - t % 8))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("call", ["sqrt(n)", "fabs(n)", "floor(n)", "fmin(x, 2.0)", "pow(x, 2.0)"])
def test_a_math_function_on_an_integer_is_refused_as_nvcc_refuses_it(call):
    """sqrt(int) and the like resolve to the C++ library's template for integers, a
    constexpr host function, which nvcc refuses in device code (seen on the H200: sqrt(two)
    of an int two is "calling a constexpr __host__ function("sqrt") from a __global__
    function ... is not allowed"); the message says what to write."""
    src = 'extern "C" __global__ void k(double *out, int n, float x) { out[0] = %s; }' % call
    with pytest.raises(CompileError) as e:
        SourceModule(src).get_function("k")
    name = call.split("(")[0]
    assert f'calling a constexpr __host__ function("{name}")' in str(e.value)
    assert "--expt-relaxed-constexpr" in str(e.value) and f"{name}((double)x)" in str(e.value)


def test_pow_of_a_float_or_double_and_an_int_is_cudas_overload():
    """CUDA declares pow(float, int) and pow(double, int): pow(x, 2) of a float is a float."""
    src = r"""
    extern "C" __global__ void k(float *f, double *d, float x, double y) {
      f[0] = pow(x, 2);
      d[0] = pow(y, 3);
      d[1] = sizeof(pow(x, 2));
    }"""
    f, d = np.zeros(1, np.float32), np.zeros(2)
    run(src, "k", Out(f), Out(d), np.float32(1.5), np.float64(-2.0), block=(1, 1, 1))
    assert f[0] == np.float32(2.25) and d.tolist() == [-8.0, 4.0]


def test_pow_of_two_ints_is_a_double_as_nvcc_compiles_it():
    """pow(int, int) compiles in device code, and nvcc 13.0 on the H200 gave it type double
    (a static_assert on decltype(pow(n, n)) passed for double, failed for float and int):
    pow(3, 3) / 2 is 13.5, not the integer 13."""
    src = r"""
    extern "C" __global__ void k(double *d, int n) {
      d[0] = pow(n, n) / 2;
      d[1] = sizeof(pow(n, n));
      d[2] = pow(n, -1);
    }"""
    d = np.zeros(3)
    run(src, "k", Out(d), np.int32(3), block=(1, 1, 1))
    assert d.tolist() == [13.5, 8.0, 1 / 3]
