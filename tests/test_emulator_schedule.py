"""The adversarial warp schedule (tilinglib.toolchain.runtime.schedule): launch options, the orders it
produces (checked against NumPy models of the same order), determinism, errors from a warp,
and what it refuses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from emulator_helpers import launch
from tilinglib import kernels
from tilinglib.emulator import In, Out, SourceModule
from tilinglib.errors import (BarrierError, LaunchError, MemoryAccessError,
                              UnsupportedFeatureError)
from tilinglib.toolchain.runtime.schedule import busy_threads
from tilinglib.sgemm import without_barrier

SEED = kernels.load("sgemm_tiled")


def _tiled(source, N, tile, **kw):
    f = SourceModule(source, options=[f"-DTILE={tile}"]).get_function("sgemmTiled")
    rng = np.random.default_rng(1)
    A = rng.standard_normal((N, N)).astype(np.float32)
    B = rng.standard_normal((N, N)).astype(np.float32)
    C = np.full((N, N), -7.0, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(np.int32(N), In(A), In(B), Out(C), block=(tile, tile, 1),
          grid=(N // tile, N // tile), **kw)
    return f, A, B, C


def _fma(s, a, b):
    """float32 s + a * b rounded once, as nvcc's default -fmad=true contracts the kernel's
    `sum += As[ty][k] * Bs[k][tx]` (the float64 product of two floats is exact)."""
    return (s.astype(np.float64) + a.astype(np.float64) * b.astype(np.float64)).astype(
        np.float32)


def _sequential_sum(A, B, ks, start=None):
    """sum over k in `ks` (ascending) of A[:, k] * B[k, :], one fused multiply-add at a
    time from `start` (zeros), as the kernel's loop adds them."""
    s = np.zeros((A.shape[0], B.shape[1]), np.float32) if start is None else start
    for k in ks:
        s = _fma(s, A[:, k:k + 1], B[k:k + 1, :])
    return s


@pytest.mark.parametrize("schedule, seed, message", [
    ("random", None, "schedule must be one of 'lockstep', 'adversarial'"),
    ("lockstep", 3, "seed=3 chooses among adversarial schedules"),
    ("adversarial", -1, "seed must be a whole number from 0 to 4,294,967,295, not -1"),
    ("adversarial", 2 ** 32, "not 4294967296"),
    ("adversarial", 1.5, "not 1.5 (float)"),
    ("adversarial", True, "not True (bool)"),
    (None, None, "schedule must be one of"),
])
def test_bad_schedule_or_seed_is_refused_before_the_launch(schedule, seed, message):
    f = SourceModule(SEED, options=["-DTILE=4"]).get_function("sgemmTiled")
    A = np.ones((8, 8), np.float32)
    C = np.full((8, 8), 5.0, np.float32)
    with pytest.raises(LaunchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        f(np.int32(8), In(A), In(A), Out(C), block=(4, 4, 1), grid=(2, 2),
          schedule=schedule, seed=seed)
    assert (C == 5.0).all()                   # nothing ran
    assert f.last_report is None


def test_race_free_tiled_kernel_is_bit_identical_and_counted_the_same():
    f, A, B, C0 = _tiled(SEED, 32, 16)
    lockstep = f.last_report
    assert f.last_schedule is None
    for seed in range(5):
        g, _, _, C = _tiled(SEED, 32, 16, schedule="adversarial", seed=seed)
        np.testing.assert_array_equal(C.view(np.uint32), C0.view(np.uint32))
        r = g.last_report
        assert r.hazards == ()
        for name in ("global_load_requests", "global_load_sectors", "shared_load_instructions",
                     "shared_load_wavefronts", "shared_store_instructions", "barriers", "flops"):
            assert getattr(r, name) == getattr(lockstep, name), name
        assert g.last_schedule.seed == seed and g.last_schedule.flip_count == 0
        assert g.last_schedule.switches > 0


def test_missing_first_barrier_ascending_warps_read_zeros_of_unwritten_rows():
    # One block, one tile (N = TILE = 16), 8 warps of two rows each. Seed 1 runs warp 0 to
    # its barrier first, then warp 1, ...: warp w multiplies by rows 0 .. 2w+1 of B (stored
    # by warps 0..w), and reads the zeros shared memory starts with for the rest.
    src = without_barrier(SEED, "first")
    f, A, B, C = _tiled(src, 16, 16, schedule="adversarial", seed=1)
    want = np.vstack([_sequential_sum(A[r:r + 1], B, range(2 * (r // 2) + 2))
                      for r in range(16)])
    np.testing.assert_array_equal(C, want)
    # seed 2: warps in descending order, warp w sees rows 2w .. 15
    f, A, B, C = _tiled(src, 16, 16, schedule="adversarial", seed=2)
    want = np.vstack([_sequential_sum(A[r:r + 1], B, range(2 * (r // 2), 16))
                      for r in range(16)])
    np.testing.assert_array_equal(C, want)
    flips = f.last_schedule.flips
    assert flips and {(x.first_kind, x.first_line, x.second_kind, x.second_line)
                      for x in flips} == {("R", 33, "W", 28)}
    assert all(x.hazard == "read-after-write" and x.first_warp > x.second_warp
               for x in flips)


def test_missing_second_barrier_next_tile_overwrites_what_a_later_warp_reads():
    # N = 32, TILE = 16: two tiles. Seed 1: warp 0 computes tile 0, stores its rows of
    # tile 1, waits; warp 1 then multiplies tile 0 by B rows 0-1 of tile 1 (warp 0's), ...
    src = without_barrier(SEED, "second")
    f, A, B, C = _tiled(src, 32, 16, schedule="adversarial", seed=1)
    _, _, _, C0 = _tiled(src, 32, 16)
    np.testing.assert_allclose(C0, A @ B, rtol=1e-4, atol=1e-4)   # lockstep: right
    want = np.empty_like(C)
    for by in range(2):
        for bx in range(2):
            rows, cols = slice(16 * by, 16 * by + 16), slice(16 * bx, 16 * bx + 16)
            a, b = A[rows], B[:, cols]
            for r in range(16):
                w = r // 2
                # tile 0: B rows k < 2w from tile 1 (k + 16), the rest from tile 0
                b0 = np.vstack([b[k + 16] if k < 2 * w else b[k] for k in range(16)])
                s0 = _sequential_sum(a[r:r + 1, :16], b0, range(16))
                # tile 1 (after a barrier): every row of tile 1
                want[16 * by + r, cols] = _sequential_sum(a[r:r + 1], b, range(16, 32), s0)
    np.testing.assert_array_equal(C, want)
    kinds = {(x.first_kind, x.first_line, x.second_kind, x.second_line, x.hazard)
             for x in f.last_schedule.flips}
    assert kinds == {("W", 27, "R", 33, "write-after-read"),
                     ("W", 28, "R", 33, "write-after-read")} or \
        kinds == {("W", 28, "R", 33, "write-after-read")}


def test_same_seed_same_answer_and_same_flips():
    src = without_barrier(SEED, "second")
    for seed in (0, 3, 11):
        f, _, _, C1 = _tiled(src, 32, 16, schedule="adversarial", seed=seed)
        s1 = f.last_schedule
        f, _, _, C2 = _tiled(src, 32, 16, schedule="adversarial", seed=seed)
        s2 = f.last_schedule
        np.testing.assert_array_equal(C1.view(np.uint32), C2.view(np.uint32))
        assert s1 == s2


def test_an_error_in_a_warp_is_raised_with_its_line_and_leaves_no_thread_behind():
    src = """
    __global__ void k(float* out) {
        __shared__ float s[64];
        s[threadIdx.x] = threadIdx.x;
        __syncthreads();
        if (threadIdx.x >= 32) out[threadIdx.x * 100] = s[threadIdx.x];
        out[threadIdx.x] = s[threadIdx.x];
    }"""
    for seed in (0, 1, 5):
        with pytest.raises(MemoryAccessError) as info:
            launch(src, "k", np.zeros(64, np.float32), block=(64, 1, 1),
                   schedule="adversarial", seed=seed)
        assert info.value.line == 6 and info.value.thread == (32, 0, 0)
    assert busy_threads() == 0
    out = np.zeros(64, np.float32)
    launch(src.replace("* 100", ""), "k", out, block=(64, 1, 1), schedule="adversarial")
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32))


def test_a_barrier_part_of_the_block_skips_is_the_lockstep_error():
    src = """
    __global__ void k(float* out) {
        if (threadIdx.x < 16) {
            out[threadIdx.x] = 1.0f;
            __syncthreads();
        }
        __syncthreads();
    }"""
    with pytest.raises(BarrierError, match="reached by 16 of the 64 threads"):
        launch(src, "k", np.zeros(64, np.float32), block=(64, 1, 1), schedule="adversarial")


def test_a_warp_spinning_on_another_warps_flag_makes_progress():
    src = """
    __global__ void k(int* out) {
        volatile __shared__ int flag;
        __shared__ int data;
        if (threadIdx.x == 0) flag = 0;
        __syncthreads();
        if (threadIdx.x < 32) {
            if (threadIdx.x == 0) { data = 42; __threadfence_block(); flag = 1; }
        } else {
            while (flag == 0) { }
            out[threadIdx.x - 32] = data;
        }
    }"""
    for seed in range(5):
        out = np.zeros(32, np.int32)
        launch(src, "k", out, block=(64, 1, 1), schedule="adversarial", seed=seed,
               hazards="ignore")
        assert (out == 42).all(), seed


def test_asynchronous_copies_are_refused_under_the_adversary():
    from pathlib import Path
    src = (Path(__file__).parent / "kernels" / "async_copy" /
           "pipeline_double_buffer.cu").read_text()
    f = SourceModule(src, no_extern_c=True).get_function("pipelineSum")
    x = np.ones(4 * 128 * 2, np.float32)
    out = np.zeros(4 * 128, np.float32)
    f(In(x), Out(out), np.int32(2), block=(128, 1, 1))      # lockstep: runs
    assert (out == 2).all()
    with pytest.raises(UnsupportedFeatureError, match="schedule='adversarial'"):
        f(In(x), Out(out), np.int32(2), block=(128, 1, 1), schedule="adversarial")


def test_a_compound_assignment_whose_right_side_loads_survives_a_switch_between_its_loads():
    # acc[i] += s[..] * s[..]: the old acc[i] is loaded, then the right-hand side, at whose
    # loads another warp may run the same statement (a regression: the loaded value was
    # kept in one cell per statement, shared by the warps, and came back as another warp's)
    src = """
    __global__ void k(const float* in, float* out) {
        __shared__ float s[256];
        float acc[4];
        int t = threadIdx.x;
        for (int i = 0; i < 4; ++i) acc[i] = 0.0f;
        s[t] = in[t];
        __syncthreads();
        for (int j = 0; j < 8; ++j)
            for (int i = 0; i < 4; ++i)
                acc[i] += s[(t + 32 * i + j) % 256] * s[(255 - t + j) % 256];
        for (int i = 0; i < 4; ++i) out[4 * t + i] = acc[i];
    }"""
    x = np.random.default_rng(2).standard_normal(256).astype(np.float32)
    ref = np.zeros(1024, np.float32)
    launch(src, "k", x, ref, block=(256, 1, 1))
    switched = 0
    for seed in range(3, 11):
        out = np.zeros(1024, np.float32)
        f = launch(src, "k", x, out, block=(256, 1, 1), schedule="adversarial", seed=seed)
        np.testing.assert_array_equal(out.view(np.uint32), ref.view(np.uint32))
        switched += f.last_schedule.switches > 8 * 2      # more than at the barriers
    assert switched >= 2          # some of these seeds switch warps between accesses
