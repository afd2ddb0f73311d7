"""Memory faults on the emulator (tilinglib.toolchain.model.memory and execute): out-of-bounds and
misaligned accesses per allocation, reported compute-sanitizer style, and an emulator that
stays usable after them."""

from __future__ import annotations

import numpy as np
import pytest

from emulator_helpers import launch
from tilinglib import kernels
from tilinglib.emulator import In, InOut, Out, SourceModule
from tilinglib.errors import KernelRuntimeError, MemoryAccessError


def _unguarded_tiled(N=40, tile=16):
    f = SourceModule(kernels.load("sgemm_tiled"), options=[f"-DTILE={tile}"]) \
        .get_function("sgemmTiled")
    A = np.ones((N, N), np.float32)
    return f, (np.int32(N), In(A), In(A.copy()), Out(np.zeros_like(A)))


def test_out_of_bounds_global_read_names_everything():
    # N=40 with TILE=16: the grid (3, 3) runs past the matrix, as in the seed's N % TILE bug.
    f, args = _unguarded_tiled()
    with pytest.raises(MemoryAccessError) as info:
        f(*args, block=(16, 16, 1), grid=(3, 3))
    e = info.value
    text = str(e)
    assert e.kernel == "sgemmTiled" and e.line == 27
    assert e.block == (0, 2, 0) and e.thread == (0, 8, 0)
    assert "Invalid __global__ read of size 4 bytes" in text
    assert "just past the end of the array 'A' (6400 bytes): one element too far" in text
    assert "A[1600]" in text and "kernel.cu:27" in text


def test_out_of_bounds_store_before_the_start():
    src = "__global__ void k(float* out) { out[(int)threadIdx.x - 2] = 1.0f; }"
    out = np.zeros(8, np.float32)
    with pytest.raises(MemoryAccessError) as info:
        launch(src, "k", out, block=(8, 1, 1))
    assert "Invalid __global__ write" in str(info.value)
    assert "8 bytes before the start of the array 'out'" in str(info.value)
    assert info.value.thread == (0, 0, 0)


def test_shared_out_of_bounds_names_the_shared_array_and_element():
    src = """
    __global__ void k(float* out) {
        __shared__ float tile[4][8];
        tile[threadIdx.x][0] = 1.0f;
    }"""
    with pytest.raises(MemoryAccessError) as info:
        launch(src, "k", np.zeros(1, np.float32), block=(6, 1, 1))
    text = str(info.value)
    assert "__shared__ write" in text and "'tile'" in text
    assert info.value.thread == (4, 0, 0)


def test_index_overflow_wraps_like_a_gpu_and_is_caught():
    # row * N + col overflows int32 for N = 70000: it wraps negative, as on a GPU.
    src = """
    __global__ void k(int N, float* a) {
        int row = 40000, col = threadIdx.x;
        a[row * N + col] = 1.0f;
    }"""
    with pytest.raises(MemoryAccessError) as info:
        launch(src, "k", np.int32(70000), np.zeros(4, np.float32), block=(1, 1, 1))
    wrapped = np.int64(np.int32(np.int64(40000) * 70000 - 2**32))
    assert wrapped < 0
    assert "before the start of the array 'a'" in str(info.value)


def test_misaligned_vector_load():
    src = """
    __global__ void k(const float* in, float* out) {
        float4 v = *((const float4*)(in + 1));
        out[0] = v.x;
    }"""
    with pytest.raises(MemoryAccessError, match="Misaligned global read of size 16"):
        launch(src, "k", np.zeros(8, np.float32), np.zeros(1, np.float32), block=(1, 1, 1))


def test_null_pointer():
    src = "__global__ void k(float* out) { float* p = 0; out[0] = *p; }"
    with pytest.raises(MemoryAccessError, match="null pointer"):
        launch(src, "k", np.zeros(1, np.float32), block=(1, 1, 1))


def test_write_to_constant_memory_is_refused():
    src = "__constant__ float c[2] = {1.0f, 2.0f};\n" \
          "__global__ void k(float* out) { float* p = (float*)c; p[0] = 3.0f; }"
    with pytest.raises(MemoryAccessError, match="__constant__"):
        launch(src, "k", np.zeros(1, np.float32), block=(1, 1, 1))


def test_emulator_stays_usable_after_a_fault():
    f, args = _unguarded_tiled()
    with pytest.raises(MemoryAccessError):
        f(*args, block=(16, 16, 1), grid=(3, 3))
    N = 32
    A = np.random.default_rng(0).standard_normal((N, N)).astype(np.float32)
    C = np.zeros_like(A)
    f(np.int32(N), In(A), In(A), Out(C), block=(16, 16, 1), grid=(2, 2))
    assert np.allclose(C, A @ A, rtol=1e-4, atol=1e-4)
    assert f.last_report.hazards == ()


def test_all_faults_share_one_base_class():
    assert issubclass(MemoryAccessError, KernelRuntimeError)


def test_out_array_starts_as_nan_so_unwritten_elements_show():
    src = "__global__ void k(float* out) { if (threadIdx.x < 2) out[threadIdx.x] = 1.0f; }"
    out = np.zeros(4, np.float32)
    f = SourceModule(src).get_function("k")
    f(Out(out), block=(4, 1, 1))
    assert list(out[:2]) == [1.0, 1.0] and np.isnan(out[2:]).all()


def test_memory_is_bounded_by_batches():
    # A launch of 1,048,576 threads runs in batches of blocks: N=1024 naive completes
    # in test_emulator_counters' slow test; here, a million-thread SAXPY.
    n = 1 << 20
    x = np.ones(n, np.float32)
    y = np.arange(n, dtype=np.float32)
    f = SourceModule(kernels.load("saxpy")).get_function("saxpy")
    f(np.int32(n), np.float32(2), In(x), InOut(y), block=(256, 1, 1), grid=(n // 256, 1),
      batch_threads=1 << 14)
    assert y[0] == 2 and y[-1] == 2 + (n - 1)
    assert f.last_report.global_load_requests == 2 * n // 32


@pytest.mark.parametrize("expr, where", [
    ("a[(int)threadIdx.x - 1]", "4 bytes before the start of the array 'a'"),
    ("a[threadIdx.x + 1]", "just past the end of the array 'a'"),
    ("s[threadIdx.x + 1]", "just past the end of the __shared__ array 's'"),
    ("a[threadIdx.x + 34]", "8 bytes past the end of the array 'a'"),
])
def test_out_of_bounds_loads_through_a_uniform_pointer(expr, where):
    # Loads through one pointer for all threads take the fast path; a fault must still be
    # reported exactly as the general path reports it.
    src = f"""
    __global__ void k(const float* a, float* out) {{
        __shared__ float s[32];
        s[threadIdx.x] = 1.0f;
        __syncthreads();
        out[threadIdx.x] = {expr};
    }}"""
    with pytest.raises(MemoryAccessError) as info:
        launch(src, "k", np.zeros(32, np.float32), np.zeros(32, np.float32), block=(32, 1, 1))
    assert where in str(info.value) and info.value.line == 6


def test_extern_shared_at_file_scope_and_a_forgotten_shared_size():
    src = """
    extern __shared__ float s[];
    __global__ void rev(int n, const float* x, float* y) {
        int i = threadIdx.x;
        s[i] = x[i];
        __syncthreads();
        y[i] = s[n - 1 - i];
    }"""
    f = SourceModule(src).get_function("rev")
    x = np.arange(8, dtype=np.float32)
    y = np.zeros_like(x)
    f(np.int32(8), In(x), Out(y), block=(8, 1, 1), grid=(1, 1), shared=32)
    assert np.array_equal(y, x[::-1])
    with pytest.raises(MemoryAccessError, match=r"'s' is extern __shared__.*shared=0"):
        f(np.int32(8), In(x), Out(y), block=(8, 1, 1), grid=(1, 1))


# Each static __shared__ array is its own allocation: an index past the end of As is a fault
# in As (named, with As's own size and element), never a silent access of the Bs after it.
_TWO_TILES = """
__global__ void k(float* out) {
    __shared__ float As[4][4];
    __shared__ float Bs[4][4];
    int tx = threadIdx.x, ty = threadIdx.y;
    As[ty][tx] = 1.0f;
    Bs[ty][tx] = 2.0f;
    __syncthreads();
    out[ty * 4 + tx] = READ;
}"""


@pytest.mark.parametrize("read, where, element, thread", [
    # As[3][4] is As's 17th element: the first byte of Bs, but not of As.
    ("As[ty][tx + 1]", "just past the end of the __shared__ array 'As' (64 bytes): one "
                       "element too far", "As[4][0]", (3, 3, 0)),
    ("As[ty + 1][tx]", "just past the end of the __shared__ array 'As' (64 bytes): one "
                       "element too far", "As[4][0]", (0, 3, 0)),
    ("Bs[ty - 1][tx]", "16 bytes before the start of the __shared__ array 'Bs' (64 bytes)",
     "Bs[-1][0]", (0, 0, 0)),
    # Row 3, column 2 is the first thread (in thread order) whose element lies past Bs.
    ("Bs[ty][tx + 2]", "just past the end of the __shared__ array 'Bs' (64 bytes)",
     "Bs[4][0]", (2, 3, 0)),
])
def test_shared_arrays_are_bounded_one_by_one(read, where, element, thread):
    src = _TWO_TILES.replace("READ", read)
    with pytest.raises(MemoryAccessError) as info:
        launch(src, "k", np.zeros(16, np.float32), block=(4, 4, 1))
    text = str(info.value)
    assert where in text and f"element: {element}" in text
    assert info.value.thread == thread and info.value.line == 9


def test_shared_store_past_its_array_names_it_and_the_row_overflow_stays_silent():
    # A store one row too far faults in As; As[1][4] is As[2][0] in memory (inside As), which
    # a GPU does not catch either.
    src = _TWO_TILES.replace("As[ty][tx] = 1.0f;", "As[ty + 1][tx] = 1.0f;") \
        .replace("READ", "0.0f")
    with pytest.raises(MemoryAccessError) as info:
        launch(src, "k", np.zeros(16, np.float32), block=(4, 4, 1))
    text = str(info.value)
    assert "Invalid __shared__ write" in text and "'As' (64 bytes)" in text
    assert "element: As[4][0]" in text and info.value.thread == (0, 3, 0)
    out = np.zeros(16, np.float32)
    launch(_TWO_TILES.replace("READ", "As[ty][tx + 1 - (tx == 3 && ty == 3)]"), "k", out,
           block=(4, 4, 1))
    assert (out == 1.0).all()


def test_shared_pointers_keep_their_array_and_the_layout():
    # A pointer chosen per thread between As and Bs indexes within its array; pointer
    # arithmetic inside one array is unchanged, and the two arrays take 128 bytes.
    src = """
    __global__ void k(float* out, float* gap) {
        __shared__ float As[4][4];
        __shared__ float Bs[4][4];
        int i = threadIdx.x;
        As[i / 4][i % 4] = i;
        Bs[i / 4][i % 4] = 100 + i;
        __syncthreads();
        float* p = (i % 2) ? &Bs[0][0] : &As[0][0];
        out[i] = p[15 - i];
        gap[i] = (float)(&Bs[3][1] - &Bs[0][0]) + 100.0f * (float)(&As[3][3] - As[1]);
    }"""
    out, gap = np.zeros(16, np.float32), np.zeros(16, np.float32)
    f = launch(src, "k", out, gap, block=(16, 1, 1))
    want = [(100 if i % 2 else 0) + 15 - i for i in range(16)]
    assert out.tolist() == want
    assert (gap == 13 + 100 * 11).all()
    assert f.shared_size_bytes == 128


def test_a_misaligned_shared_access_names_the_element_of_its_own_array():
    # s starts 16 bytes into shared memory (after a); &s[1] is 20: not a multiple of 16.
    src = """
    __global__ void k(float* out) {
        __shared__ float a[4];
        __shared__ float s[8];
        s[threadIdx.x] = 1.0f;
        a[threadIdx.x % 4] = 2.0f;
        __syncthreads();
        float4 v = *(float4*)&s[1];
        out[threadIdx.x] = v.x + a[0];
    }"""
    with pytest.raises(MemoryAccessError, match=r"Misaligned shared read of size 16 bytes at "
                                                r"s\[1\]: the address must be a multiple of 16"):
        launch(src, "k", np.zeros(8, np.float32), block=(8, 1, 1))


@pytest.mark.parametrize("loop, where, element", [
    # The loads repeat shifted by one element (or one row) a trip: the fast path reuses the
    # previous bounds plus the shift, and must still stop at each array's own ends.
    ("for (int k = 0; k <= 4; ++k) acc += As[ty][k];",
     "just past the end of the __shared__ array 'As' (64 bytes)", "As[4][0]"),
    ("for (int k = 3; k >= -1; --k) acc += Bs[k][tx];",
     "16 bytes before the start of the __shared__ array 'Bs' (64 bytes)", "Bs[-1][0]"),
])
def test_shared_bounds_hold_in_loops_through_the_fast_path(loop, where, element):
    src = _TWO_TILES.replace("out[ty * 4 + tx] = READ;",
                             f"float acc = 0.0f;\n    {loop}\n    out[ty * 4 + tx] = acc;")
    with pytest.raises(MemoryAccessError) as info:
        launch(src, "k", np.zeros(16, np.float32), block=(4, 4, 1))
    assert where in str(info.value) and f"element: {element}" in str(info.value)
