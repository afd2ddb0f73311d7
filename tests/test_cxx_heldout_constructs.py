"""The constructs that refused kernels of the held-out sample (docs/conformance.md, "The
held-out sample"), each with kernels of our own checked against NumPy or a hand derivation:
brace value-initialisation of scalars, glibc's <math.h> constants, device memcpy/memset,
a student's own float atomicMax beside CUDA's integer ones, and cooperative groups'
type-erased thread_group with the run-time tiled_partition(parent, n).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tilinglib import emulator
from tilinglib.errors import (CompileError, KernelRuntimeError, MemoryAccessError,
                              UnsupportedFeatureError)


def run1(src, name, *args, block=(32, 1, 1), grid=(1, 1), **kw):
    f = emulator.SourceModule(src, no_extern_c=True).get_function(name)
    f(*args, block=block, grid=grid, **kw)
    return f


# ---------------------------------------------------------------- 1. brace value-initialisation

BRACE_TEMPLATE = r"""
template <class T>
__global__ void axpbyInit(const T *x, T *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    auto acc = T{};          // value-initialised: 0
    T bias{};                // 0 too
    T scale{3};              // 3
    if (i < n) {
        acc += scale * x[i];
        out[i] = acc + bias + T{1};
    }
}
template __global__ void axpbyInit<float>(const float *, float *, int);
template __global__ void axpbyInit<int>(const int *, int *, int);
"""


@pytest.mark.parametrize("ctype,dtype", [("float", np.float32), ("int", np.int32)])
def test_brace_value_initialisation_in_a_template(ctype, dtype):
    n = 50
    x = (np.arange(n) - 20).astype(dtype)
    out = np.full(n, 99, dtype)
    run1(BRACE_TEMPLATE, f"axpbyInit<{ctype}>", emulator.In(x), emulator.Out(out),
         np.int32(n), block=(64, 1, 1))
    np.testing.assert_array_equal(out, 3 * x + 1)


def test_brace_initialised_scalars_and_functional_casts():
    src = r"""
    __global__ void braces(float *o, int *io, double *d)
    {
        int i = threadIdx.x;
        float v{};              // 0
        float u{2.5f};
        int a = {4};
        unsigned int w{7u};
        double e{};
        const float *p{};       // a null pointer
        o[i] = v + u + float{} + float{2.0f} + int{3} + (p == 0 ? 10.0f : -1.0f);
        io[i] = a * int{} + a + (int)w + int{-2};
        d[i] = e + double{0.25} + i;
    }
    """
    o = np.zeros(8, np.float32)
    io = np.zeros(8, np.int32)
    d = np.zeros(8)
    run1(src, "braces", emulator.Out(o), emulator.Out(io), emulator.Out(d), block=(8, 1, 1))
    np.testing.assert_array_equal(o, np.full(8, 2.5 + 2 + 3 + 10, np.float32))
    np.testing.assert_array_equal(io, np.full(8, 4 + 7 - 2, np.int32))
    np.testing.assert_array_equal(d, 0.25 + np.arange(8))


def test_brace_value_initialisation_of_a_struct_still_zeroes_its_fields():
    src = r"""
    struct Acc { float sum; int count; };
    __global__ void k(float *o)
    {
        Acc a{};
        Acc b = Acc{};
        a.sum += 1.5f; b.count += 2;
        o[threadIdx.x] = a.sum + a.count + b.sum + b.count;
    }
    """
    o = np.zeros(4, np.float32)
    run1(src, "k", emulator.Out(o), block=(4, 1, 1))
    np.testing.assert_array_equal(o, np.full(4, 3.5, np.float32))


# ---------------------------------------------------------------- 2. <math.h> constants

MATH_CONSTANTS = {
    "M_PI": math.pi, "M_PI_2": math.pi / 2, "M_PI_4": math.pi / 4, "M_1_PI": 1 / math.pi,
    "M_2_PI": 2 / math.pi, "M_E": math.e, "M_LN2": math.log(2), "M_LN10": math.log(10),
    "M_LOG2E": math.log2(math.e), "M_LOG10E": math.log10(math.e), "M_SQRT2": math.sqrt(2),
    "M_SQRT1_2": math.sqrt(0.5), "M_2_SQRTPI": 2 / math.sqrt(math.pi),
}


@pytest.mark.parametrize("include", ["#include <math.h>\n", "#include <cmath>\n", ""])
def test_math_constants_are_glibcs_doubles(include):
    names = list(MATH_CONSTANTS)
    src = include + "__global__ void consts(double *o, float *f) {\n" + "".join(
        f"    o[{i}] = {n}; f[{i}] = {n};\n" for i, n in enumerate(names)) + "}\n"
    o = np.zeros(len(names))
    f = np.zeros(len(names), np.float32)
    run1(src, "consts", emulator.Out(o), emulator.Out(f), block=(1, 1, 1))
    want = np.array([MATH_CONSTANTS[n] for n in names])
    # doubles: exactly the double nearest to the constant (glibc writes 21 digits)
    np.testing.assert_array_equal(o, want)
    np.testing.assert_array_equal(f, want.astype(np.float32))


def test_gelu_scaling_factor_in_the_style_of_llm_kernels():
    src = r"""
    #include <math.h>
    #define SCALE sqrtf(2.0f / M_PI)
    __global__ void gelu(const float *x, float *y, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            float v = x[i];
            y[i] = 0.5f * v * (1.0f + tanhf(SCALE * (v + 0.044715f * v * v * v)));
        }
    }
    """
    x = np.linspace(-4, 4, 100).astype(np.float32)
    y = np.zeros_like(x)
    run1(src, "gelu", emulator.In(x), emulator.Out(y), np.int32(100), block=(64, 1, 1),
         grid=(2, 1))
    xd = x.astype(np.float64)
    ref = 0.5 * xd * (1 + np.tanh(np.sqrt(2 / np.pi) * (xd + 0.044715 * xd ** 3)))
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_a_students_own_definition_of_m_pi_wins():
    src = "#define M_PI 3.0f\n__global__ void k(float *o) { o[threadIdx.x] = M_PI; }\n"
    o = np.zeros(2, np.float32)
    run1(src, "k", emulator.Out(o), block=(2, 1, 1))
    np.testing.assert_array_equal(o, [3.0, 3.0])


# ---------------------------------------------------------------- 4. CUDA's atomic overloads

OWN_ATOMIC_MAX = r"""
__device__ static float atomicMax(float *address, float val)
{
    int *as_int = (int *)address;
    int old = *as_int, assumed;
    do {
        assumed = old;
        old = atomicCAS(as_int, assumed, __float_as_int(fmaxf(val, __int_as_float(assumed))));
    } while (assumed != old);
    return __int_as_float(old);
}

__global__ void maxBoth(const float *x, float *fmax, int *imax, unsigned int *umin, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMax(fmax, x[i]);                   // ours
        atomicMax(imax, (int)(x[i] * 100.0f));   // CUDA's int overload
        atomicMin(umin, (unsigned int)i + 5u);   // CUDA's unsigned overload
    }
}
"""


def test_a_students_float_atomic_max_beside_cudas_integer_ones():
    n = 200
    x = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    fmax = np.full(1, -np.inf, np.float32)
    imax = np.full(1, -(2 ** 30), np.int32)
    umin = np.full(1, 2 ** 31, np.uint32)
    f = run1(OWN_ATOMIC_MAX, "maxBoth", emulator.In(x), emulator.InOut(fmax),
             emulator.InOut(imax), emulator.InOut(umin), np.int32(n), block=(64, 1, 1),
             grid=(4, 1))
    assert fmax[0] == x.max()
    assert imax[0] == (x * np.float32(100)).astype(np.int32).max()
    assert umin[0] == 5
    # one int atomicMax and one unsigned atomicMin per thread, plus at least one atomicCAS
    # per thread in ours
    assert f.last_report.global_atomic_requests >= 3 * (n // 32 + 1)


@pytest.mark.parametrize("call,ptr", [
    ("atomicMax(p, 1.0f)", "float"),       # CUDA has no float atomicMax
    ("atomicMin(p, 1.0)", "double"),
    ("atomicAnd(p, 1ll)", "long long"),    # the bitwise ones: int, unsigned, ull
    ("atomicInc(p, 3)", "int"),            # atomicInc/Dec: unsigned int only
    ("atomicSub(p, 1ull)", "unsigned long long"),   # atomicSub: int and unsigned
])
def test_atomic_overloads_cuda_does_not_declare_are_refused(call, ptr):
    src = f"__global__ void k({ptr} *p) {{ {call}; }}\n"
    with pytest.raises(CompileError, match=r"no matching function for call to 'atomic"):
        emulator.SourceModule(src)


def test_atomic_overloads_cuda_declares_run():
    src = r"""
    __global__ void k(long long *mx, unsigned long long *orr, float *ex, unsigned int *inc)
    {
        unsigned int i = threadIdx.x;
        atomicMax(mx, (long long)i - 40);
        atomicOr(orr, 1ull << (i + 20));
        if (i == 3) atomicExch(ex, 2.5f);
        atomicInc(inc, 9u);
    }
    """
    mx = np.full(1, -100, np.int64)
    orr = np.zeros(1, np.uint64)
    ex = np.zeros(1, np.float32)
    inc = np.zeros(1, np.uint32)
    run1(src, "k", emulator.InOut(mx), emulator.InOut(orr), emulator.InOut(ex),
         emulator.InOut(inc), block=(32, 1, 1))
    assert mx[0] == 31 - 40
    assert orr[0] == sum(1 << (i + 20) for i in range(32))
    assert ex[0] == 2.5
    assert inc[0] == 32 % 10          # atomicInc wraps to 0 after 9: 32 increments -> 2


# ---------------------------------------------------------------- 5. cg::thread_group

TREE_REDUCE_GROUPS = r"""
#include <cooperative_groups.h>
using namespace cooperative_groups;

// A tree sum over shared memory by any group (the lane of rank 0 ends with the sum).
__device__ int groupSum(thread_group g, int *scratch, int val)
{
    int lane = g.thread_rank();
    for (int i = g.size() / 2; i > 0; i /= 2) {
        scratch[lane] = val;
        g.sync();
        if (lane < i) val += scratch[lane + i];
        g.sync();
    }
    return val;
}

__global__ void sums(const int *x, int *blockSum, int *warpSums, int *tileSums, int tile)
{
    __shared__ int scratch[256];
    thread_block block = this_thread_block();
    thread_group g = this_thread_block();
    int r = block.thread_rank();
    int v = x[blockIdx.x * blockDim.x + r];
    int total = groupSum(g, scratch, v);
    if (g.thread_rank() == 0) blockSum[blockIdx.x] = total;
    g.sync();
    thread_group warp = tiled_partition(g, 32);
    int w = groupSum(warp, scratch + 32 * (r / 32), v);
    if (warp.thread_rank() == 0) warpSums[(blockIdx.x * blockDim.x + r) / 32] = w;
    g.sync();
    thread_group small = tiled_partition(warp, tile);      // a tile of a tile
    int s = groupSum(small, scratch + tile * (r / tile), v);
    if (small.thread_rank() == 0) tileSums[(blockIdx.x * blockDim.x + r) / tile] = s;
}
"""


@pytest.mark.parametrize("tile", [4, 16])
def test_thread_group_and_run_time_tiled_partition_tree_sums(tile):
    threads, blocks = 128, 2
    n = threads * blocks
    x = np.random.default_rng(3).integers(-50, 50, n).astype(np.int32)
    block_sum = np.zeros(blocks, np.int32)
    warp_sums = np.zeros(n // 32, np.int32)
    tile_sums = np.zeros(n // tile, np.int32)
    f = run1(TREE_REDUCE_GROUPS, "sums", emulator.In(x), emulator.Out(block_sum),
             emulator.Out(warp_sums), emulator.Out(tile_sums), np.int32(tile),
             block=(threads, 1, 1), grid=(blocks, 1), hazards="raise")
    np.testing.assert_array_equal(block_sum, x.reshape(blocks, -1).sum(1))
    np.testing.assert_array_equal(warp_sums, x.reshape(-1, 32).sum(1))
    np.testing.assert_array_equal(tile_sums, x.reshape(-1, tile).sum(1))
    # By hand, per block of 4 warps: the block's tree has 7 steps, each a store by every
    # warp (4) and loads by the warps with a lane below i (i = 64: 2 warps, then 1 each);
    # the warp's tree 5 steps and the tile's log2(tile) steps, each a store and a load by
    # every warp.
    steps = {4: 2, 16: 4}[tile]
    rep = f.last_report
    assert rep.shared_store_instructions == blocks * 4 * (7 + 5 + steps)
    assert rep.shared_load_instructions == blocks * ((2 + 6) + 4 * 5 + 4 * steps)


def test_every_group_converts_to_thread_group():
    src = r"""
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    __device__ unsigned int rankAndSize(cg::thread_group g) { return g.thread_rank() * 100u + g.size(); }
    __global__ void groups(unsigned int *out)
    {
        cg::thread_block b = cg::this_thread_block();
        unsigned int i = b.thread_rank();
        out[i] = rankAndSize(b);
        out[128 + i] = rankAndSize(cg::tiled_partition<8>(b));
        cg::thread_group big = cg::tiled_partition<64>(b);   // a tile of two warps
        big.sync();
        cg::sync(big);
        out[256 + i] = rankAndSize(big) + 7u * (big.num_threads() - 64u);
        if (i % 3 == 0) {
            cg::coalesced_group c = cg::coalesced_threads();
            out[384 + i] = rankAndSize(c);
            cg::thread_group quad = cg::tiled_partition(c, 4);   // members by rank, in fours
            quad.sync();
            out[512 + i] = rankAndSize(quad);
        }
    }
    """
    out = np.zeros(640, np.uint32)
    with pytest.warns(Warning):          # the lanes i % 3 != 0 leave out[384:] unwritten
        run1(src, "groups", emulator.Out(out), block=(128, 1, 1), hazards="raise")
    i = np.arange(128)
    np.testing.assert_array_equal(out[:128], i * 100 + 128)
    np.testing.assert_array_equal(out[128:256], (i % 8) * 100 + 8)
    np.testing.assert_array_equal(out[256:384], (i % 64) * 100 + 64)
    for warp in range(4):
        members = [t for t in range(32 * warp, 32 * warp + 32) if t % 3 == 0]
        for rank, t in enumerate(members):
            assert out[384 + t] == rank * 100 + len(members)
            quad = members[rank // 4 * 4: rank // 4 * 4 + 4]
            assert out[512 + t] == (rank % 4) * 100 + len(quad)


@pytest.mark.parametrize("size", [0, 3, 64])
def test_run_time_tiled_partition_of_a_size_cuda_refuses_stops_at_the_call(size):
    src = r"""
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    __global__ void k(unsigned int *out, unsigned int n)
    {
        cg::thread_group g = cg::this_thread_block();
        cg::thread_group t = cg::tiled_partition(g, n);
        out[g.thread_rank()] = t.size();
    }
    """
    out = np.zeros(64, np.uint32)
    with pytest.raises(KernelRuntimeError,
                       match=rf"tiled_partition\(parent, {size}\) at kernel.cu:7 .*power of two "
                             r"from 1 to 32"):
        run1(src, "k", emulator.Out(out), np.uint32(size), block=(64, 1, 1))


# ---------------------------------------------------------------- 3. device memcpy / memset

def test_memcpy_between_local_shared_and_global_memory():
    src = r"""
    #include <string.h>
    __global__ void copies(const float *in, float *out)
    {
        __shared__ float tile[64];
        float4 packed = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
        float unpacked[4];
        memcpy(&unpacked, &packed, sizeof(packed));                  // local to local
        int t = threadIdx.x;
        memcpy(tile + 4 * t, in + 4 * t, 4 * sizeof(float));         // global to shared
        __syncthreads();
        float mine[4];
        memcpy(mine, tile + 4 * ((t + 1) % 16), sizeof(mine));       // shared to local
        for (int k = 0; k < 4; ++k) mine[k] += unpacked[k];
        memcpy(out + 4 * t, mine, sizeof(mine));                     // local to global
    }
    """
    x = np.random.default_rng(5).standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    f = run1(src, "copies", emulator.In(x), emulator.Out(out), block=(16, 1, 1),
             hazards="raise")
    want = np.roll(x.reshape(16, 4), -1, axis=0) + np.float32([1, 2, 3, 4])
    np.testing.assert_array_equal(out, want.ravel())
    rep = f.last_report
    # float pointers: 4-byte accesses, 16 bytes = 4 per thread, one warp: 4 requests each.
    # The global ones: each warp-wide 4-byte access at a 16-byte stride spans 256 bytes
    # = 8 sectors.
    assert rep.global_load_requests == 4 and rep.global_load_sectors == 4 * 8
    assert rep.global_store_requests == 4 and rep.global_store_sectors == 4 * 8
    assert rep.shared_store_instructions == 4 and rep.shared_load_instructions == 4
    # 16 lanes at a 4-word stride: banks 0, 4, ..., 28 twice: 2 wavefronts per access
    assert rep.shared_store_wavefronts == 8 and rep.shared_load_wavefronts == 8


def test_memcpy_chunks_follow_the_pointer_types_and_the_size():
    src = r"""
    __global__ void widths(const float4 *v, float4 *w, const unsigned char *b,
                           unsigned char *c, int nbytes)
    {
        int t = threadIdx.x;
        memcpy(w + t, v + t, sizeof(float4));        // float4 to float4: one 16-byte access
        memcpy(c + 8 * t, b + 8 * t, nbytes);        // bytes: one access per byte
    }
    """
    v = np.arange(128, dtype=np.float32)
    w = np.zeros(128, np.float32)
    b = np.arange(256, dtype=np.uint8)
    c = np.zeros(256, np.uint8)
    f = run1(src, "widths", emulator.In(v), emulator.Out(w), emulator.In(b),
             emulator.InOut(c), np.int32(6), block=(32, 1, 1))
    np.testing.assert_array_equal(w, v)
    want = np.zeros(256, np.uint8)
    for t in range(32):
        want[8 * t: 8 * t + 6] = b[8 * t: 8 * t + 6]
    np.testing.assert_array_equal(c, want)
    assert f.last_report.global_load_requests == 1 + 6
    assert f.last_report.global_load_bytes_requested == 32 * 16 + 32 * 6


def test_memset_fills_bytes_in_any_space():
    src = r"""
    __global__ void fills(unsigned char *bytes, int *words)
    {
        int t = threadIdx.x;
        memset(bytes + 5 * t, 0xAB, 5);
        int local[3];
        memset(local, 0, sizeof(local));
        memset(words + 2 * t, 0xFF, 2 * sizeof(int));
        words[64 + t] = local[0] + local[1] + local[2] + 1;
    }
    """
    bytes_ = np.zeros(40, np.uint8)
    words = np.full(72, 9, np.int32)
    f = run1(src, "fills", emulator.Out(bytes_), emulator.InOut(words), block=(8, 1, 1))
    np.testing.assert_array_equal(bytes_, np.full(40, 0xAB, np.uint8))
    np.testing.assert_array_equal(words[:16], np.full(16, -1, np.int32))
    np.testing.assert_array_equal(words[16:64], np.full(48, 9, np.int32))
    np.testing.assert_array_equal(words[64:], np.ones(8, np.int32))
    # 5 one-byte stores + 2 four-byte stores + the final store, one warp
    assert f.last_report.global_store_requests == 5 + 2 + 1


def test_memcpy_past_a_local_array_is_an_out_of_range_write():
    # 128 bits written as 128 bytes into a 16-byte array
    src = r"""
    __global__ void k(float *o)
    {
        float4 bits = make_float4(1, 2, 3, 4);
        float data[4];
        memcpy(&data, &bits, 128);
        o[threadIdx.x] = data[threadIdx.x % 4];
    }
    """
    o = np.zeros(4, np.float32)
    with pytest.raises(MemoryAccessError, match=r"Invalid local write.*\n(.*\n)*.*kernel.cu:6"):
        run1(src, "k", emulator.Out(o), block=(4, 1, 1))


def test_memcpy_out_of_a_global_array_is_reported_at_its_line():
    src = r"""
    __global__ void k(const int *in, int *out, int n)
    {
        int i = threadIdx.x;
        memcpy(out + 8 * i, in + 8 * i, n * sizeof(int));
    }
    """
    x = np.arange(64, dtype=np.int32)
    out = np.zeros(64, np.int32)
    with pytest.raises(MemoryAccessError, match=r"Invalid __global__ read .*'in'(.*\n)*.*in\[64\]"
                                        r"(.*\n)*.*kernel.cu:5"):
        run1(src, "k", emulator.In(x), emulator.Out(out), np.int32(9), block=(8, 1, 1))


def test_memcpy_into_and_out_of_a_class_templates_array_field():
    # the Package128<T> style of LLM kernels: 16 bytes moved as one float4, viewed as T[n]
    src = r"""
    template <class T> struct alignas(16) Pack {
        static constexpr int size = 16 / sizeof(T);
        T data[size];
        __device__ explicit Pack(float4 bits) { memcpy(&data, &bits, sizeof(bits)); }
        __device__ float4 bits() const { float4 b; memcpy(&b, &data, sizeof(b)); return b; }
    };
    __global__ void weighted(const float4 *in, float *out)
    {
        Pack<float> p(in[threadIdx.x]);
        float s = 0.0f;
        for (int i = 0; i < Pack<float>::size; ++i) s += p.data[i] * (i + 1);
        out[threadIdx.x] = s + p.bits().w;
    }
    """
    x = np.random.default_rng(11).standard_normal(32).astype(np.float32)
    out = np.zeros(8, np.float32)
    run1(src, "weighted", emulator.In(x), emulator.Out(out), block=(8, 1, 1))
    xr = x.reshape(8, 4)
    s = np.zeros(8, np.float32)
    for i in range(4):
        # the kernel's order of additions, each `s += a * b` one fused multiply-add as nvcc
        # contracts it (the product of a float and a small integer is exact in double)
        s = (s.astype(np.float64) + xr[:, i].astype(np.float64) * (i + 1)).astype(np.float32)
    np.testing.assert_array_equal(out, s + xr[:, 3])


def test_a_students_overload_of_min_beside_the_built_in_ones():
    # without the renaming, every call of min() went to the student's float2 version
    src = r"""
    __device__ float2 min(float2 a, float2 b) { return make_float2(fminf(a.x, b.x), fminf(a.y, b.y)); }
    __global__ void mins(const int *a, const float2 *p, int *m, float2 *q)
    {
        int i = threadIdx.x;
        m[i] = min(a[i], 3);                 // CUDA's int min
        q[i] = min(p[i], make_float2(0.5f, -0.5f));
    }
    """
    a = np.arange(-4, 4, dtype=np.int32) * 2
    p = np.random.default_rng(2).standard_normal(16).astype(np.float32)
    m = np.zeros(8, np.int32)
    q = np.zeros(16, np.float32)
    run1(src, "mins", emulator.In(a), emulator.In(p), emulator.Out(m), emulator.Out(q),
         block=(8, 1, 1))
    np.testing.assert_array_equal(m, np.minimum(a, 3))
    np.testing.assert_array_equal(q.reshape(8, 2), np.minimum(p.reshape(8, 2),
                                                              np.float32([0.5, -0.5])))


# ------------------------------------------- 6. the held-out batch of 2026-12-02 (files as saved)

BOM_KERNEL = "\ufeff" + r"""#include "cuda_runtime.h"
__global__ void twice(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""


def test_a_byte_order_mark_at_the_start_of_the_file_is_skipped():
    # Visual Studio saves .cu files with a UTF-8 byte-order mark; nvcc (gcc's and clang's
    # preprocessors) skips it. The emulator refused every such file at 1:1 before.
    x = np.arange(40, dtype=np.float32) - 7
    y = np.zeros(40, np.float32)
    run1(BOM_KERNEL, "twice", emulator.In(x), emulator.Out(y), np.int32(40), block=(16, 1, 1),
         grid=(3, 1))
    np.testing.assert_array_equal(y, 2 * x)


def test_lines_after_a_byte_order_mark_keep_their_numbers():
    src = "\ufeff" + "// line 1\n__global__ void k(float *o)\n{\n    o[0] = undeclared;\n}\n"
    with pytest.raises(CompileError) as err:
        emulator.SourceModule(src, no_extern_c=True)
    assert err.value.line == 4 and "undeclared" in str(err.value)


def test_a_byte_order_mark_inside_the_file_stays_an_error_at_its_line():
    # only the first character of a file may be one (a second file pasted below the first)
    src = "__global__ void k(float *o) { o[0] = 1; }\n\ufeff__global__ void j(float *o) { }\n"
    with pytest.raises(CompileError) as err:
        emulator.SourceModule(src, no_extern_c=True)
    assert err.value.line == 2


HOST_TIMER = r"""
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define CHECK(call) { cudaError_t e = (call); if (e != cudaSuccess) { \
    printf("CUDA error %s\n", cudaGetErrorString(e)); exit(1); } }
struct GpuTimer {                     // host code: its constructor calls the host printf
    cudaEvent_t start, stop;
    GpuTimer() { CHECK(cudaEventCreate(&start)); CHECK(cudaEventCreate(&stop)); }
    ~GpuTimer() { CHECK(cudaEventDestroy(start)); CHECK(cudaEventDestroy(stop)); }
};
__global__ void square(const int *x, int *y) { y[threadIdx.x] = x[threadIdx.x] * x[threadIdx.x]; }
void run(const int *dx, int *dy) { GpuTimer t; square<<<1, 8>>>(dx, dy); }
int main() { GpuTimer t2{}; return 0; }
"""


def test_a_host_struct_used_by_host_code_is_set_aside_with_it():
    # `GpuTimer t;` makes clang declare the implicit copy and move constructors, which are
    # implicitly __host__ __device__: the struct was taken for device code and the host
    # printf in its constructor was refused ("call to __device__ function from __host__")
    x = np.arange(8, dtype=np.int32) - 3
    y = np.zeros(8, np.int32)
    run1(HOST_TIMER, "square", emulator.In(x), emulator.Out(y), block=(8, 1, 1))
    np.testing.assert_array_equal(y, x * x)


def test_a_struct_device_code_uses_is_still_device_code():
    src = r"""
    #include <cstdio>
    struct Acc { float s; __device__ void add(float v) { s += v; } };
    __global__ void total(const float *x, float *out)
    {
        Acc a{0.0f};
        for (int i = 0; i < 4; i++) a.add(x[threadIdx.x * 4 + i]);
        out[threadIdx.x] = a.s;
    }
    """
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(8, np.float32)
    run1(src, "total", emulator.In(x), emulator.Out(out), block=(8, 1, 1))
    np.testing.assert_array_equal(out, x.reshape(8, 4).sum(axis=1))


TYPE_TRAITS = r"""
#include <type_traits>
template <class T>
__device__ std::enable_if_t<std::is_floating_point<T>::value, T> halve(T x) { return x / 2; }
template <class T>
__device__ std::enable_if_t<std::is_integral<T>::value, T> halve(T x) { return x >> 1; }
template <class T>
__device__ typename std::enable_if<std::is_signed<T>::value, int>::type sign_of(T x)
{ return (x > 0) - (x < 0); }
template <class T>
__device__ T scale(T x)
{
    if constexpr (std::is_same_v<T, float>) return x * 3;       // float: 3x
    else if constexpr (std::is_unsigned_v<T>) return x + 100;   // unsigned: x + 100
    else return -x;                                              // the rest: -x
}
template <class T>
__global__ void traits(const T *x, T *h, T *s, int *g)
{
    int i = threadIdx.x;
    h[i] = halve(x[i]);
    s[i] = scale(x[i]);
    g[i] = sign_of(x[i]) + (std::is_const<const T>::value ? 10 : 0)
           + (std::is_pointer_v<std::remove_cv_t<const T *const>> ? 20 : 0);
}
template __global__ void traits<float>(const float *, float *, float *, int *);
template __global__ void traits<int>(const int *, int *, int *, int *);
"""


@pytest.mark.parametrize("ctype,dtype", [("float", np.float32), ("int", np.int32)])
def test_type_traits_in_device_code(ctype, dtype):
    # nvcc's cuda_runtime.h (in every .cu file) brings <cmath> and with it <type_traits>:
    # std::enable_if_t, std::is_same_v, ... were 'not declared' or 'the type ... is not
    # supported' in device code
    x = (np.arange(16) - 6).astype(dtype)
    h, s = np.zeros(16, dtype), np.zeros(16, dtype)
    g = np.zeros(16, np.int32)
    run1(TYPE_TRAITS, f"traits<{ctype}>", emulator.In(x), emulator.Out(h), emulator.Out(s),
         emulator.Out(g), block=(16, 1, 1))
    if ctype == "float":
        np.testing.assert_array_equal(h, x / 2)
        np.testing.assert_array_equal(s, x * 3)
    else:
        np.testing.assert_array_equal(h, x >> 1)          # arithmetic shift: -6 >> 1 == -3
        np.testing.assert_array_equal(s, -x)
    np.testing.assert_array_equal(g, np.sign(x) + 30)


def test_enable_if_t_needs_no_include_in_host_code():
    # the host-side template with an enable_if_t return type and its explicit
    # specialisations (a benchmark's run_kernel<id>), in a file that includes only
    # <cuda_runtime.h> and <cstdio>, as nvcc compiles it
    src = r"""
    #include <cuda_runtime.h>
    #include <cstdio>
    template <int Id>
    std::enable_if_t<(Id >= 0 && Id < 3), float> run_kernel(int n) { return float(); }
    #define KERNEL(id) template <> float run_kernel<id>(int n);
    KERNEL(1) KERNEL(2)
    __global__ void one(float *o) { o[threadIdx.x] = 1.0f; }
    """
    o = np.zeros(4, np.float32)
    run1(src, "one", emulator.Out(o), block=(4, 1, 1))
    np.testing.assert_array_equal(o, 1)


def test_variable_templates_of_a_student_and_of_type_traits():
    src = r"""
    #include <type_traits>
    template <int N> constexpr int Pow2 = 1 << N;
    template <class T> constexpr T Half = T(1) / T(2);
    __global__ void k(float *o)
    {
        int i = threadIdx.x;
        bool ref = std::is_same_v<float, decltype(o[0])>;       // float & is not float
        o[i] = Pow2<3> + i + Half<float> + Half<int> + ref
               + std::is_same_v<float, std::remove_reference_t<decltype(o[0])>> * 2
               + std::is_integral<unsigned char>::value * 4;
    }
    """
    o = np.zeros(4, np.float32)
    run1(src, "k", emulator.Out(o), block=(4, 1, 1))
    # 8 + i + 0.5 + 0 (1 / 2 in int) + 0 + 2 + 4
    np.testing.assert_array_equal(o, 14.5 + np.arange(4))


def test_constexpr_functions_in_static_constants_are_evaluated_as_nvcc_does():
    # mumupika's Swizzle<B, M, S>: static constexpr masks computed with a __device__
    # constexpr max/min. nvcc evaluates the calls at compile time; the emulator refused the
    # file ("'helper::max<int>' is not declared"). Now the front end folds them.
    src = r"""
    #include <cstdint>
    namespace helper {
    template <class T> __device__ constexpr auto mx(T a, T b) { return a < b ? b : a; }
    template <class T> __device__ constexpr auto mn(T a, T b) { return a < b ? a : b; }
    }
    constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }
    template <int B, int M, int S> struct Swz {
        static constexpr int BIT_MASK = (1 << B) - 1;
        static constexpr int YYY = BIT_MASK << (M + helper::mx(0, S));
        static constexpr int ZZZ = BIT_MASK << (M - helper::mn(0, S));
        static constexpr uint32_t TILES = cdiv(100, 32) * 1000000000u * 2;   // wraps
        __device__ int get(int o) { return o ^ ((o & YYY) >> S); }
    };
    __global__ void k(int *o, unsigned *t)
    {
        Swz<3, 2, 4> s;
        o[threadIdx.x] = s.get(threadIdx.x * 37) + Swz<3, 2, -1>::ZZZ;
        t[threadIdx.x] = Swz<3, 2, 4>::TILES;
    }
    """
    o = np.zeros(32, np.int32)
    t = np.zeros(32, np.uint32)
    run1(src, "k", emulator.Out(o), emulator.Out(t))
    x = np.arange(32) * 37
    yyy, zzz = 7 << (2 + 4), 7 << (2 + 1)
    np.testing.assert_array_equal(o, (x ^ ((x & yyy) >> 4)) + zzz)
    np.testing.assert_array_equal(t, np.full(32, (4 * 1000000000 * 2) % 2**32))


def test_a_constexpr_function_the_front_end_cannot_fold_is_refused_saying_why():
    src = r"""
    __device__ constexpr int steps(int n) { int s = 0; while (n > 1) { n /= 2; s++; } return s; }
    template <int N> struct Tree { static constexpr int DEPTH = steps(N) + 1;
        __device__ int get() { return DEPTH; } };
    __global__ void k(int *o) { Tree<64> t; o[threadIdx.x] = t.get(); }
    """
    with pytest.raises(UnsupportedFeatureError) as err:
        emulator.SourceModule(src, no_extern_c=True).get_function("k")
    assert "function call in the value of the constant 'Tree<64>::DEPTH'" in str(err.value)

def test_limits_need_no_include_as_cuda_runtime_brings_them():
    # nvcc's cuda_runtime.h (every .cu file) includes <limits.h> through driver_types.h: a
    # file of Nithish-Yadav-31's normalises an LCG draw by UINT_MAX with no #include of it
    src = r"""
    #include <stdio.h>
    __global__ void lcg(unsigned int seed, float *u, unsigned int *w, long long *l)
    {
        unsigned int s = 1664525u * (seed + threadIdx.x) + 1013904223u;
        u[threadIdx.x] = (float)s / (float)UINT_MAX;
        w[threadIdx.x] = UINT_MAX + 1 + threadIdx.x;       // unsigned: wraps to 0 + i
        l[threadIdx.x] = LLONG_MAX - (long long)SHRT_MAX * CHAR_BIT + INT_MIN;
    }
    """
    u = np.zeros(8, np.float32)
    w = np.zeros(8, np.uint32)
    l = np.zeros(8, np.int64)
    run1(src, "lcg", np.uint32(7), emulator.Out(u), emulator.Out(w), emulator.Out(l),
         block=(8, 1, 1))
    s = (np.uint64(1664525) * (7 + np.arange(8, dtype=np.uint64)) + 1013904223) % 2**32
    np.testing.assert_array_equal(u, s.astype(np.float32) / np.float32(2**32 - 1))
    np.testing.assert_array_equal(w, np.arange(8))
    np.testing.assert_array_equal(l, 2**63 - 1 - 32767 * 8 - 2**31)


def test_float_h_and_math_constants_h_give_their_macros():
    src = r"""
    #include <cfloat>
    #include <math_constants.h>
    __global__ void consts(float *f, double *d)
    {
        f[0] = FLT_EPSILON; f[1] = FLT_MIN; f[2] = CUDART_INF_F; f[3] = -CUDART_INF_F;
        f[4] = CUDART_PI_F; f[5] = CUDART_NAN_F; f[6] = CUDART_MAX_NORMAL_F; f[7] = FLT_TRUE_MIN;
        d[0] = DBL_EPSILON; d[1] = DBL_MAX; d[2] = CUDART_INF; d[3] = CUDART_PI;
        d[4] = CUDART_NAN; d[5] = DBL_MIN; d[6] = FLT_MANT_DIG + DBL_DIG; d[7] = CUDART_SQRT_TWO;
    }
    """
    f = np.zeros(8, np.float32)
    d = np.zeros(8, np.float64)
    run1(src, "consts", emulator.Out(f), emulator.Out(d), block=(1, 1, 1))
    fi, di = np.finfo(np.float32), np.finfo(np.float64)
    np.testing.assert_array_equal(f[[0, 1, 2, 3, 4, 6]], [fi.eps, fi.tiny, np.inf, -np.inf,
                                                          np.float32(math.pi), fi.max])
    assert f[7] == np.float32(2.0 ** -149) and math.isnan(f[5])
    assert f.view(np.uint32)[5] == 0x7FFFFFFF              # the header's bit pattern
    np.testing.assert_array_equal(d[[0, 1, 2, 3, 5, 6, 7]], [di.eps, di.max, np.inf, math.pi,
                                                             di.tiny, 24 + 15, math.sqrt(2)])
    assert math.isnan(d[4])


def test_float_h_macros_need_their_include_and_a_students_own_define_wins():
    with pytest.raises(CompileError, match="FLT_EPSILON"):
        emulator.SourceModule("__global__ void k(float *o) { o[0] = FLT_EPSILON; }\n",
                              no_extern_c=True)
    src = r"""
    #define CUDART_PI_F 3.0f
    #include <math_constants.h>
    __global__ void k(float *o) { o[0] = CUDART_PI_F; }
    """
    o = np.zeros(1, np.float32)
    run1(src, "k", emulator.Out(o), block=(1, 1, 1))
    assert o[0] == 3


def test_cub_is_named_where_clang_suggests_a_name_of_the_source():
    # VVinstonSmith's softmax has its own BlockAllReduce beside cub::BlockReduce: clang
    # says "did you mean 'BlockAllReduce'?", and the message lost the word cub
    src = r"""
    #include <cub/cub.cuh>
    template <int N> __device__ float BlockAllReduce(float v) { return v; }
    __global__ void k(float *o)
    {
        typedef cub::BlockReduce<float, 128> Reduce;
        o[threadIdx.x] = BlockAllReduce<1>(o[threadIdx.x]);
    }
    """
    with pytest.raises(CompileError) as err:
        emulator.SourceModule(src, no_extern_c=True).get_function("k")
    assert "does not support cub in device code ('cub::BlockReduce')" in str(err.value)


def test_a_host_struct_with_a_member_of_another_host_struct_is_set_aside():
    # a host struct holding another whose std::string member makes it host code (as in
    # LessUp's benchmark headers): the outer one was lowered anyway and the whole file
    # refused with "unknown struct 'Report'" and no line
    src = r"""
    #include <string>
    struct Report { bool csv = true; std::string name = "out.csv"; };
    struct Config { int runs = 20; Report report; };
    struct Pair { float a, b; };
    struct Holder { Pair p; };                       // device code uses this one
    __global__ void k(const float *x, float *o)
    {
        Holder h{{x[threadIdx.x], 2.0f}};
        o[threadIdx.x] = h.p.a * h.p.b;
    }
    int main() { Config c; return c.runs; }
    """
    x = np.arange(8, dtype=np.float32)
    o = np.zeros(8, np.float32)
    run1(src, "k", emulator.In(x), emulator.Out(o), block=(8, 1, 1))
    np.testing.assert_array_equal(o, 2 * x)


def test_device_code_using_a_struct_with_a_host_member_is_refused_at_its_line():
    src = r"""
    #include <string>
    struct Named { std::string name; float v; };
    struct Outer { Named n; };
    __global__ void k(float *o) { Outer q; o[0] = q.n.v; }
    """
    with pytest.raises(CompileError) as err:
        emulator.SourceModule(src, no_extern_c=True).get_function("k")
    assert err.value.line is not None
