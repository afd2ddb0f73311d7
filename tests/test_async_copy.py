"""Asynchronous copies (issue 11, SGEMM_CUDA's kernel 12): cuda::barrier with
cuda::memcpy_async (<cuda/barrier>), the <cuda_pipeline.h> primitives, and
cooperative_groups::memcpy_async / wait (toolchain/codegen/async_copy.py).

Kernels of our own under tests/kernels/async_copy/, each run on the emulator and checked
against NumPy, with the counters derived by hand: a copy is one global load and one
shared store per thread per chunk (4, 8 or 16 bytes). Then each refusal and runtime error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tilinglib import emulator
from tilinglib.toolchain.measure.diagnostics import RaceWarning
from tilinglib.errors import (BarrierError, CompileError, KernelRuntimeError,
                              MemoryAccessError, RaceError, UnsupportedFeatureError)


def _cxx_module(source, **kw):
    """The sources here include C++ headers (<cuda/barrier>, <cooperative_groups.h>): nvcc
    compiles them only in PyCUDA's C++ mode, no_extern_c=True (toolchain/frontend/headers.py)."""
    return emulator.SourceModule(source, no_extern_c=True, **kw)

HERE = Path(__file__).parent / "kernels" / "async_copy"


def source(stem: str) -> str:
    return (HERE / f"{stem}.cu").read_text()


def module(stem: str, options=None):
    return _cxx_module(source(stem), options=options)


def reversed_tile_sums(x: np.ndarray, n: int) -> np.ndarray:
    """out[i] = sum over tiles t of x[t * n + n - 1 - i], in float32 tile order."""
    tiles = x.reshape(-1, n)[:, ::-1]
    acc = np.zeros(n, np.float32)
    for row in tiles:
        acc = (acc + row).astype(np.float32)
    return acc


# ------------------------------------------------------------------ cuda::barrier
def test_barrier_double_buffering_with_swapped_barrier_pointers():
    T, ntiles = 64, 3
    n = 4 * T
    x = np.random.default_rng(1).standard_normal(ntiles * n).astype(np.float32)
    out = np.zeros(n, np.float32)
    f = module("barrier_double_buffer").get_function("sumReversedTiles")
    f(emulator.In(x), emulator.Out(out), np.int32(ntiles), block=(T, 1, 1), grid=(1, 1),
      hazards="raise")
    np.testing.assert_array_equal(out, reversed_tile_sums(x, n))
    r = f.last_report
    # one 16-byte copy per thread per tile: 2 warps x 3 tiles requests, 512 B per warp
    assert r.global_load_requests == 2 * ntiles
    assert r.global_load_bytes_requested == ntiles * T * 16
    assert r.global_load_sectors == 2 * ntiles * (32 * 16 // 32)
    assert r.shared_store_instructions == 2 * ntiles
    assert r.shared_load_instructions == 2 * ntiles * 4        # acc[c] += buf[...], 4 per tile
    # __syncthreads after init, then per tile one arrive_and_wait and one __syncthreads
    assert r.barriers == 1 + 2 * ntiles
    assert r.hazards == ()


@pytest.mark.parametrize("options, elems, chunk, wavefronts", [
    # plain size, float pointers: 4-byte chunks, lanes 3 words apart: no conflict
    ([], 3, 4, 1),
    # aligned_size_t<16>: one 16-byte chunk; 512 B per warp = 4 wavefronts
    (["-DELEMS=4", "-DALIGN=16"], 4, 16, 4),
    # aligned_size_t<8>: two 8-byte chunks, lanes 16 B apart: per half-warp lanes t and
    # t + 8 share banks, 2 wavefronts per half
    (["-DELEMS=4", "-DALIGN=8"], 4, 8, 4),
    # 8-byte chunks of consecutive lanes: 256 B per warp = 2 wavefronts
    (["-DELEMS=2", "-DALIGN=8"], 2, 8, 2),
])
def test_memcpy_async_chunks_follow_the_alignment(options, elems, chunk, wavefronts):
    T, blocks = 64, 2
    n = elems * T
    x = np.arange(blocks * n, dtype=np.float32) * 0.5 - 7
    out = np.zeros_like(x)
    f = module("barrier_sizes", options).get_function("copyReverse")
    f(emulator.In(x), emulator.Out(out), block=(T, 1, 1), grid=(blocks, 1), hazards="raise")
    np.testing.assert_array_equal(out, x.reshape(blocks, n)[:, ::-1].reshape(-1))
    r = f.last_report
    accesses = elems * 4 // chunk            # per thread
    warps = blocks * T // 32
    assert r.global_load_requests == warps * accesses
    assert r.shared_store_instructions == warps * accesses
    assert r.global_load_bytes_requested == blocks * T * elems * 4
    assert r.shared_store_wavefronts == wavefronts * r.shared_store_instructions


def test_read_before_arrive_and_wait_sees_the_old_bytes():
    # The copy lands when the barrier's phase completes: a read of another thread's
    # element after __syncthreads but before arrive_and_wait reads shared memory nobody
    # has written yet, as it may on a GPU.
    src = source("barrier_sizes").replace("  bar.arrive_and_wait();\n", "").replace(
        "    out[blockIdx.x * n + i] = s[n - 1 - i];",
        "    out[blockIdx.x * n + i] = s[n - 1 - i];\n  bar.arrive_and_wait();")
    src = src.replace("  const int n = ELEMS", "  __syncthreads();\n  const int n = ELEMS")
    x = np.arange(3 * 64, dtype=np.float32) + 1
    out = np.full_like(x, -1)
    f = _cxx_module(src).get_function("copyReverse")
    with pytest.warns(RaceWarning):
        f(emulator.In(x), emulator.Out(out), block=(64, 1, 1), grid=(1, 1))
    assert np.all(out == 0)
    kinds = {h.kind for h in f.last_report.hazards}
    assert "uninitialized-read" in kinds


def test_barrier_partial_arrival_is_a_barrier_error():
    src = """#include <cuda/barrier>
__global__ void k(float *out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  if (threadIdx.x < 32)
    bar.arrive_and_wait();
  out[threadIdx.x] = 1.0f;
}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.raises(BarrierError) as info:
        f(emulator.Out(np.zeros(64, np.float32)), block=(64, 1, 1), grid=(1, 1))
    assert "cuda::barrier::arrive_and_wait() at kernel.cu:7" in str(info.value)
    assert "32 of the 64 threads" in str(info.value)


def test_arrive_and_wait_after_threads_returned_is_a_barrier_error():
    # a returned thread never arrives: the barrier never completes (where __syncthreads
    # goes on and is only reported as a hazard)
    src = """#include <cuda/barrier>
__global__ void k(float *out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  if (threadIdx.x >= 60) return;
  bar.arrive_and_wait();
  out[threadIdx.x] = 1.0f;
}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.raises(BarrierError) as info:
        f(emulator.Out(np.zeros(64, np.float32)), block=(64, 1, 1), grid=(1, 1))
    assert info.value.line == 7 and info.value.thread == (60, 0, 0)
    assert "has returned" in str(info.value)


def test_init_with_an_expected_count_other_than_the_block_size_is_refused():
    src = """#include <cuda/barrier>
__global__ void k(float *out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, 32);
  __syncthreads();
  bar.arrive_and_wait();
}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.raises(KernelRuntimeError) as info:
        f(emulator.Out(np.zeros(64, np.float32)), block=(64, 1, 1), grid=(1, 1))
    msg = str(info.value)
    assert info.value.line == 4
    assert "init(&bar, 32) at kernel.cu:4" in msg and "64 threads" in msg
    assert "init(&bar, block.size())" in msg


def test_a_barrier_used_before_init_is_reported():
    src = """#include <cuda/barrier>
__global__ void k(const float *in, float *out) {
  __shared__ float s[64];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  cuda::memcpy_async(&s[threadIdx.x], &in[threadIdx.x], sizeof(float), bar);
  bar.arrive_and_wait();
  out[threadIdx.x] = s[threadIdx.x];
}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.raises(KernelRuntimeError) as info:
        f(emulator.In(np.ones(64, np.float32)), emulator.Out(np.zeros(64, np.float32)),
          block=(64, 1, 1), grid=(1, 1))
    assert info.value.line == 5
    assert "not initialised" in str(info.value) and "init(&bar, block.size())" in str(info.value)


@pytest.mark.parametrize("scope", ["thread_scope_device", "thread_scope_system"])
def test_a_barrier_of_another_scope_is_refused_at_its_line(scope):
    src = f"""#include <cuda/barrier>
__global__ void k(float *out) {{
  __shared__ cuda::barrier<cuda::{scope}> bar;
  if (threadIdx.x == 0)
    init(&bar, blockDim.x);
  __syncthreads();
}}
"""
    with pytest.raises(UnsupportedFeatureError) as info:
        _cxx_module(src)
    assert info.value.line == 5
    assert f"cuda::barrier<cuda::{scope}>" in str(info.value)
    assert "cuda::thread_scope_block" in str(info.value)


def test_split_arrive_and_wait():
    x = np.arange(128, dtype=np.float32) - 30
    out = np.zeros(128, np.float32)
    f = module("barrier_split_phase").get_function("splitPhase")
    f(emulator.In(x), emulator.Out(out), block=(64, 1, 1), grid=(2, 1), hazards="raise")
    want = x.reshape(2, 64)[:, ::-1] + x.reshape(2, 64) * np.float32(3)
    np.testing.assert_array_equal(out, want.reshape(-1))
    # per block: the __syncthreads after init, the phase that completes at the arrivals
    assert f.last_report.barriers == 2 * 2
    assert f.last_report.shared_store_instructions == 2 * 2      # the copies: 2 warps x 2 blocks


def test_split_barrier_with_shared_accesses_between_is_refused():
    f = module("barrier_split_phase", ["-DSHARED_IN_BETWEEN"]).get_function("splitPhase")
    with pytest.raises(KernelRuntimeError) as info:
        f(emulator.In(np.ones(128, np.float32)), emulator.Out(np.zeros(128, np.float32)),
          block=(64, 1, 1), grid=(2, 1))
    msg = str(info.value)
    assert info.value.line == 19
    assert "shared memory was accessed between arrive() (kernel.cu:14)" in msg
    assert "bar.arrive_and_wait()" in msg


@pytest.mark.parametrize("body, error, text", [
    # half the block arrives, then waits: on a GPU it would wait for the other half
    ("auto token = bar.arrive();\n  if (threadIdx.x < 32) bar.wait(std::move(token));\n"
     "  else bar.wait(std::move(token));", None, None),
    ("if (threadIdx.x < 32) { auto token = bar.arrive(); bar.wait(std::move(token)); }",
     BarrierError, "has not arrived at the barrier"),
    ("auto a = bar.arrive();\n  auto b = bar.arrive();", KernelRuntimeError,
     "already arrived"),
    ("auto token = bar.arrive();\n  bar.arrive_and_wait();", KernelRuntimeError,
     "has not waited for"),
])
def test_split_barrier_misuse(body, error, text):
    src = """#include <cuda/barrier>
#include <utility>
__global__ void k(float *out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  BODY
  out[threadIdx.x] = 1.0f;
}
""".replace("BODY", body)
    f = _cxx_module(src).get_function("k")
    out = np.zeros(64, np.float32)
    if error is None:                  # divergent waits after a complete phase: fine
        f(emulator.Out(out), block=(64, 1, 1), grid=(1, 1), hazards="raise")
        assert np.all(out == 1)
        return
    with pytest.raises(error) as info:
        f(emulator.Out(out), block=(64, 1, 1), grid=(1, 1))
    assert text in str(info.value)


def test_arrive_and_drop_is_refused_with_what_to_write():
    src = """#include <cuda/barrier>
__global__ void k(float *out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  bar.arrive_and_drop();
}
"""
    with pytest.raises(UnsupportedFeatureError) as info:
        _cxx_module(src)
    assert info.value.line == 6
    assert "arrive_and_drop()" in str(info.value) and "bar.arrive_and_wait()" in str(info.value)


@pytest.mark.parametrize("where, array, expect", [
    ("&in[threadIdx.x * 4 + 4]", "in", "read"),       # the last thread reads past `in`
    ("&in[threadIdx.x * 4]", None, "write"),          # destination past s
])
def test_memcpy_async_out_of_range_is_reported(where, array, expect):
    dst = "&s[threadIdx.x * 4]" if expect == "read" else "&s[threadIdx.x * 4 + 4]"
    src = f"""#include <cuda/barrier>
__global__ void k(const float *in, float *out) {{
  __shared__ float s[4 * 64];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  cuda::memcpy_async({dst}, {where}, cuda::aligned_size_t<16>(16), bar);
  bar.arrive_and_wait();
  out[threadIdx.x] = s[threadIdx.x];
}}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.raises(MemoryAccessError) as info:
        f(emulator.In(np.ones(256, np.float32)), emulator.Out(np.zeros(64, np.float32)),
          block=(64, 1, 1), grid=(1, 1))
    msg = str(info.value)
    assert info.value.line == 7
    assert info.value.thread == (63, 0, 0)
    if expect == "read":
        assert "Invalid __global__ read of size 16 bytes" in msg and "'in'" in msg
    else:
        assert "Invalid __shared__ write of size 16 bytes" in msg and "'s'" in msg


# ------------------------------------------------------------------ <cuda_pipeline.h>
@pytest.mark.parametrize("nbytes", [4, 8, 16])
def test_pipeline_primitives_double_buffering(nbytes):
    T, ntiles = 128, 4
    per = nbytes // 4
    n = per * T
    x = np.random.default_rng(nbytes).standard_normal(ntiles * n).astype(np.float32)
    out = np.zeros(n, np.float32)
    f = module("pipeline_double_buffer", [f"-DBYTES={nbytes}"]).get_function("pipelineSum")
    f(emulator.In(x), emulator.Out(out), np.int32(ntiles), block=(T, 1, 1), grid=(1, 1),
      hazards="raise")
    np.testing.assert_array_equal(out, reversed_tile_sums(x, n))
    r = f.last_report
    warps = T // 32
    assert r.global_load_requests == warps * ntiles          # one LDGSTS per thread per tile
    assert r.global_load_bytes_requested == ntiles * T * nbytes
    assert r.global_load_sectors == warps * ntiles * (32 * nbytes // 32)
    assert r.shared_store_instructions == warps * ntiles
    assert r.barriers == 2 * ntiles


def test_pipeline_without_wait_prior_reads_the_old_bytes():
    # __syncthreads does not wait for the copies: without __pipeline_wait_prior the tile
    # is read before it lands (the emulator's copies land at the wait, which never comes).
    T, ntiles = 128, 2
    x = np.ones(ntiles * 4 * T, np.float32)
    out = np.full(4 * T, -1, np.float32)
    f = module("pipeline_double_buffer", ["-DFORGET_WAIT"]).get_function("pipelineSum")
    with pytest.warns(RaceWarning):
        f(emulator.In(x), emulator.Out(out), np.int32(ntiles), block=(T, 1, 1), grid=(1, 1))
    assert np.all(out == 0)
    kinds = {h.kind for h in f.last_report.hazards}
    assert {"uninitialized-read", "async-copy-pending"} <= kinds


def test_pipeline_waiting_for_one_batch_too_few_is_reported():
    # __pipeline_wait_prior(2) with two stages: every tile is read while its copy may still
    # be landing; after the first tiles the buffer holds old data, so only the pending
    # copy tells (no uninitialised read there)
    T, ntiles = 128, 4
    x = np.arange(ntiles * 4 * T, dtype=np.float32)
    out = np.zeros(4 * T, np.float32)
    f = module("pipeline_double_buffer", ["-DPRIOR=2"]).get_function("pipelineSum")
    with pytest.raises(RaceError) as info:
        f(emulator.In(x), emulator.Out(out), np.int32(ntiles), block=(T, 1, 1),
          grid=(1, 1), hazards="raise")
    msg = str(info.value)
    assert info.value.kind == "async-copy-pending" and info.value.line == 31
    assert "while the asynchronous copy into it (kernel.cu:18)" in msg
    assert "__pipeline_wait_prior(n)" in msg


def test_a_store_into_a_pending_copy_destination_is_reported():
    src = """#include <cuda/barrier>
__global__ void k(const float *in, float *out) {
  __shared__ float s[64];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  cuda::memcpy_async(&s[threadIdx.x], &in[threadIdx.x], sizeof(float), bar);
  s[threadIdx.x] = 0.0f;
  bar.arrive_and_wait();
  out[threadIdx.x] = s[threadIdx.x];
}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.warns(RaceWarning):
        f(emulator.In(np.ones(64, np.float32)), emulator.Out(np.zeros(64, np.float32)),
          block=(64, 1, 1), grid=(1, 1))
    (h,) = [h for h in f.last_report.hazards if h.kind == "async-copy-pending"]
    assert (h.line, h.other_line, h.count) == (8, 7, 64)


def test_pipeline_zfill_uniform_fills_zeros():
    src = """#include <cuda_pipeline.h>
__global__ void k(const float *in, float *out) {
  __shared__ float4 s[8];
  __pipeline_memcpy_async(&s[threadIdx.x], &in[threadIdx.x * 2], 16, 8);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  out[threadIdx.x * 4] = s[threadIdx.x].x; out[threadIdx.x * 4 + 1] = s[threadIdx.x].y;
  out[threadIdx.x * 4 + 2] = s[threadIdx.x].z; out[threadIdx.x * 4 + 3] = s[threadIdx.x].w;
}
"""
    f = _cxx_module(src).get_function("k")
    x = np.arange(1, 17, dtype=np.float32)          # exactly 8 threads x 8 bytes read
    out = np.full(32, -1, np.float32)
    f(emulator.In(x), emulator.Out(out), block=(8, 1, 1), grid=(1, 1), hazards="raise")
    want = np.zeros((8, 4), np.float32)
    want[:, :2] = x.reshape(8, 2)
    np.testing.assert_array_equal(out, want.reshape(-1))
    assert f.last_report.global_load_bytes_requested == 8 * 8


def test_pipeline_zfill_per_thread_guards_the_end_of_the_array():
    # the boundary idiom: past the end, copy nothing and fill zeros (zfill = 16); the
    # thread straddling the end keeps its valid floats
    src = """#include <cuda_pipeline.h>
__global__ void k(const float *in, float *out, int n) {
  __shared__ float4 s[8];
  const int i = threadIdx.x * 4;
  const int keep = i >= n ? 0 : (n - i >= 4 ? 4 : n - i);
  __pipeline_memcpy_async(&s[threadIdx.x], in + (keep ? i : 0), 16, (4 - keep) * 4);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  out[i] = s[threadIdx.x].x; out[i + 1] = s[threadIdx.x].y;
  out[i + 2] = s[threadIdx.x].z; out[i + 3] = s[threadIdx.x].w;
}
"""
    n = 22                                   # threads 0-4 full, 5 keeps 2 floats, 6-7 none
    x = np.arange(1, n + 1, dtype=np.float32)
    out = np.full(32, -1, np.float32)
    f = _cxx_module(src).get_function("k")
    f(emulator.In(x), emulator.Out(out), np.int32(n), block=(8, 1, 1), grid=(1, 1),
      hazards="raise")
    want = np.zeros(32, np.float32)
    want[:n] = x
    np.testing.assert_array_equal(out, want)
    # bytes read: 5 threads x 16 + 8 (the straddling thread), never past the array
    assert f.last_report.global_load_bytes_requested == 5 * 16 + 8


def test_pipeline_copy_size_other_than_4_8_16_is_refused_at_its_line():
    src = """#include <cuda_pipeline.h>
__global__ void k(const float *in) {
  __shared__ float s[3 * 32];
  __pipeline_memcpy_async(&s[threadIdx.x * 3], &in[threadIdx.x * 3], 12);
}
"""
    with pytest.raises(CompileError) as info:
        _cxx_module(src)
    assert info.value.line == 4 and "4, 8 or 16 bytes" in str(info.value)


def test_pipeline_copy_into_global_memory_is_refused():
    src = """#include <cuda_pipeline.h>
__global__ void k(const float *in, float *out) {
  __pipeline_memcpy_async(&out[threadIdx.x], &in[threadIdx.x], 4);
  __pipeline_commit();
  __pipeline_wait_prior(0);
}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.raises(KernelRuntimeError) as info:
        f(emulator.In(np.ones(32, np.float32)), emulator.Out(np.zeros(32, np.float32)),
          block=(32, 1, 1), grid=(1, 1))
    assert info.value.line == 3 and "must be __shared__ memory" in str(info.value)


def test_pipeline_copy_out_of_range_is_reported():
    src = """#include <cuda_pipeline.h>
__global__ void k(const float *in, float *out) {
  __shared__ float s[32];
  __pipeline_memcpy_async(&s[threadIdx.x], &in[threadIdx.x + 1], 4);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];
}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.raises(MemoryAccessError) as info:
        f(emulator.In(np.ones(32, np.float32)), emulator.Out(np.zeros(32, np.float32)),
          block=(32, 1, 1), grid=(1, 1))
    assert info.value.line == 4 and info.value.thread == (31, 0, 0)
    assert "'in'" in str(info.value)


# ------------------------------------------------------------------ cooperative groups
@pytest.mark.parametrize("options, chunk", [([], 4), (["-DALIGNED"], 16), (["-DBARRIER"], 4)])
def test_block_collective_copy(options, chunk):
    T, blocks, N = 64, 2, 256
    x = np.random.default_rng(3).standard_normal(blocks * N).astype(np.float32)
    out = np.zeros_like(x)
    f = module("cg_memcpy_async", options).get_function("blockCopyReverse")
    f(emulator.In(x), emulator.Out(out), block=(T, 1, 1), grid=(blocks, 1), hazards="raise")
    np.testing.assert_array_equal(out, x.reshape(blocks, N)[:, ::-1].reshape(-1))
    r = f.last_report
    # thread rank r copies chunks r, r + 64, ...: N * 4 / chunk chunks per block
    rounds = N * 4 // chunk // T
    assert r.global_load_requests == blocks * (T // 32) * rounds
    assert r.shared_store_instructions == blocks * (T // 32) * rounds
    assert r.global_load_bytes_requested == blocks * N * 4
    # each warp reads 32 consecutive chunks: chunk bytes per lane, whole sectors
    assert r.global_load_sectors == blocks * N * 4 // 32


def test_collective_copy_with_a_tile_group_is_refused():
    src = """#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;
__global__ void k(const float *in) {
  __shared__ float s[64];
  auto tile = cg::tiled_partition<32>(cg::this_thread_block());
  cg::memcpy_async(tile, s, in, sizeof(float) * 64);
}
"""
    with pytest.raises(UnsupportedFeatureError) as info:
        _cxx_module(src)
    assert info.value.line == 7
    assert "this_thread_block()" in str(info.value)


def test_collective_copy_called_by_part_of_the_block_is_a_barrier_error():
    src = """#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;
__global__ void k(const float *in, float *out) {
  __shared__ float s[64];
  cg::thread_block block = cg::this_thread_block();
  if (threadIdx.x < 32)
    cg::memcpy_async(block, s, in, sizeof(float) * 64);
  cg::wait(block);
  out[threadIdx.x] = s[threadIdx.x];
}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.raises(BarrierError) as info:
        f(emulator.In(np.ones(64, np.float32)), emulator.Out(np.zeros(64, np.float32)),
          block=(64, 1, 1), grid=(1, 1))
    assert info.value.line == 8 and "whole block" in str(info.value)


def test_the_headers_are_known_and_others_still_refused():
    for header in ("cuda/barrier", "cuda/std/barrier", "cuda_pipeline.h",
                   "cuda_pipeline_primitives.h", "cooperative_groups/memcpy_async.h"):
        _cxx_module(f"#include <{header}>\n__global__ void k(float *o) {{ o[0] = 1; }}\n")
    # <cuda/pipeline> is a toolkit header: included, fine; cuda::pipeline is not declared
    _cxx_module("#include <cuda/pipeline>\n__global__ void k(float *o) { }\n")
    with pytest.raises(CompileError, match="pipeline"):
        _cxx_module("#include <cuda/pipeline>\n__global__ void k(float *o) {\n"
                    "  auto p = cuda::make_pipeline();\n}\n")
    with pytest.raises(CompileError, match="reads no files"):
        _cxx_module("#include <cuda/no_such_header>\n__global__ void k(float *o) { }\n")


def test_copies_never_waited_for_stop_at_a_clear_limit():
    # a loop issuing copies without ever waiting: the emulator holds each until its wait,
    # so it stops with what to do instead of growing without bound
    src = """#include <cuda_pipeline.h>
__global__ void k(const float *in, int n) {
  __shared__ float s[32];
  for (int i = 0; i < n; ++i)
    __pipeline_memcpy_async(&s[threadIdx.x], &in[threadIdx.x], 4);
}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.raises(KernelRuntimeError) as info:
        f(emulator.In(np.ones(32, np.float32)), np.int32(10**6), block=(32, 1, 1),
          grid=(2048, 1))
    assert info.value.line == 5
    assert "__pipeline_wait_prior(n)" in str(info.value)


def test_scopes_from_cuda_std_and_a_barrier_parameter_by_reference():
    # <cuda/std/barrier> spells the scope cuda::std::thread_scope_block; a __device__
    # function takes the barrier by reference (lowered to a pointer) and arrives on it
    src = """#include <cuda/std/barrier>
__device__ void sync(cuda::barrier<cuda::std::thread_scope_block> &b) { b.arrive_and_wait(); }
__global__ void k(const float *in, float *out) {
  __shared__ float s[64];
  __shared__ cuda::barrier<cuda::std::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  cuda::memcpy_async(&s[threadIdx.x], &in[threadIdx.x], sizeof(float), bar);
  sync(bar);
  out[threadIdx.x] = s[63 - threadIdx.x] * 2.0f;
}
"""
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    f = _cxx_module(src).get_function("k")
    f(emulator.In(x), emulator.Out(out), block=(64, 1, 1), grid=(1, 1), hazards="raise")
    np.testing.assert_array_equal(out, x[::-1] * 2)
    assert f.last_report.barriers == 2


@pytest.mark.parametrize("enum", ["enum Mode { Once = 1, Twice = 2 };",
                                  "enum Mode { Zero, Once, Twice };"])
def test_record_with_an_enumerator_argument_through_auto(enum):
    # the translator's rule kernel 12 needs, on a student's own enum: the type of an auto
    # variable keeps the enumerator as written (Box<Mode::Twice>), the record is named by
    # its value
    src = enum + """
template <Mode M> struct Box { float v; };
template <Mode M> __device__ float scaled(Box<M> *b) { return b->v * (int)M; }
__global__ void k(const float *in, float *out) {
  __shared__ Box<Mode::Twice> box[32];
  box[threadIdx.x].v = in[threadIdx.x];
  auto p = &box[threadIdx.x];
  out[threadIdx.x] = scaled(p);
}
"""
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    f = _cxx_module(src).get_function("k")
    f(emulator.In(x), emulator.Out(out), block=(32, 1, 1), grid=(1, 1), hazards="raise")
    np.testing.assert_array_equal(out, 2 * x)


def test_memcpy_async_header_alone_brings_cooperative_groups():
    # <cooperative_groups/memcpy_async.h> includes <cooperative_groups.h>, as in CUDA
    src = """#include <cooperative_groups/memcpy_async.h>
__global__ void k(const float *in, float *out) {
  __shared__ float s[64];
  auto block = cooperative_groups::this_thread_block();
  cooperative_groups::memcpy_async(block, s, in, sizeof(float) * 64);
  cooperative_groups::wait(block);
  out[threadIdx.x] = s[63 - threadIdx.x];
}
"""
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(32, np.float32)
    f = _cxx_module(src).get_function("k")
    f(emulator.In(x), emulator.Out(out), block=(32, 1, 1), grid=(1, 1), hazards="raise")
    np.testing.assert_array_equal(out, x[::-1][:32])
    assert f.last_report.global_load_requests == 2       # 64 floats, 2 rounds of 32 lanes


def test_a_wide_read_over_a_narrow_pending_copy_is_reported():
    # 4-byte copies into the second float of each float4, then a 16-byte read of the
    # float4 before the wait: only its middle bytes are pending
    src = """#include <cuda_pipeline.h>
__global__ void k(const float *in, float4 *out) {
  __shared__ float4 s[32];
  s[threadIdx.x] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  __pipeline_memcpy_async(&s[threadIdx.x].y, &in[threadIdx.x], 4);
  __pipeline_commit();
  out[threadIdx.x] = s[threadIdx.x];
  __pipeline_wait_prior(0);
}
"""
    f = _cxx_module(src).get_function("k")
    with pytest.warns(RaceWarning):
        f(emulator.In(np.ones(32, np.float32)), emulator.Out(np.zeros((32, 4), np.float32)),
          block=(32, 1, 1), grid=(1, 1))
    (h,) = [h for h in f.last_report.hazards if h.kind == "async-copy-pending"]
    assert (h.line, h.other_line, h.count) == (7, 5, 32)


def test_a_cxx_header_inside_extern_cxx_is_accepted_in_pycuda_s_default_mode():
    # nvcc accepts <cuda_pipeline.h> inside PyCUDA's extern "C" { } when the source wraps
    # it in extern "C++" { } (as sgemm_tuned.cu's ASYNC switch does); bare, it refuses it
    body = """
__global__ void k(const float *in, float *out) {
  __shared__ float s[64];
  __pipeline_memcpy_async(&s[threadIdx.x], &in[threadIdx.x], 4);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  out[threadIdx.x] = s[63 - threadIdx.x];
}
"""
    wrapped = 'extern "C++" {   /* { in a comment */\n#include <cuda_pipeline.h>\n}\n' + body
    f = emulator.SourceModule(wrapped).get_function("k")
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    f(emulator.In(x), emulator.Out(out), block=(64, 1, 1), grid=(1, 1), hazards="raise")
    np.testing.assert_array_equal(out, x[::-1])
    with pytest.raises(CompileError, match="extern"):
        emulator.SourceModule("#include <cuda_pipeline.h>\n" + body)
    after = 'extern "C++" {\n}\n#include <cuda_pipeline.h>\n' + body    # after the block
    with pytest.raises(CompileError, match="extern"):
        emulator.SourceModule(after)
