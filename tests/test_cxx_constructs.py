"""C++ constructs real CUDA code is written in, each in a small kernel written for this file:
run on the emulator and checked against NumPy (or a hand derivation), or refused at compile
time with a message that names the construct, the student's line and what to write instead.
Never an "internal ... error" or a Python exception from inside tilinglib (issue 11).

Every kernel is `k(float* out, const float* a)` launched with 64 threads in one block, `a`
holding 0, 0.5, 1, ... 31.5, unless it says otherwise."""

import warnings

import numpy as np
import pytest

from tilinglib.emulator import In, InOut, Out, SourceModule
from tilinglib.errors import (CompileError, KernelArgumentError, UninitializedReadWarning,
                              UnsupportedFeatureError)

N = 64
A = np.arange(N, dtype=np.float32) * np.float32(0.5)
T = np.arange(N)


def run(src, *extra, name="k", dtype=np.float32, block=(N, 1, 1), **launch):
    """`out` after one launch of `name` on `out`, `a` and `extra`."""
    out = np.zeros(N, dtype)
    f = SourceModule(src).get_function(name)
    f(Out(out), In(A), *extra, block=block, grid=(1, 1), **launch)
    return out, f


def refused(src, line, *words, cls=UnsupportedFeatureError):
    """The compile error of `src`: a `cls` at `line` whose message holds each of `words`."""
    with pytest.raises(cls) as info:
        SourceModule(src)
    err = info.value
    assert err.line == line, str(err)
    text = str(err)
    assert "internal" not in text, text
    for w in words:
        assert w in text, text
    return err


# ----------------------------------------------------------------------------------------
# 1. structs with array members
# ----------------------------------------------------------------------------------------

FRAG = r"""
struct Frag { float v[4]; int n; };
__global__ void k(float *out, const float *a) { Frag f; for (int i = 0; i < 4; ++i) f.v[i] = i;
                                f.n = 4; out[threadIdx.x] = f.v[3] + f.n; }
"""


def test_the_issue_example_a_struct_with_an_array_member():
    out, _ = run(FRAG)
    np.testing.assert_array_equal(out, np.full(N, 7.0, np.float32))


MEMBER_LOOP = r"""
struct Acc { float v[8]; int count; };
__global__ void k(float* out, const float* a) {
  Acc acc = {};
  int t = threadIdx.x;
  for (int i = 0; i < 8; ++i) acc.v[(t + i) % 8] += a[t] * i;     // variable index
  for (int i = 0; i < 8; ++i) { acc.count++; acc.v[i] *= 2.0f; }
  float s = 0.0f;
  for (int i = 0; i < 8; ++i) s += acc.v[i] * (i + 1);
  out[t] = s + acc.count;
}
"""


def test_a_member_array_indexed_by_a_loop_variable_with_compound_assignments():
    out, _ = run(MEMBER_LOOP)
    want = np.zeros(N, np.float32)
    for t in range(N):
        v = np.zeros(8, np.float32)
        for i in range(8):
            v[(t + i) % 8] += A[t] * np.float32(i)
        v *= np.float32(2)
        want[t] = np.float32(sum(v[i] * np.float32(i + 1) for i in range(8))) + 8
    np.testing.assert_allclose(out, want, rtol=1e-6)


INITIALISERS = r"""
struct Frag { float v[4]; int n; };
struct Pair { Frag lo, hi; float w; };
__global__ void k(float* out, const float* a) {
  Frag z = {};
  Frag f = { {1, 2, 3, 4}, 4 };
  Frag g{ {a[threadIdx.x]}, 1 };           // the rest of g.v is 0
  Pair p = { f, { {5, 6}, 2 }, 0.5f };
  Frag fs[2] = {};
  out[threadIdx.x] = z.v[3] + z.n + f.v[2] * 10 + f.n * 100 + g.v[0] + g.v[3] + g.n
                     + p.lo.v[1] * 1000 + p.hi.v[1] * 10000 + p.hi.v[2] + p.w + fs[1].v[2];
}
"""


def test_brace_initialisers_empty_nested_and_partial():
    out, _ = run(INITIALISERS)
    want = 30 + 400 + A + 1 + 2000 + 60000 + 0.5
    np.testing.assert_allclose(out, want.astype(np.float32))


COPIES = r"""
struct Frag { float v[4]; int n; };
__device__ Frag make(float s) { Frag f = { {s, 2 * s, 3 * s, 4 * s}, 4 }; return f; }
__device__ float total(Frag f) { float t = 0; for (int i = 0; i < f.n; ++i) t += f.v[i]; return t; }
__device__ Frag bumped(Frag f, int i) { f.v[i] += 10.0f; return f; }   // f is a copy
__global__ void k(float* out, const float* a) {
  int t = threadIdx.x;
  Frag x = make(a[t]);
  Frag y = x;                  // copy by initialisation
  y.v[0] = -1.0f;
  Frag z;
  z = bumped(y, t % 4);        // copy by assignment, of a returned struct
  out[t] = x.v[0] + total(y) * 10 + total(z) * 100 + make(1.0f).v[t % 4] * 1000;
}
"""


def test_copies_by_value_parameters_and_returns_keep_value_semantics():
    out, _ = run(COPIES)
    ty = -1 + 2 * A + 3 * A + 4 * A
    want = A + ty * 10 + (ty + 10) * 100 + (T % 4 + 1) * 1000
    np.testing.assert_allclose(out, want.astype(np.float32), rtol=1e-6)


TERNARY = r"""
struct Frag { float v[2]; int n; };
__global__ void k(float* out, const float* a) {
  int t = threadIdx.x;
  Frag p = { {1, 2}, 3 }, q = { {10, 20}, 30 };
  Frag r = t % 2 ? p : q;
  out[t] = r.v[1] + r.n + (t < 32 ? p : q).v[0] * 100;
}
"""


def test_a_ternary_choosing_between_structs_per_thread():
    out, _ = run(TERNARY)
    want = np.where(T % 2 == 1, 2 + 3, 20 + 30) + np.where(T < 32, 100, 1000)
    np.testing.assert_array_equal(out, want.astype(np.float32))


NESTED = r"""
struct Inner { float a; float b[2]; };
struct Outer { Inner in[2]; float4 q; int tag; };
__global__ void k(float* out, const float* a) {
  int t = threadIdx.x;
  Outer o = {};
  o.in[1].b[t % 2] = a[t];
  o.in[0].a = 3.0f;
  o.q.w = 2.0f;
  o.tag = t;
  Inner copy = o.in[1];
  out[t] = copy.b[0] + copy.b[1] * 10 + o.in[0].a * 100 + o.q.w * 1000 + o.tag * 10000;
}
"""


def test_nested_structs_and_arrays_of_structs_as_members():
    out, _ = run(NESTED)
    want = np.where(T % 2 == 0, A, A * 10) + 300 + 2000 + T * 10000
    np.testing.assert_allclose(out, want.astype(np.float32))


VECTORS = r"""
__global__ void k(float* out, const float* a) {
  int t = threadIdx.x;
  float4 r[2] = {};
  float2 s[3] = { make_float2(1, 2), make_float2(3, 4) };
  r[1].y = a[t];
  r[t % 2].x += 5.0f;
  out[t] = r[0].x + r[1].x * 10 + r[1].y * 100 + s[1].y * 1000 + s[2].x;
}
"""


def test_local_arrays_of_vector_types():
    out, _ = run(VECTORS)
    want = np.where(T % 2 == 0, 5, 50) + A * 100 + 4000
    np.testing.assert_allclose(out, want.astype(np.float32))


SHARED_STRUCTS = r"""
struct Frag { float v[4]; int n; };
__global__ void k(float* out, const float* a) {
  __shared__ Frag s[64];
  int t = threadIdx.x;
  for (int i = 0; i < 4; ++i) s[t].v[i] = a[t] + i;
  s[t].n = t;
  __syncthreads();
  Frag mine = s[(t + 1) % 64];
  out[t] = mine.v[2] + mine.n;
}
"""


def test_an_array_of_structs_in_shared_memory_counts_each_member_access():
    out, f = run(SHARED_STRUCTS)
    nxt = (T + 1) % 64
    np.testing.assert_allclose(out, (A[nxt] + 2 + nxt).astype(np.float32))
    r = f.last_report
    # Stores: 4 floats and one int per thread, each a 32-lane STS.32 at a 20-byte stride
    # (5 words: coprime with 32 banks, no conflict): 5 instructions x 2 warps.
    assert (r.shared_store_requests, r.shared_store_wavefronts) == (10, 10)
    # The copy 'mine = s[...]': as nvcc copies a 4-byte-aligned struct, 5 LDS.32 per warp.
    assert (r.shared_load_requests, r.shared_load_wavefronts) == (10, 10)
    assert r.shared_bank_conflicts == 0


GLOBAL_STRUCTS = r"""
struct Frag { float v[4]; int n; };
__global__ void k(float* out, const float* a, Frag* g) {
  int t = threadIdx.x;
  Frag* p = g + t;
  p->n = t;
  for (int i = 0; i < 4; ++i) p->v[i] = a[t] * i;
  out[t] = g[t].v[3] + g[t].n;
}
"""


def test_structs_in_global_memory_through_pointers_count_the_bytes_touched():
    g = np.zeros(N * 5, np.float32)              # 64 Frags of 20 bytes
    out, f = run(GLOBAL_STRUCTS, InOut(g))
    np.testing.assert_allclose(out, A * 3 + T)
    frags = g.reshape(N, 5)
    np.testing.assert_allclose(frags[:, :4], A[:, None] * np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(frags[:, 4].view(np.int32), T)
    r = f.last_report
    # 5 member stores + out: 6 per warp; 4-byte members at a 20-byte stride: a warp's 32
    # lanes cover 640 bytes, 20 sectors of 32 bytes, for each member; out is 4 sectors.
    assert r.global_store_requests == 12
    assert r.global_store_sectors == 2 * (5 * 20 + 4)
    assert r.global_store_bytes == N * 4 * 6
    # a[t] four times (4 sectors each), g[t].v[3] and g[t].n (20 sectors each)
    assert r.global_load_requests == 2 * 6
    assert r.global_load_bytes == N * 4 * 6


PARAMS = r"""
struct Params { int dims[3]; float scale; };
__global__ void k(float* out, const float* a, Params p) {
  int t = threadIdx.x;
  p.dims[0] += 1;                                  // a parameter is the kernel's own copy
  out[t] = a[t] * p.scale + p.dims[t % 3];
}
"""

PARAMS_DTYPE = np.dtype({"names": ["dims", "scale"], "formats": [("<i4", 3), "<f4"],
                         "offsets": [0, 12], "itemsize": 16})


def test_a_struct_with_an_array_member_passed_by_value_to_a_kernel():
    p = np.zeros(1, PARAMS_DTYPE)[0]
    p["dims"], p["scale"] = [10, 20, 30], 2.0
    out, _ = run(PARAMS, p)
    np.testing.assert_allclose(out, A * 2 + np.array([11, 20, 30])[T % 3])


def test_a_struct_argument_of_the_wrong_size_is_a_clear_error():
    with pytest.raises(KernelArgumentError, match=r"parameter 'p' is a Params passed by value "
                                                  r"\(16 bytes.*got 8 bytes"):
        run(PARAMS, np.zeros(2, np.float32))
    with pytest.raises(KernelArgumentError, match=r"got float"):
        run(PARAMS, 1.5)


def test_sizeof_follows_nvccs_layout():
    src = r"""
struct Frag { float v[3]; int n; };
struct Mixed { char c; double d; };
struct Vec { float4 q; float r; };
struct Deep { Mixed m[2]; short s; };
__global__ void k(float* out, const float* a) {
  Frag f;
  out[threadIdx.x] = 0;
  if (threadIdx.x > 0) return;
  out[0] = sizeof(Frag); out[1] = sizeof(Mixed); out[2] = sizeof(Vec);
  out[3] = sizeof(Deep); out[4] = sizeof(f.v) / sizeof(f.v[0]); out[5] = alignof(Vec);
}
"""
    out, _ = run(src)
    # float[3] + int: 16; char + pad 7 + double: 16; float4 (align 16) + float: 32;
    # 2 x 16 + short, rounded to 8: 40; 3 elements; float4's alignment
    np.testing.assert_array_equal(out[:6], [16, 16, 32, 40, 3, 16])


UNSET_MEMBER = r"""
struct Frag { float v[4]; int n; };
__global__ void k(float* out, const float* a) {
  Frag f;
  f.v[0] = 1.0f; f.n = 2;
  Frag fs[2];
  fs[0] = f;
  out[threadIdx.x] = f.v[0] + f.n + fs[0].v[0];
  out[threadIdx.x] += f.v[1];
  out[threadIdx.x] += fs[1].n;
}
"""


def test_reading_an_unset_member_warns_naming_it_and_copies_do_not():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(UNSET_MEMBER)
    got = [str(w.message) for w in caught if issubclass(w.category, UninitializedReadWarning)]
    assert len(got) == 2, got            # not 'fs[0] = f' (a copy), not f.v[0] / f.n
    assert "'f.v[1]' is read at line 9" in got[0]
    assert "'Frag f = {};' zeroes them all" in got[0]
    assert "'fs[1].n' is read at line 10" in got[1]
