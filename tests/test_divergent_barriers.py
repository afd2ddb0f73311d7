"""`__syncthreads()` in conditional code, counted as the hardware counts it (barriers.py,
statements.py): threads that exited count as arrived, and a barrier in both branches of a
divergent if is the GPU's one barrier 0. The launch has the GPU's result and a
DivergentBarrierWarning with the CUDA guide's rule; hazards="raise" makes it a
BarrierError; a barrier that live threads never all reach stays a BarrierError."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from tilinglib.emulator import In, InOut, Out, SourceModule
from tilinglib.errors import BarrierError, DivergentBarrierWarning

GUIDE = ("__syncthreads() is allowed in conditional code but only if the conditional "
         "evaluates identically across the entire thread block")

# A 3-point stencil that returns early past the end (the typical real case), at a size
# that is not a multiple of the block.
EARLY_RETURN = r"""
__global__ void stencil(const float *in, float *out, int n) {
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
# The same with the whole body under the guard: the threads past the end skip it and leave.
GUARDED = EARLY_RETURN.replace("if (i >= n) return;", "if (i < n) {").replace(
    "s[threadIdx.x + 2];\n}", "s[threadIdx.x + 2];\n    }\n}")


def _stencil(src, n, **kw):
    x = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    f = SourceModule(src).get_function("stencil")
    f(In(x), Out(out), np.int32(n), block=(256, 1, 1), grid=((n + 255) // 256, 1), **kw)
    want = x + np.r_[0, x[:-1]] + np.r_[x[1:], 0]
    return f, out, want


@pytest.mark.parametrize("src, kind, line", [(EARLY_RETURN, "barrier-after-exit", 9),
                                             (GUARDED, "barrier-in-divergent-code", 9)])
def test_threads_that_leave_count_as_arrived(src, kind, line):
    with pytest.warns(DivergentBarrierWarning) as caught:
        f, out, want = _stencil(src, 1000)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    (h,) = f.last_report.hazards
    assert (h.kind, h.line, h.block, h.count) == (kind, line, (3, 0, 0), 1)
    text = str(caught[0].message)
    assert GUIDE in text and "may hang" in text and "H200" in text
    assert f.last_report.barriers == 4                # one per block
    with pytest.raises(BarrierError, match=re.escape(GUIDE)) as info:
        _stencil(src, 1000, hazards="raise")
    assert info.value.line == line and info.value.block == (3, 0, 0)


def test_a_size_that_is_a_multiple_of_the_block_has_no_hazard():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f, out, want = _stencil(GUARDED, 1024)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert f.last_report.hazards == ()


# Half the block loads the next tile while the other half adds up the current one (the
# warp-specialised double buffer of SGEMM_CUDA's kernel 11, in small): one barrier in each
# branch per step, the GPU's one barrier 0.
PRODUCER_CONSUMER = r"""
__global__ void pipe(const float *in, float *out, int steps) {
    __shared__ float s[2][32];
    int t = threadIdx.x;
    float acc = 0.0f;
    if (t < 32) s[0][t] = in[t];
    __syncthreads();
    for (int k = 1; k <= steps; ++k) {
        if (t < 32) {
            if (k < steps) s[k % 2][t] = in[k * 32 + t];
            __syncthreads();
        } else {
            acc += s[(k - 1) % 2][t - 32];
            __syncthreads();
        }
    }
    if (t >= 32) out[t - 32] = acc;
}
"""


def _pipe(steps, **kw):
    x = np.random.default_rng(7).standard_normal(steps * 32).astype(np.float32)
    out = np.zeros(32, np.float32)
    f = SourceModule(PRODUCER_CONSUMER).get_function("pipe")
    f(In(x), Out(out), np.int32(steps), block=(64, 1, 1), grid=(2, 1), **kw)
    return f, x, out


def test_barriers_in_both_branches_are_one_barrier():
    with pytest.warns(DivergentBarrierWarning, match="two branches of an if") as caught:
        f, x, out = _pipe(5)
    np.testing.assert_allclose(out, x.reshape(5, 32).astype(np.float64).sum(0), rtol=1e-5)
    r = f.last_report
    (h,) = r.hazards                                # no race: the barriers order the buffers
    # 2 blocks took both ways at each of the 5 steps
    assert (h.kind, h.line, h.other_line, h.count) == ("barrier-in-divergent-code", 11, 14, 10)
    assert GUIDE in str(caught[0].message)
    # per block: the first barrier and one per step, the two branches' counted once
    assert r.barriers == 2 * (1 + 5)
    assert (r.shared_store_instructions, r.shared_load_instructions) == (2 * 5, 2 * 5)
    with pytest.raises(BarrierError, match="two branches of an if") as info:
        _pipe(5, hazards="raise")
    assert info.value.line == 11


def test_a_condition_the_same_in_the_whole_block_is_no_hazard():
    src = r"""
    __global__ void k(float *out) {
        __shared__ float s[64];
        if (blockIdx.x % 2) { s[threadIdx.x] = 1.0f; __syncthreads(); out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x]; }
        else { s[threadIdx.x] = 2.0f; __syncthreads(); out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x] + 1.0f; }
    }"""
    out = np.zeros(4 * 64, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = SourceModule(src).get_function("k")
        f(Out(out), block=(64, 1, 1), grid=(4, 1))
    assert out.reshape(4, 64)[:, 0].tolist() == [3, 1, 3, 1]
    assert f.last_report.hazards == () and f.last_report.barriers == 4


def test_branches_with_different_numbers_of_barriers_stay_an_error():
    src = r"""
    __global__ void k(float *out) {
        for (int r = 0; r < 2; ++r) {
            if (threadIdx.x < 32) {
                out[threadIdx.x] += 1.0f;
                __syncthreads();
                __syncthreads();
            } else {
                __syncthreads();
            }
        }
    }"""
    with pytest.raises(BarrierError, match="reach different numbers of __syncthreads") as info:
        SourceModule(src).get_function("k")(InOut(np.zeros(64, np.float32)),
                                            block=(64, 1, 1), grid=(1, 1))
    assert info.value.line == 7 and info.value.thread == (32, 0, 0)


def test_a_barrier_the_skipping_threads_would_meet_again_stays_an_error():
    # the threads past n skip the load's barrier but reach the loop's next one: never the
    # barrier the others wait at (a GPU would mix them up, or hang)
    src = r"""
    __global__ void k(const float *in, float *out, int n) {
        __shared__ float s[64];
        float acc = 0.0f;
        for (int r = 0; r < 2; ++r) {
            if (threadIdx.x < n) {
                s[threadIdx.x] = in[threadIdx.x] * r;
                __syncthreads();
            }
            acc += s[0];
            __syncthreads();
        }
        out[threadIdx.x] = acc;
    }"""
    with pytest.raises(BarrierError, match="was reached by 40 of the 64 threads") as info:
        SourceModule(src).get_function("k")(In(np.ones(64, np.float32)),
                                            Out(np.zeros(64, np.float32)), np.int32(40),
                                            block=(64, 1, 1), grid=(1, 1))
    assert info.value.line == 8 and info.value.thread == (40, 0, 0)
