"""Hazards on the emulator (tilinglib.toolchain.measure.races and the barrier checks in execute):
shared-memory races between barriers, uninitialised shared reads, barriers reached by part
of a block, and the step budget."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from emulator_helpers import launch
from tilinglib import kernels
from tilinglib.emulator import In, Out, RaceWarning, SourceModule
from tilinglib.errors import (BarrierError, DivergentBarrierWarning, RaceError,
                              StepBudgetExceeded)

SEED = kernels.load("sgemm_tiled")
FIRST_BARRIER = "        // Wait until the whole tile is loaded before anyone reads it.\n" \
                "        __syncthreads();\n"
SECOND_BARRIER = "        // Wait until everyone is done with this tile before the next loads " \
                 "overwrite it.\n        __syncthreads();\n"


def _without(barrier):
    assert barrier in SEED
    # Keep the line count: replace the barrier with an empty statement.
    return SEED.replace(barrier, barrier.replace("__syncthreads();", ";"))


def _run_tiled(source, N=32, tile=16, **kw):
    f = SourceModule(source, options=[f"-DTILE={tile}"]).get_function("sgemmTiled")
    rng = np.random.default_rng(0)
    A = rng.standard_normal((N, N)).astype(np.float32)
    C = np.zeros_like(A)
    f(np.int32(N), In(A), In(A), Out(C), block=(tile, tile, 1), grid=(N // tile, N // tile),
      **kw)
    return f, C, A


def test_seed_kernel_is_race_free():
    f, C, A = _run_tiled(SEED, hazards="raise")
    assert f.last_report.hazards == ()
    assert np.allclose(C, A @ A, rtol=1e-4, atol=1e-4)


def test_first_barrier_removed_is_read_after_write():
    with pytest.raises(RaceError) as info:
        _run_tiled(_without(FIRST_BARRIER), hazards="raise")
    e = info.value
    text = str(e)
    assert text.startswith("sgemmTiled: Race (read-after-write)")
    assert "Write at kernel.cu:27" in text and "Read at kernel.cu:33" in text
    assert e.kernel == "sgemmTiled" and e.line == 33 and e.block == (0, 0, 0)
    assert "As[0][0]" in text
    assert "__syncthreads()" in text


def test_second_barrier_removed_is_write_after_read():
    f, _, _ = _run_tiled(_without(SECOND_BARRIER), hazards="ignore")
    assert f.last_report.hazards == ()          # "ignore" does not track
    with pytest.warns(RaceWarning, match="write-after-read"):
        f, _, _ = _run_tiled(_without(SECOND_BARRIER), hazards="warn")
    kinds = {(h.kind, h.array, h.line, h.other_line) for h in f.last_report.hazards}
    assert kinds == {("write-after-read", "As", 27, 33), ("write-after-read", "Bs", 28, 33)}
    # Every tile after the first: (N/TILE - 1) tiles x N*N threads, for each array.
    counts = {h.array: h.count for h in f.last_report.hazards}
    assert counts == {"As": 1 * 32 * 32, "Bs": 1 * 32 * 32}


def test_write_after_write():
    src = """
    __global__ void k(int* out) {
        __shared__ int s[4];
        s[threadIdx.x % 4] = threadIdx.x;
        __syncthreads();
        out[threadIdx.x] = s[threadIdx.x % 4];
    }"""
    with pytest.raises(RaceError, match="write-after-write"):
        launch(src, "k", np.zeros(8, np.int32), block=(8, 1, 1), hazards="raise")


def test_same_thread_rewrites_are_not_races():
    src = """
    __global__ void k(int* out) {
        __shared__ int s[32];
        s[threadIdx.x] = 1;
        s[threadIdx.x] += threadIdx.x;
        out[threadIdx.x] = s[threadIdx.x];
        __syncthreads();
        s[31 - threadIdx.x] = 0;
    }"""
    out = np.zeros(32, np.int32)
    f = launch(src, "k", out, hazards="raise")
    assert list(out) == list(range(1, 33)) and f.last_report.hazards == ()


def test_uninitialised_shared_read():
    src = """
    __global__ void k(float* out) {
        __shared__ float s[64];
        s[threadIdx.x] = 1.0f;
        __syncthreads();
        out[threadIdx.x] = s[threadIdx.x + 32];
    }"""
    with pytest.warns(RaceWarning, match="Uninitialized __shared__ read of s\\[32\\]"):
        f = launch(src, "k", np.zeros(32, np.float32), block=(32, 1, 1))
    (h,) = f.last_report.hazards
    assert h.kind == "uninitialized-read" and h.count == 32 and h.line == 6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = launch(src, "k", np.zeros(32, np.float32), block=(32, 1, 1),
                   check_uninitialized=False)
    assert f.last_report.hazards == ()


def test_barrier_in_divergent_branch_is_an_error():
    # the threads that skip the if reach a later barrier (a GPU would mix the two up, or
    # hang): never the barrier the others wait at
    src = """
    __global__ void k(float* out) {
        if (threadIdx.x < 16) {
            out[threadIdx.x] = 1.0f;
            __syncthreads();
        }
        __syncthreads();
    }"""
    with pytest.raises(BarrierError) as info:
        launch(src, "k", np.zeros(64, np.float32), block=(64, 1, 1))
    e = info.value
    assert e.line == 5 and e.thread == (16, 0, 0) and e.block == (0, 0, 0)
    assert "reached by 16 of the 64 threads" in str(e)


def test_barrier_after_some_threads_returned_is_reported_as_undefined():
    src = """
    __global__ void k(float* out, int n) {
        __shared__ float s[64];
        int i = threadIdx.x;
        if (i >= n) return;
        s[i] = 1.0f;
        __syncthreads();
        out[i] = s[(i + 1) % n];
    }"""
    out = np.zeros(64, np.float32)
    with pytest.warns(DivergentBarrierWarning, match="after some of its threads returned"):
        f = launch(src, "k", out, np.int32(40), block=(64, 1, 1))
    (h,) = f.last_report.hazards
    assert h.kind == "barrier-after-exit" and h.line == 7
    assert (out[:40] == 1).all()


def test_step_budget_stops_a_runaway_loop():
    src = """
    __global__ void k(int* out) {
        int i = 0;
        while (out[0] == 0) { i++; }
        out[1] = i;
    }"""
    with pytest.raises(StepBudgetExceeded) as info:
        launch(src, "k", np.zeros(2, np.int32), block=(1, 1, 1), max_steps=1000)
    assert info.value.line == 4 and "1,000 loop iterations" in str(info.value)


def test_raise_mode_leaves_the_module_usable():
    f = SourceModule(_without(FIRST_BARRIER), options=["-DTILE=16"]).get_function("sgemmTiled")
    A = np.ones((32, 32), np.float32)
    for _ in range(2):
        with pytest.raises(RaceError):
            f(np.int32(32), In(A), In(A), Out(np.zeros_like(A)), block=(16, 16, 1),
              grid=(2, 2), hazards="raise")
    ok, C, A2 = _run_tiled(SEED)
    assert np.allclose(C, A2 @ A2, rtol=1e-4, atol=1e-4)


def test_bad_hazards_value():
    f = SourceModule(SEED).get_function("sgemmTiled")
    with pytest.raises(ValueError, match="hazards"):
        f(np.int32(32), In(np.ones((32, 32), np.float32)), In(np.ones((32, 32), np.float32)),
          Out(np.zeros((32, 32), np.float32)), block=(32, 32, 1), grid=(1, 1), hazards="loud")


WARP_REDUCE = """
__global__ void warp_reduce(const float* in, float* out)
{
    __shared__ float s[64];
    int tid = threadIdx.x;
    s[tid] = in[tid] + in[tid + 64];
    __syncthreads();
    if (tid < 32) {
        for (int offset = 32; offset > 0; offset >>= 1) {
            float t = tid < offset ? s[tid + offset] : 0.0f;
            SYNC;
            s[tid] += t;
            SYNC;
        }
    }
    if (tid == 0) out[0] = s[0];
}
"""


def _warp_reduce(sync, **kw):
    x = np.arange(128, dtype=np.float32)
    out = np.zeros(1, np.float32)
    f = launch(WARP_REDUCE, "warp_reduce", x, out, block=(64, 1, 1),
               options=[f"-DSYNC={sync}"], **kw)
    return f, out[0], x.sum()


def test_syncwarp_orders_accesses_within_a_warp():
    f, got, want = _warp_reduce("__syncwarp()", hazards="raise")
    assert got == want and f.last_report.hazards == ()


def test_warp_synchronous_code_without_syncwarp_is_a_race():
    # Legal before Volta, a race since: lanes of a warp are not in lockstep any more.
    with pytest.raises(RaceError, match="read-after-write|write-after-read"):
        _warp_reduce("(void)0", hazards="raise")


def test_syncwarp_does_not_order_accesses_across_warps():
    src = """
    __global__ void k(int* out) {
        __shared__ int s[64];
        s[threadIdx.x] = threadIdx.x;
        __syncwarp();
        out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
    }"""
    with pytest.raises(RaceError) as info:
        launch(src, "k", np.zeros(64, np.int32), block=(64, 1, 1), hazards="raise")
    assert "read-after-write" in str(info.value) and info.value.thread == (31, 0, 0)


def test_a_runaway_loop_is_stopped_and_the_outer_loop_is_blamed():
    """t is never advanced: the tile loop (not the inner k loop) runs forever."""
    import numpy as np

    from tilinglib import kernels
    from tilinglib.emulator import In, Out, SourceModule
    from tilinglib.errors import StepBudgetExceeded

    src = kernels.load("sgemm_tiled").replace("++t)", "t + 1)")
    line = next(i for i, text in enumerate(src.splitlines(), 1) if "t + 1)" in text)
    f = SourceModule(src, options=["-DTILE=8"]).get_function("sgemmTiled")
    A = np.ones((16, 16), np.float32)
    C = np.empty_like(A)
    with pytest.raises(StepBudgetExceeded, match=rf"the loop at kernel.cu:{line} had run") as info:
        f(np.int32(16), In(A), In(A), Out(C), block=(8, 8, 1), grid=(2, 2), max_steps=2000)
    assert info.value.line == line
    # The wall-clock net, for launches where each iteration is slow: same report.
    with pytest.raises(StepBudgetExceeded, match=r"ran for more than 0.5 s"):
        f(np.int32(16), In(A), In(A), Out(C), block=(8, 8, 1), grid=(2, 2), max_seconds=0.5)
