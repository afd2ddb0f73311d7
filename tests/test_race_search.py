"""tilinglib.find_race_failure (tilinglib/toolchain/runtime/race_search.py): the seed and the shrunk
schedule under which a race changes an output, the evidence checked against a NumPy model of
that schedule, determinism, and the results that say why nothing was found."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tilinglib as tl
from tilinglib import kernels
from tilinglib.emulator import In, InOut, Out, SourceModule, find_race_failure
from tilinglib.errors import LaunchError
from tilinglib.sgemm import random_matrices, without_barrier

SEED = kernels.load("sgemm_tiled")


def _fma_sum(a, b, ks, s):
    """`s` plus a[k] * b[k, :] for k in `ks`, one fused multiply-add each (nvcc's -fmad)."""
    for k in ks:
        s = (s.astype(np.float64) + np.float64(a[k]) * b[k].astype(np.float64)).astype(
            np.float32)
    return s


def _search(source, N=32, tile=16, **kw):
    f = SourceModule(source, options=[f"-DTILE={tile}"]).get_function("sgemmTiled")
    A, B = random_matrices(N, seed=3)
    C = np.full((N, N), 2.5, np.float32)
    result = find_race_failure(f, np.int32(N), In(A), In(B), Out(C), block=(tile, tile, 1),
                               grid=(N // tile, N // tile), **kw)
    assert (C == 2.5).all()                   # the caller's arrays are never written
    return result, A, B


def test_missing_first_barrier_found_at_seed_0_and_shrunk_to_one_held_warp():
    r, A, B = _search(without_barrier(SEED, "first"))
    assert r.found and r.seed == 0 and r.seeds_tried == 1 and r.kernel == "sgemmTiled"
    assert r.restriction.epoch == 0 and r.restriction.hold is not None
    held, until = r.restriction.hold
    # The shrunk schedule is lockstep except that warp `held` (rows 2h, 2h+1 of each
    # 16 x 16 block) stores its rows of tile 0 only after the other warps have read them
    # (as zeros: shared memory starts zeroed here). A NumPy model of it:
    N = 32
    model = np.empty((N, N), np.float32)
    for by in range(2):
        for bx in range(2):
            a, b = A[16 * by:16 * by + 16], B[:, 16 * bx:16 * bx + 16]
            for ty in range(16):
                skip = set() if ty // 2 == held else {2 * held, 2 * held + 1}
                s = _fma_sum(a[ty], b, [k for k in range(16) if k not in skip],
                             np.zeros(16, np.float32))
                model[16 * by + ty, 16 * bx:16 * bx + 16] = _fma_sum(a[ty], b,
                                                                     range(16, 32), s)
    f = SourceModule(SEED, options=["-DTILE=16"]).get_function("sgemmTiled")
    C = np.zeros((N, N), np.float32)
    f(np.int32(N), In(A), In(B), Out(C), block=(16, 16, 1), grid=(2, 2))
    assert r.output == "C" and r.elements == N * N
    assert r.got == model[r.index] and r.expected == C[r.index]
    assert r.difference == pytest.approx(float(model[r.index]) - float(C[r.index]))
    assert r.wrong_elements == int(np.count_nonzero(model != C))
    # the wrong element is one the reading warp stored: row 2 * until or 2 * until + 1
    assert r.index[0] % 16 // 2 == until == r.flip.first_warp
    assert (r.flip.first_kind, r.flip.first_line, r.flip.second_kind, r.flip.second_line) == \
        ("R", 33, "W", 28)
    assert r.flip.hazard == "read-after-write" and r.flip.element.startswith("Bs[")
    assert r.statements == ((33, "sum += As[ty][k] * Bs[k][tx];"),
                            (28, "Bs[ty][tx] = B[(t * TILE + ty) * N + col];"))
    text = str(r)
    assert "seed=0" in text and "kernel.cu:33" in text and "kernel.cu:28" in text
    assert f"warp {held} waited until warp {until} reached a barrier" in text


def test_missing_second_barrier_the_next_tile_overwrites_a_slow_warps_tile():
    r, A, B = _search(without_barrier(SEED, "second"))
    assert r.found and r.restriction.epoch == 1
    flip = r.flip
    assert (flip.first_kind, flip.second_kind, flip.second_line) == ("W", "R", 33)
    assert flip.first_line in (27, 28) and flip.hazard == "write-after-read"
    # the victim is the reader: the wrong element is in its rows
    assert r.index[0] % 16 // 2 == flip.second_warp == r.restriction.hold[0]


def test_the_same_search_gives_the_same_evidence():
    a, _, _ = _search(without_barrier(SEED, "second"), seeds=[5, 6])
    b, _, _ = _search(without_barrier(SEED, "second"), seeds=[5, 6])
    assert dataclasses.replace(a, seconds=0) == dataclasses.replace(b, seconds=0)
    assert a.found and a.seed == 5


def test_a_race_free_kernel_needs_no_search():
    r, _, _ = _search(SEED)
    assert not r.found and r.seeds_tried == 0 and r.hazards == ()
    assert "detects no race" in str(r)


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
            s[tid] += t;
        }
    }
    if (tid == 0) out[0] = s[0];
}
"""


def test_a_race_inside_one_warp_is_not_found_and_the_result_says_why():
    x = np.arange(128, dtype=np.float32)
    r = find_race_failure(WARP_REDUCE, In(x), Out(np.zeros(1, np.float32)), block=(64, 1, 1),
                          seeds=4)
    assert not r.found and r.seeds_tried == 4 and r.hazards
    assert "no wrong answer found in 4 seeds" in r.reason
    assert "lanes of one warp" in r.reason


def test_a_reduction_missing_its_loop_barrier_gives_a_wrong_sum():
    src = """
    __global__ void reduce(const int* in, int* out) {
        __shared__ int s[256];
        int tid = threadIdx.x;
        s[tid] = in[blockIdx.x * 256 + tid];
        __syncthreads();
        for (int stride = 128; stride > 0; stride >>= 1) {
            if (tid < stride) s[tid] += s[tid + stride];
        }
        if (tid == 0) out[blockIdx.x] = s[0];
    }"""
    x = np.arange(512, dtype=np.int32)
    out = np.zeros(2, np.int32)
    r = tl.find_race_failure(src, In(x), Out(out), block=(256, 1, 1), grid=(2, 1))
    assert r.found and r.output == "out" and len(r.index) == 1
    b = r.index[0]
    assert r.expected == x[256 * b:256 * b + 256].sum()      # lockstep: the right sum
    assert r.got != r.expected and isinstance(r.got, int)
    assert r.difference == r.got - r.expected
    assert r.flip.first_line == r.flip.second_line == 8


def test_bad_arguments_are_refused_before_anything_runs():
    f = SourceModule(SEED, options=["-DTILE=4"]).get_function("sgemmTiled")
    A = np.ones((8, 8), np.float32)
    launch = dict(block=(4, 4, 1), grid=(2, 2))
    with pytest.raises(LaunchError, match="seed must be a whole number"):
        find_race_failure(f, np.int32(8), In(A), In(A), Out(A.copy()), seeds=[1, -2], **launch)
    with pytest.raises(LaunchError, match="give how many seeds"):
        find_race_failure(f, np.int32(8), In(A), In(A), Out(A.copy()), seeds=0, **launch)
    with pytest.raises(LaunchError, match="no argument is Out"):
        find_race_failure(f, np.int32(8), In(A), In(A), In(A.copy()), **launch)
    with pytest.raises(LaunchError, match="name the one to search"):
        find_race_failure(SEED + SEED.replace("sgemmTiled", "other"), np.int32(8), In(A),
                          In(A), Out(A.copy()), **launch)
    with pytest.raises(LaunchError, match="needs an emulated kernel"):
        find_race_failure(object(), np.int32(8), **launch)


def test_the_time_budget_ends_the_search_with_a_clear_result():
    r, _, _ = _search(without_barrier(SEED, "second"), seeds=50, max_seconds=1e-9)
    assert not r.found and r.seeds_tried == 0
    assert "budget ended after 0 of 50 seeds" in r.reason


def test_inout_arrays_are_compared_too():
    src = """
    __global__ void shift(float* v) {
        __shared__ float s[64];
        s[threadIdx.x] = v[threadIdx.x];
        v[threadIdx.x] = s[(threadIdx.x + 32) % 64];
    }"""
    v = np.arange(64, dtype=np.float32)
    r = find_race_failure(src, InOut(v), block=(64, 1, 1))
    assert r.found and r.output == "v"
    assert (v == np.arange(64)).all()
