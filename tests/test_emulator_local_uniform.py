"""Register arrays indexed alike in every thread (`acc[i]` with a loop counter i): the
emulator's one-column path for such local accesses, against NumPy and against the general
path (an index that differs per thread), under divergence, and with unset reads warned."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tilinglib.emulator import In, Out, SourceModule

SOURCE = r"""
__global__ void k(int n, const float* x, float* y)
{
    int t = threadIdx.x;
    float acc[4];
    for (int i = 0; i < 4; ++i) acc[i] = x[t] * (i + 1);      // uniform index
    if (t % 3 == 0) {                                         // some lanes only
        for (int i = 0; i < 4; ++i) acc[i] += 1.0f;
    }
    double d[2];
    d[0] = x[t]; d[1] = 2.0 * x[t];
    float s = 0.0f;
    for (int i = 0; i < 4; ++i) s += acc[i];
    s += acc[t % 4];                                           // a per-thread index
    y[t] = s + (float)(d[0] + d[1]);
}
"""


def test_uniform_and_per_thread_local_indices_agree_with_numpy():
    x = np.arange(64, dtype=np.float32) / 7
    y = np.zeros(64, dtype=np.float32)
    f = SourceModule(SOURCE).get_function("k")
    f(np.int32(64), In(x), Out(y), block=(64, 1, 1), grid=(1, 1))
    acc = x[:, None] * np.arange(1, 5, dtype=np.float32)
    acc[np.arange(64) % 3 == 0] += 1
    want = acc.sum(axis=1) + acc[np.arange(64), np.arange(64) % 4] + 3 * x.astype(np.float64)
    np.testing.assert_allclose(y, want, rtol=1e-5)


@pytest.mark.parametrize("guard, readers", [("t < 8", 56), ("t >= 0", 0)])
def test_a_uniform_read_of_an_element_set_in_some_lanes_only_warns_for_the_others(guard,
                                                                                   readers):
    src = r"""
    __global__ void k(float* y)
    {
        int t = threadIdx.x;
        float a[2];
        if (GUARD) a[1] = 1.0f;
        y[t] = a[1];
    }
    """.replace("GUARD", guard)
    y = np.zeros(64, dtype=np.float32)
    f = SourceModule(src).get_function("k")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(Out(y), block=(64, 1, 1), grid=(1, 1))
    unset = [w for w in caught if "before" in str(w.message) or "unset" in str(w.message).lower()
             or "no value" in str(w.message)]
    assert bool(unset) == bool(readers), [str(w.message) for w in caught]
    if readers:
        assert "a[1]" in str(unset[0].message)


SHARED_PATTERNS = r"""
__global__ void k(float* out)
{
    __shared__ float s[4096];
    int t = threadIdx.x;
    for (int i = t; i < 4096; i += blockDim.x) s[i] = i;
    __syncthreads();
    float acc = 0.0f;
    for (int k = 0; k < 8; ++k) {
        float4 a = *(const float4*)&s[(t * 4 + 16 * k) % 4096];       // shifted: reused
        float4 b = *(const float4*)&s[(t * (4 * k + 4)) % 4096];      // stride changes
        float2 c = *(const float2*)&s[(2 * (t / (k + 1))) % 4096];    // broadcasts change
        float d = s[(t * (k + 1)) % 4096];
        acc += a.x + b.y + c.x + d;
    }
    __syncthreads();
    *(float2*)&s[(t * 2 + 64 * (t & 1)) % 4096] = make_float2(acc, acc);
    out[t] = acc;
}
"""


def test_reused_shared_wavefronts_equal_counting_every_access(monkeypatch):
    """A full warp's shared access reuses its line's previous wavefronts only for a uniform
    shift: the counters equal those of counting every access afresh."""
    from tilinglib.toolchain.runtime import access

    def counts():
        f = SourceModule(SHARED_PATTERNS).get_function("k")
        out = np.zeros(128, dtype=np.float32)
        f(Out(out), block=(128, 1, 1), grid=(2, 1))
        r = f.last_report
        return (r.shared_load_instructions, r.shared_load_wavefronts, r.shared_load_bank_conflicts,
                r.shared_store_wavefronts, r.shared_store_bank_conflicts), out

    reused, out1 = counts()
    monkeypatch.setattr(access.MemoryAccess, "shared_counts", property(lambda self: {},
                                                                       lambda self, v: None),
                        raising=False)
    fresh, out2 = counts()
    assert reused == fresh and np.array_equal(out1, out2)
    assert fresh[2] > 0                       # the pattern has conflicts to count
