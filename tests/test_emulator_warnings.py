"""The emulator's KernelWarnings: mistakes that give no error and, on the emulator, often the
right answer.

- InputWriteWarning: a store into an array passed as In(...) (PyCUDA never copies it back);
- BlockShapeWarning: a block that does not match a shared array every store fills with one
  threadIdx component (and the hazard reports that it explains say so);
- UninitializedReadWarning: a local read before the thread gave it a value (definite
  assignment finds the candidates, the run confirms them per thread).

Each warning is checked for its text on the mistaken kernel and for silence on the corrected
one, on every conformance kernel with its real launch, and on the lessons' launches.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from pycparser import c_ast

from tilinglib import kernels, sgemm
from tilinglib.grading.source_checks import thread_indexed_stores, unset_reads
from tilinglib.emulator import In, InOut, Out, RaceWarning, SourceModule
from tilinglib.toolchain.frontend.program import parse
from tilinglib.toolchain.frontend.preprocess import preprocess
from tilinglib.errors import (BlockShapeWarning, InputWriteWarning, KernelWarning,
                              MemoryAccessError, OutputNotWrittenWarning, RaceError,
                              TilingLibWarning, UninitializedReadWarning)

ROOT = Path(__file__).resolve().parent.parent


def kernel_warnings(fn):
    """Run `fn()` and return the KernelWarnings it issued (RaceWarnings excluded) as
    (class, message, line) triples, in order."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message), w.lineno) for w in caught
            if issubclass(w.category, KernelWarning) and w.category is not RaceWarning]


def no_kernel_warnings(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelWarning)
        warnings.filterwarnings("default", category=RaceWarning)
        return fn()


def test_warning_classes_are_one_family():
    for cls in (InputWriteWarning, BlockShapeWarning, UninitializedReadWarning, RaceWarning,
                OutputNotWrittenWarning):
        assert issubclass(cls, KernelWarning) and issubclass(cls, TilingLibWarning)
        assert issubclass(cls, UserWarning)


# ----------------------------------------------------------------------------- writes to In

NAIVE = kernels.load("sgemm_naive")


def naive_launch(c_wrapper, n=48):
    A, B = sgemm.random_matrices(n, seed=0)
    C = np.zeros_like(A)
    f = SourceModule(NAIVE).get_function("sgemmNaive")
    f(np.int32(n), In(A), In(B), c_wrapper(C), block=(16, 16, 1), grid=(3, 3))
    return C, A, B


def store_line(source, text):
    return next(i for i, ln in enumerate(source.splitlines(), 1) if text in ln)


def test_a_store_into_an_in_array_warns_once_naming_kernel_line_and_fix():
    line = store_line(NAIVE, "C[row * N + col] =")
    got = kernel_warnings(lambda: naive_launch(In))
    # 2,304 threads in 9 blocks store into C: one warning for the site.
    assert got == [(InputWriteWarning,
                    f"kernel sgemmNaive writes to C at line {line}, but C was passed as "
                    f"tl.In(...): its writes are not copied back. Pass it as tl.Out(...) or "
                    f"tl.InOut(...).", line)]


@pytest.mark.parametrize("wrapper", [Out, InOut])
def test_out_and_inout_arrays_are_written_back_without_a_word(wrapper):
    C, A, B = no_kernel_warnings(lambda: naive_launch(wrapper))
    assert sgemm.relative_error(C, A, B) < 1e-5


def test_every_site_that_writes_an_in_array_is_named_atomics_included():
    src = """__global__ void k(int* hist, float* out)
{
    atomicAdd(&hist[threadIdx.x % 4], 1);
    out[threadIdx.x] = 1.0f;
    out[0] = 2.0f;
}"""
    f = SourceModule(src).get_function("k")
    hist, out = np.zeros(4, np.int32), np.zeros(64, np.float32)
    got = kernel_warnings(lambda: f(In(hist), In(out), block=(64, 1, 1)))
    assert [(c, ln) for c, _, ln in got] == [(InputWriteWarning, 3), (InputWriteWarning, 4),
                                             (InputWriteWarning, 5)]
    assert "writes to hist at line 3, but hist was passed as tl.In(...)" in got[0][1]
    assert "writes to out at line 4" in got[1][1]
    assert not hist.any() and not out.any()        # the writes really were lost


# ----------------------------------------------------------------------------- unwritten Out

def test_an_out_array_the_grid_does_not_cover_is_named_with_its_count():
    # Lesson 02's naive kernel at N = 128 with grid= forgotten: one 32 x 32 block writes
    # 1,024 of C's 128 x 128 elements; with grid (2, 2) 4,096 of them.
    n = 128
    A, B = sgemm.random_matrices(n, seed=0)
    f = SourceModule(NAIVE).get_function("sgemmNaive")
    line = store_line(NAIVE, "__global__ void sgemmNaive")
    for grid, written, launched in (((1, 1), 1024, "1 block of 1,024 threads"),
                                    ((2, 2), 4096, "4 blocks of 1,024 threads (4,096 threads)")):
        C = np.zeros((n, n), np.float32)
        got = kernel_warnings(lambda: f(np.int32(n), In(A), In(B), Out(C), block=(32, 32, 1),
                                        grid=grid))
        assert got == [(OutputNotWrittenWarning,
                        f"kernel sgemmNaive: {n * n - written:,} of C's 16,384 elements were "
                        f"never written by the kernel: on a GPU they hold garbage. Does the "
                        f"grid cover the whole output? grid={grid + (1,)} launches "
                        f"{launched}.", line)]
        # The elements it did not write are the emulator's poison, not zeros.
        assert np.count_nonzero(np.isnan(C)) == n * n - written


def test_unwritten_elements_warn_once_per_array_and_never_for_in_or_inout():
    src = """__global__ void k(float* a, float* b, float* c, float2* d)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i] = 1.0f;
    b[i / 2] = 2.0f;
    c[i] = 3.0f;
    if (i < 8) d[i] = make_float2(1.0f, 2.0f);
}"""
    f = SourceModule(src).get_function("k")
    a, b, c = np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(64, np.float32)
    # d: 32 floats seen as 16 float2; each float2 store writes two of its elements.
    # 4 batches of 16 threads: still one warning per array; a covers all of a.
    got = kernel_warnings(lambda: f(Out(a), Out(b), InOut(c), Out(np.zeros(32, np.float32)),
                                    block=(16, 1, 1), grid=(4, 1), batch_threads=16))
    assert [m.split(": ", 1)[1].split(" were")[0] for _, m, _ in got] == [
        "32 of b's 64 elements", "16 of d's 32 elements"]
    assert (b[:32] == 2).all() and np.isnan(b[32:]).all()
    # In(...) arrays are not results; InOut(...) ones keep what they held.
    assert kernel_warnings(lambda: f(Out(a), InOut(b), In(c), InOut(np.zeros(32, np.float32)),
                                     block=(16, 1, 1), grid=(4, 1))) \
        == [(InputWriteWarning, "kernel k writes to c at line 6, but c was passed as "
             "tl.In(...): its writes are not copied back. Pass it as tl.Out(...) or "
             "tl.InOut(...).", 6)]


# ----------------------------------------------------------------------------- block shape

TILED = kernels.load("sgemm_tiled")


def tiled_launch(block, tile=32, n=64, pad=0, source=TILED, **kw):
    A, B = sgemm.random_matrices(n, seed=0)
    C = np.zeros_like(A)
    f = SourceModule(source, options=[f"-DTILE={tile}", f"-DPAD={pad}"]).get_function("sgemmTiled")
    f(np.int32(n), In(A), In(B), Out(C), block=block, grid=(n // tile, n // tile), **kw)
    return f, C, A, B


SHORT_Y = ("block (32, 8, 1) has 8 threads along y, but As[TILE][TILE + PAD] and "
           "Bs[TILE][TILE + PAD] are indexed with threadIdx.y and have 32 rows: rows 8..31 "
           "are never written. Launch block=(32, 32, 1) (one thread per tile element).")


def test_a_block_with_too_few_rows_for_the_tile_is_named_with_the_launch_to_use():
    decl = store_line(TILED, "__shared__ float As")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f, *_ = tiled_launch((32, 8, 1))
    shape = [w for w in caught if w.category is BlockShapeWarning]
    assert [(str(w.message), w.lineno) for w in shape] == [(f"kernel sgemmTiled: {SHORT_Y}",
                                                            decl)]
    # The hazard report it explains says so, rather than only "uninitialised read".
    (race,) = [w for w in caught if w.category is RaceWarning]
    assert "Uninitialized __shared__ read of Bs[8][0]" in str(race.message)
    # ... once: it points at the BlockShapeWarning rather than repeating its text.
    assert str(race.message).endswith(
        "The block does not match the shared arrays: see the BlockShapeWarning above.")
    assert "rows 8..31" not in str(race.message)
    assert {h.kind for h in f.last_report.hazards} == {"uninitialized-read"}


def test_a_block_short_along_x_and_y_gets_the_block_that_fixes_both():
    # TILE=16, block (8, 8, 1): the first hazard shows the columns, a later one the rows;
    # one warning names both and suggests (16, 16, 1), not (16, 8, 1).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tiled_launch((8, 8, 1), tile=16, n=32)
    (shape,) = [str(w.message) for w in caught if w.category is BlockShapeWarning]
    assert shape == (
        "kernel sgemmTiled: block (8, 8, 1) has 8 threads along y, but As[TILE][TILE + PAD] "
        "and Bs[TILE][TILE + PAD] are indexed with threadIdx.y and have 16 rows: rows 8..15 "
        "are never written. block (8, 8, 1) has 8 threads along x, but As[TILE][TILE + PAD] "
        "and Bs[TILE][TILE + PAD] are indexed with threadIdx.x and have 16 columns: columns "
        "8..15 are never written. Launch block=(16, 16, 1) (one thread per tile element).")


def test_the_race_error_carries_the_hint_too():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RaceError) as info:
            tiled_launch((32, 8, 1), hazards="raise")
    # The hint ends the message; the quoted source line (added for every run-time error)
    # follows it.
    message, quote = str(info.value).split("\n   33 |             ")
    assert message.endswith(f"The block does not match the shared arrays: {SHORT_Y}")
    assert quote.startswith("sum += As[ty][k] * Bs[k][tx];")


def test_too_many_threads_along_x_are_named_before_the_fault():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(MemoryAccessError):
            tiled_launch((32, 16, 1), tile=16)
    (w,) = [w for w in caught if w.category is BlockShapeWarning]
    assert str(w.message) == (
        "kernel sgemmTiled: block (32, 16, 1) has 32 threads along x, but As[TILE][TILE + PAD] "
        "and Bs[TILE][TILE + PAD] are indexed with threadIdx.x and have 16 columns: the "
        "threads with threadIdx.x = 16..31 store outside their columns (into the next row). "
        "Launch block=(16, 16, 1) (one thread per tile element).")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(MemoryAccessError):
            tiled_launch((16, 32, 1), tile=16)
    (w,) = [w for w in caught if w.category is BlockShapeWarning]
    assert str(w.message).endswith(
        "indexed with threadIdx.y and have 16 rows: the threads with threadIdx.y = 16..31 store "
        "past their end. Launch block=(16, 16, 1) (one thread per tile element).")


@pytest.mark.parametrize("block, fault", [((1024, 1, 1), "x"), ((1, 1024, 1), "y"),
                                          ((16, 64, 1), "y")])
def test_the_block_suggested_fixes_the_axes_the_fault_did_not_show_too(block, fault):
    """A (1024, 1, 1) block for TILE = 32 faults on the columns first; the rows want 32
    threads as well: the warning's launch is (32, 32, 1), never (32, 1, 1) (lesson 04's
    exercise 04.2 showed that advice to a student)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(MemoryAccessError):
            tiled_launch(block, tile=32)
    (w,) = [w for w in caught if w.category is BlockShapeWarning]
    assert f"indexed with threadIdx.{fault}" in str(w.message)
    assert str(w.message).endswith("Launch block=(32, 32, 1) (one thread per tile element).")


@pytest.mark.parametrize("tile,pad", [(32, 0), (32, 1), (16, 0), (16, 1), (8, 1), (4, 0)])
def test_a_block_that_matches_the_tile_is_silent_padding_included(tile, pad):
    f, C, A, B = no_kernel_warnings(lambda: tiled_launch((tile, tile, 1), tile=tile, pad=pad))
    assert sgemm.relative_error(C, A, B) < 1e-5 and f.last_report.hazards == ()


def test_a_race_with_the_right_block_gets_no_block_hint():
    racy = sgemm.without_barrier(TILED, "first")
    A, B = sgemm.random_matrices(32, seed=0)
    f = SourceModule(racy, options=["-DTILE=16", "-DPAD=1"]).get_function("sgemmTiled")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(np.int32(32), In(A), In(B), Out(np.zeros_like(A)), block=(16, 16, 1), grid=(2, 2))
    assert [w.category for w in caught] == [RaceWarning]
    assert "block does not match" not in str(caught[0].message)


def test_a_race_warning_counts_the_other_hazards_in_plain_words():
    # Lesson 03's racy kernel: As and Bs each race; the warning shows the first and counts
    # the rest, with no placeholder for a function name the student never chose.
    racy = sgemm.without_barrier(TILED, "first")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f, *_ = tiled_launch((16, 16, 1), tile=16, n=32, source=racy)
    (race,) = [str(w.message) for w in caught if w.category is RaceWarning]
    assert len(f.last_report.hazards) == 2
    assert race.startswith("sgemmTiled: Race (read-after-write) on As[0][0]")
    assert race.endswith("(1 more hazard in this launch: the kernel function's "
                         ".last_report.hazards lists them all)")
    assert "<your" not in race


def test_an_oversized_array_that_is_never_read_past_the_block_is_no_mistake():
    # 256 slots, a 128-thread block, and loops over blockDim: correct, so no warning.
    src = """__global__ void blockSum(const float* x, float* out)
{
    __shared__ float cache[256];
    unsigned tid = threadIdx.x;
    cache[tid] = x[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) cache[tid] += cache[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = cache[0];
}"""
    x = np.arange(512, dtype=np.float32)
    out = np.zeros(4, np.float32)
    f = SourceModule(src).get_function("blockSum")
    no_kernel_warnings(lambda: f(In(x), Out(out), block=(128, 1, 1), grid=(4, 1)))
    np.testing.assert_array_equal(out, x.reshape(4, 128).sum(axis=1))


def funcdef(source, name, options=()):
    ast = parse(preprocess(source, list(options)))
    return next(n for n in ast.ext if isinstance(n, c_ast.FuncDef) and n.decl.name == name)


def indexed(body, ranks):
    return thread_indexed_stores(funcdef("__global__ void k(float* g)\n{\n" + body + "\n}\n",
                                         "k"), ranks)


def test_thread_indexed_positions_through_aliases_casts_and_atomics():
    assert indexed("__shared__ float t[8][4];\nint tx = threadIdx.x;\nconst int ty = threadIdx.y;\n"
                   "t[ty][tx] = 1.0f;\nt[ty][(int)threadIdx.x] += 2.0f;", {"t": 2}) == {
        "t": ("y", "x")}
    assert indexed("__shared__ int h[32];\natomicAdd(&h[threadIdx.x], 1);", {"h": 1}) == {
        "h": ("x",)}


def test_positions_that_are_not_one_plain_thread_index_are_left_alone():
    # a computed index, a reassigned alias, two components in one position
    assert indexed("__shared__ float t[64];\nt[threadIdx.x + 32] = 1.0f;\nt[threadIdx.x] = 0;",
                   {"t": 1}) == {"t": (None,)}
    assert indexed("__shared__ float t[64];\nint i = threadIdx.x;\ni += 1;\nt[i] = 1.0f;",
                   {"t": 1}) == {"t": (None,)}
    assert indexed("__shared__ float t[32][32];\nt[threadIdx.y][threadIdx.x] = 1.0f;\n"
                   "t[threadIdx.x][threadIdx.x] = 1.0f;", {"t": 2}) == {"t": (None, "x")}
    # written through a pointer, or a row used as one: not analysed at all
    assert indexed("__shared__ float t[32];\nfloat* p = &t[0];\nt[threadIdx.x] = 1.0f;",
                   {"t": 1}) == {}
    assert indexed("__shared__ float t[4][32];\nfloat* p = t[1];\nt[threadIdx.y][threadIdx.x] = 1;",
                   {"t": 2}) == {}


# ----------------------------------------------------------------------------- unset locals

UNSET_SUM = """__global__ void sgemm(int N, const float* A, const float* B, float* C)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N && col < N) {
        float sum;
        for (int k = 0; k < N; ++k) {
            float a = A[row * N + k];
            sum += a * B[k * N + col];
        }
        C[row * N + col] = sum;
    }
}"""


def run_sgemm(source, n=40, block=(16, 16, 1)):
    A, B = sgemm.random_matrices(n, seed=1)
    C = np.zeros_like(A)
    f = SourceModule(source).get_function("sgemm")
    f(np.int32(n), In(A), In(B), Out(C), block=block, grid=(-(-n // block[0]), -(-n // block[1])),
      batch_threads=512)
    return C, A, B


def test_an_accumulator_read_before_it_is_set_warns_once_at_its_line():
    # 1,600 threads in 9 blocks and 5 batches read 'sum' unset: one warning.
    got = kernel_warnings(lambda: run_sgemm(UNSET_SUM))
    assert got == [(UninitializedReadWarning,
                    "kernel sgemm: 'sum' is read at line 9 before it is given a value: on a GPU "
                    "it starts with whatever its register held. Write 'float sum = 0.0f;'. "
                    "(The first such read: thread (0, 0, 0) in block (0, 0, 0).)", 9)]


def test_the_corrected_accumulator_is_silent_and_right():
    fixed = UNSET_SUM.replace("float sum;", "float sum = 0.0f;")
    C, A, B = no_kernel_warnings(lambda: run_sgemm(fixed))
    assert sgemm.relative_error(C, A, B) < 1e-5


def unset_in(body, threads=32, params="int n, int* out"):
    src = f"__global__ void k({params})\n{{\n{body}\n}}\n"
    out = np.zeros(threads, np.int32)
    f = SourceModule(src).get_function("k")
    return kernel_warnings(lambda: f(np.int32(threads), InOut(out), block=(threads, 1, 1))), out


def test_only_the_threads_that_really_read_unset_values_count():
    # Definite assignment cannot prove 'x' set at line 6; the run shows every thread sets it
    # before it reads it (i > 0), so there is nothing to say.
    got, out = unset_in("int x;\nfor (int i = 0; i < 3; ++i) {\n"
                        "    if (i > 0) out[threadIdx.x] += x;\n    x = i;\n}")
    assert got == [] and out.tolist() == [1] * 32
    # Only threads 16..31 set 'v'; thread 0 reads it unset: named with the fix.
    got, _ = unset_in("int v;\nif (threadIdx.x >= 16) v = 1;\nout[threadIdx.x] = v;")
    assert [(c, ln) for c, _, ln in got] == [(UninitializedReadWarning, 5)]
    assert got[0][1].startswith("kernel k: 'v' is read at line 5 before it is given a value")
    assert "Write 'int v = 0;'" in got[0][1] and "thread (0, 0, 0)" in got[0][1]
    # Threads 0..15 only: the first thread that reads it unset is 16.
    got, _ = unset_in("unsigned v;\nif (threadIdx.x < 16) v = 1;\nout[threadIdx.x] = v;")
    assert "Write 'unsigned int v = 0;'" in got[0][1] and "thread (16, 0, 0)" in got[0][1]


def test_a_declaration_inside_a_loop_is_unset_again_each_time():
    got, _ = unset_in("for (int i = 0; i < 2; ++i) {\n    int t;\n    if (i == 0) t = 5;\n"
                      "    out[threadIdx.x] += t;\n}")
    assert [ln for _, _, ln in got] == [6]


def test_locals_of_device_functions_are_checked_too():
    src = ("__device__ int f(int n)\n{\n    int r;\n    if (n > 100) r = 1;\n    return r;\n}\n"
           "__global__ void k(int n, int* out)\n{\n    out[threadIdx.x] = f(n);\n}\n")
    out = np.zeros(32, np.int32)
    f = SourceModule(src).get_function("k")
    got = kernel_warnings(lambda: f(np.int32(4), Out(out), block=(32, 1, 1)))
    assert [(c, ln) for c, _, ln in got] == [(UninitializedReadWarning, 5)]
    assert "'r' is read at line 5" in got[0][1]
    # With n > 100 every thread sets it: nothing to say.
    no_kernel_warnings(lambda: f(np.int32(200), Out(out), block=(32, 1, 1)))
    assert out.tolist() == [1] * 32


def test_local_array_elements_are_checked_one_by_one():
    got, _ = unset_in("int r[4];\nfor (int i = 0; i < 3; ++i) r[i] = i;\n"
                      "out[threadIdx.x] = r[threadIdx.x % 4];")
    assert [(c, ln) for c, _, ln in got] == [(UninitializedReadWarning, 5)]
    assert got[0][1].startswith("kernel k: 'r[3]' is read at line 5 before it is given a value")
    assert "'int r[4] = {0};' zeroes them all" in got[0][1] and "thread (3, 0, 0)" in got[0][1]
    assert "__shared__" not in got[0][1]


def test_a_tile_that_lost_its_shared_is_told_to_be_shared_not_zeroed():
    # Lesson 03 with '__shared__' deleted from As: each thread stores As[ty][tx] into its own
    # copy and reads As[ty][k]; zeroing the array would not fix the kernel.
    src = TILED.replace("__shared__ float As[TILE][TILE + PAD];", "float As[TILE][TILE + PAD];")
    got = kernel_warnings(lambda: tiled_launch((16, 16, 1), tile=16, n=32, source=src))
    assert got == [(UninitializedReadWarning,
                    "kernel sgemmTiled: 'As[0][0]' is read at line 33 before it is given a "
                    "value: on a GPU it holds whatever its register or local memory held. A "
                    "local array belongs to one thread: each thread has its own 'As' and stores "
                    "only its own elements (As[threadIdx.y][threadIdx.x]), so the others never "
                    "get a value. If the block's threads fill it together, declare it "
                    "'__shared__ float As[TILE][TILE + PAD];' and put a __syncthreads() between "
                    "the writes and the reads. (The first such read: thread (1, 0, 0) in block "
                    "(0, 0, 0).)", 33)]
    got, out = unset_in("int r[4];\nfor (int i = 0; i < 4; ++i) r[i] = i;\n"
                        "out[threadIdx.x] = r[threadIdx.x % 4];")
    assert got == [] and out.tolist() == [i % 4 for i in range(32)]
    got, _ = unset_in("float acc[2][2] = {1.0f};\nout[threadIdx.x] = (int)acc[1][1];")
    assert got == []


def unset(body, name="k"):
    src = "__global__ void k(int n, float* A)\n{\n" + body + "\n}\n"
    return [(r.name, r.line) for r in unset_reads(funcdef(src, name))]


def test_definite_assignment_follows_branches_loops_and_jumps():
    assert unset("float s;\nif (n > 0) s = 1.0f; else s = 2.0f;\nA[0] = s;") == []
    assert unset("float s;\nif (n > 0) s = 1.0f;\nA[0] = s;") == [("s", 5)]
    assert unset("float s;\nif (n > 0) { s = 1.0f; } else { return; }\nA[0] = s;") == []
    # a loop may run no times; a do-while runs once
    assert unset("float s;\nfor (int i = 0; i < n; ++i) s = 1.0f;\nA[0] = s;") == [("s", 5)]
    assert unset("float s;\ndo { s = A[1]; } while (s < 0.0f);\nA[0] = s;") == []
    assert unset("float s;\nwhile (1) { s = 2.0f; break; }\nA[0] = s;") == []
    assert unset("float s;\nwhile (1) { if (n) break; s = 2.0f; }\nA[0] = s;") == [("s", 5)]
    # the right side of && may not run; both sides of ?: must set it
    assert unset("float s;\nif (n > 0 && (s = 1.0f) > 0.0f) A[1] = 0.0f;\nA[0] = s;") == [("s", 5)]
    assert unset("float s;\nn > 0 ? (s = 1.0f) : (s = 2.0f);\nA[0] = s;") == []
    assert unset("float s;\nswitch (n) { case 0: s = 1.0f; break; default: s = 2.0f; }\n"
                 "A[0] = s;") == []
    assert unset("float s;\nswitch (n) { case 0: s = 1.0f; break; }\nA[0] = s;") == [("s", 5)]
    # an inner declaration hides the outer one
    assert unset("float s = 0.0f;\n{ float s; A[0] = s; }\nA[1] = s;") == [("s", 4)]


# ----------------------------------------------------------------------------- correct kernels stay silent

def _conformance():
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    import test_conformance
    return test_conformance


CONF = _conformance()


@pytest.mark.parametrize("case", CONF.CASES, ids=[c.name for c in CONF.CASES])
def test_no_warning_on_any_conformance_kernel_with_its_real_launch(case):
    import tilinglib.emulator as E

    run, outputs, f = no_kernel_warnings(
        lambda: CONF.run_case(case, E.SourceModule, E.In, E.Out, E.InOut, hazards="raise"))
    CONF.check_outputs(run, outputs, case.name)


def test_the_conformance_kernels_get_no_run_time_checks_at_all():
    # Definite assignment proves every local of the 33 kernels set before use, and none
    # declares a local array without a value: the checks cost them nothing.
    for case in CONF.CASES:
        code = SourceModule(case.text(), options=list(case.options)).get_function(
            case.kernel)._code
        assert not code.check_local, case.name
        for node in parse(preprocess(case.text(), list(case.options))).ext:
            if isinstance(node, c_ast.FuncDef):
                assert unset_reads(node) == [], (case.name, node.decl.name)


def _lesson_cell(notebook, start):
    cells = json.loads((ROOT / "notebooks" / notebook).read_text())["cells"]
    return next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith(start))


def test_no_warning_on_the_lessons_launches():
    """The launches lessons 02-06 make on the emulator (same kernels, blocks and options),
    their race demonstrations excepted from RaceWarning only."""
    def lessons():
        sgemm.count_naive(64, block=(32, 32, 1))                       # 02
        for tile in sgemm.valid_tiles(64):                             # 03, 04
            for pad in (0, 1):                                         # 05
                sgemm.count_tiled(64, tile, pad=pad)
        block, grid = sgemm.tiled_launch(128, 16)                      # 03
        tiled_launch(block, tile=16, n=128)
        for which in ("first", "second"):                              # 03: racy on purpose
            sgemm.count_tiled(64, 16, source=sgemm.without_barrier(TILED, which))
        transpose = kernels.load("transpose")                          # 05
        for pad in (0, 1):
            a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
            out = np.zeros_like(a)
            f = SourceModule(transpose, options=[f"-DPAD={pad}"]).get_function("transposeShared")
            f(np.int32(64), In(a), Out(out), block=(32, 32, 1), grid=(2, 2), trace=True)
            assert np.array_equal(out, a.T)
        n = 4096                                                       # 06
        x, y = np.ones(n, np.float32), np.arange(n, dtype=np.float32)
        saxpy = SourceModule(kernels.load("saxpy")).get_function("saxpy")
        saxpy(np.int32(n), np.float32(2), In(x), InOut(y.copy()), block=(256, 1, 1),
              grid=(n // 256, 1))
        scope: dict = {}
        exec(_lesson_cell("06_what_tiling_does_not_fix.ipynb", "staged_src = "), scope)
        staged = SourceModule(scope["staged_src"]).get_function("saxpyStaged")
        staged(np.int32(n), np.float32(2), In(x), InOut(y.copy()), block=(256, 1, 1),
               grid=(n // 256, 1))
        db = kernels.load("sgemm_tiled_db")
        A, B = sgemm.random_matrices(64, seed=0)
        for src, name in ((TILED, "sgemmTiled"), (db, "sgemmTiledDB"),
                          (sgemm.without_barrier(db, "second"), "sgemmTiledDB")):
            f = SourceModule(src, options=["-DTILE=16"]).get_function(name)
            f(np.int32(64), In(A), In(B), Out(np.zeros_like(A)), block=(16, 16, 1),
              grid=(4, 4))

    assert kernel_warnings(lessons) == []


def test_the_graders_corpus_warns_only_where_it_should():
    """tests/submissions/*.cu under the grader's launch (block (TILE, TILE) or the file's
    `// grader: block=`): the unset accumulator and the tiles smaller than the block are
    reported; the correct kernels (a 32 x 8 block on a 32 x 32 tile among them) are not."""
    from tilinglib.grading import declared_tile

    warned = {}
    corpus = sorted((ROOT / "tests" / "submissions").glob("*.cu"))
    skipped = [p for p in corpus if any(w in p.stem for w in ("runaway", "wrong_signature",
                                                              "too_big"))]
    assert len(skipped) == 3
    for path in corpus:
        src = path.read_text()
        if path in skipped:
            continue
        tile = declared_tile(src)
        header = re.search(r"^// grader: block=\((.*?)\)$", src, re.M)
        block = tuple(int(b) for b in header.group(1).split(",")) if header else (tile, tile, 1)
        m, n, k = 20, 24, 40
        A, B = np.ones((m, k), np.float32), np.ones((k, n), np.float32)
        C = np.full((m, n), np.nan, np.float32)
        f = SourceModule(src).get_function("sgemm")

        def launch():
            try:
                f(np.int32(m), np.int32(n), np.int32(k), In(A), In(B), InOut(C), block=block,
                  grid=(-(-n // tile), -(-m // tile)), hazards="ignore", max_steps=200_000)
            except Exception:       # some faulty ones fault: their warnings come first
                pass
        warned[path.stem] = sorted({c.__name__ for c, _, _ in kernel_warnings(launch)})
    assert {k: v for k, v in warned.items() if v} == {
        "bad_uninitialised_accumulator": ["UninitializedReadWarning"],
        "bad_hardcoded_tile": ["BlockShapeWarning"],
        # both store into A, passed as In (an atomicAdd on A is a store too)
        "bad_atomic_loads": ["InputWriteWarning"],
        "bad_writes_input": ["InputWriteWarning"]}
    assert "good_rect_block" in warned and len(warned) == len(corpus) - len(skipped)
