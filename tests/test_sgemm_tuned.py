"""The tuned kernel (tilinglib/kernels/sgemm_tuned.cu, ladder step ``tuned``) on the emulator.

Integer-valued inputs (small integers, whose products and sums float32 holds exactly in any
order) make the product exact, whatever order split-K's atomicAdd applies the partial sums in:
every switch (FRAGDB, SWIZZLE, SPLITK, GSWZ, MINB, FAST, ASYNC with STAGES) must give A @ B to the last bit at shapes
that take every edge path. With random inputs and SPLITK = 1 the arithmetic is warptile_db's,
FMA for FMA in the same order, so the results are equal bit for bit. The swizzle's claim (no
bank conflicts in the transposed stores without padding, none in the float4 reads) is
checked on the emulator's counters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tilinglib import ladder
from tilinglib.errors import ArgumentError

# One warp step of 8 x 4 lanes, 2 x 2 steps per warp, two warps: small enough to be quick.
SMALL = {"BM": 64, "BN": 32, "BK": 8, "WM": 64, "WN": 32, "WMITER": 2, "WNITER": 2,
         "TM": 4, "TN": 4, "APAD": 4}
# (1, 1, 1): one element; K % 4 != 0: A read one float at a time; N % 4 != 0: B and C so;
# (70, 45, 33): every edge cut; (65, 64, 9): a K shorter than three split-K chunks need.
ODD_SHAPES = [(1, 1, 1), (70, 45, 33), (33, 36, 64), (65, 64, 9)]
SWITCHES = [dict(zip(("SWIZZLE", "FRAGDB", "SPLITK", "GSWZ"), v))
            for v in itertools.product((0, 1), (0, 1), (1, 3), (1, 2))]


@pytest.fixture(autouse=True)
def _emulator(monkeypatch):
    monkeypatch.setenv("TILINGLIB_BACKEND", "emulator")


def _integers(M, N, K, seed=3):
    rng = np.random.default_rng(seed)
    return (rng.integers(-4, 5, (M, K)).astype(np.float32),
            rng.integers(-4, 5, (K, N)).astype(np.float32))


def _params(switches):
    p = {**SMALL, **switches}
    if p.get("SWIZZLE"):
        p["APAD"] = 0
    return p


@pytest.mark.parametrize("switches", SWITCHES, ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
@pytest.mark.parametrize("M,N,K", ODD_SHAPES)
def test_every_switch_is_exact_on_odd_shapes(switches, M, N, K):
    A, B = _integers(M, N, K)
    p = _params(switches)
    assert ladder.get("tuned").valid(p) is None
    C = ladder.run("tuned", A, B, p)
    np.testing.assert_array_equal(C, A @ B)


def test_the_default_shape_is_exact_and_valid():
    step = ladder.get("tuned")
    assert step.valid() is None
    A, B = _integers(130, 260, 29)
    np.testing.assert_array_equal(ladder.run("tuned", A, B), A @ B)
    A, B = _integers(130, 260, 24)
    np.testing.assert_array_equal(ladder.run("tuned", A, B, {"SPLITK": 2, "GSWZ": 4}), A @ B)


def test_split_k_one_is_warptile_db_bit_for_bit():
    rng = np.random.default_rng(9)
    A = rng.standard_normal((70, 37), dtype=np.float32)
    B = rng.standard_normal((37, 45), dtype=np.float32)
    db = ladder.run("warptile_db", A, B, SMALL)
    for switches in ({"FRAGDB": 0}, {"FRAGDB": 1}, {"SWIZZLE": 1, "APAD": 0}, {"GSWZ": 2},
                     {"MINB": 2}, {"ASYNC": 1}, {"ASYNC": 2, "STAGES": 3}):
        np.testing.assert_array_equal(ladder.run("tuned", A, B, {**SMALL, **switches}), db)


# FAST=1: blocks inside A, B and C skip the edge tests on every full K tile. (130, 70, 37) with
# SMALL's 64 x 32 tiles has inside blocks, blocks cut at the bottom, at the right and both,
# and K = 4 full tiles of 8 and a partial one; (128, 64, 32) is inside everywhere.
FAST_SWITCHES = [{"FAST": 1}, {"FAST": 1, "FRAGDB": 0}, {"FAST": 1, "SWIZZLE": 1},
                 {"FAST": 1, "SPLITK": 3, "GSWZ": 2}, {"PINGPONG": 1},
                 {"FAST": 1, "PINGPONG": 1, "SWIZZLE": 1}, {"PINGPONG": 1, "SPLITK": 3},
                 # split-K past whole waves: 9 tiles of (130, 70) with waves of 4 leave 1 in
                 # the tail; waves of 16 leave all 9 there (every tile split)
                 {"SPLITK": 3, "TAILWAVE": 4}, {"FAST": 1, "PINGPONG": 1, "SPLITK": 2,
                                                "TAILWAVE": 4, "GSWZ": 2},
                 {"SPLITK": 2, "TAILWAVE": 16}]


@pytest.mark.parametrize("switches", FAST_SWITCHES,
                         ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
@pytest.mark.parametrize("M,N,K", [(130, 70, 37), (128, 64, 32), (130, 70, 36)])
def test_fast_path_is_exact_and_bit_for_bit(switches, M, N, K):
    A, B = _integers(M, N, K)
    np.testing.assert_array_equal(ladder.run("tuned", A, B, _params(switches)), A @ B)
    if switches.get("SPLITK", 1) == 1:          # same FMAs in the same order as FAST=0
        rng = np.random.default_rng(M + N + K)
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        slow = {**switches, "FAST": 0, "PINGPONG": 0}
        np.testing.assert_array_equal(ladder.run("tuned", A, B, _params(switches)),
                                      ladder.run("tuned", A, B, _params(slow)))


def test_fast_path_loads_the_same_bytes():
    # the skipped tests change no access: the same requests, sectors and bytes
    fast = ladder.count("tuned", 128, 64, 32, {**SMALL, "FAST": 1})
    slow = ladder.count("tuned", 128, 64, 32, {**SMALL, "FAST": 0})
    for name in ("global_load_requests", "global_load_sectors", "global_load_bytes_requested",
                 "shared_load_instructions", "shared_store_instructions"):
        assert getattr(fast, name) == getattr(slow, name) > 0, name


def test_split_k_grid_and_chunks():
    step = ladder.get("tuned")
    assert step.grid(1000, 1003, {"SPLITK": 1}) == (4, 8)           # ceil(1003/256), ceil(1000/128)
    assert step.grid(1000, 1003, {"SPLITK": 3}) == (4, 8, 3)
    assert step.blocks(1024, 1024, {"SPLITK": 4}) == 4 * 8 * 4
    assert step.adds_into_c({"SPLITK": 2}) and not step.adds_into_c()
    # a split launch is counted whole (its blocks take different K chunks); the FMAs are the
    # unsplit launch's: ceil(K / BK) tiles of BK in all, spread over the chunks
    one = ladder.count("tuned", 64, 64, 48, {**SMALL, "SPLITK": 1})
    three = ladder.count("tuned", 64, 64, 48, {**SMALL, "SPLITK": 3})
    assert not ladder.one_block_represents("tuned", 64, 64, 48, {**SMALL, "SPLITK": 3})
    assert one.flops == three.flops == 2 * 64 * 64 * 48
    assert three.grid == (2, 1, 3)
    # each chunk loads its own K range: the same global bytes in all
    assert one.global_load_bytes_requested == three.global_load_bytes_requested


def test_tail_split_grid_by_hand():
    step = ladder.get("tuned")
    # N = 4096, 128 x 256 tiles: 16 x 32 = 512 tiles; waves of 132 hold 396 of them whole,
    # and the 116 of the tail are split 9 ways: 396 + 1,044 blocks, a 1-D grid
    p = {"SPLITK": 9, "TAILWAVE": 132}
    assert step.grid(4096, 4096, p) == (396 + 116 * 9,)
    assert step.adds_into_c(p)
    assert not ladder.one_block_represents("tuned", 4096, 4096, 4096, p)
    # (130, 70) with SMALL's 64 x 32 tiles: 3 x 3 = 9 tiles, waves of 4 keep 8 whole
    assert step.grid(130, 70, {**SMALL, "SPLITK": 3, "TAILWAVE": 4}) == (8 + 1 * 3,)
    assert step.grid(130, 70, {**SMALL, "SPLITK": 2, "TAILWAVE": 16}) == (9 * 2,)
    # the FMAs and global bytes are the unsplit launch's (each chunk loads its own K range);
    # FMAs counted over whole tiles: 3 x 64 rows, 3 x 32 columns, 5 x 8 k (zeros past edges)
    whole = ladder.count("tuned", 130, 70, 37, {**SMALL})
    tail = ladder.count("tuned", 130, 70, 37, {**SMALL, "SPLITK": 3, "TAILWAVE": 4})
    assert tail.flops == whole.flops == 2 * (3 * 64) * (3 * 32) * (5 * 8)
    assert tail.global_load_bytes_requested == whole.global_load_bytes_requested


def test_one_block_represents_the_unsplit_launch():
    p = {**SMALL, "GSWZ": 2, "SWIZZLE": 1, "APAD": 0}
    M, N, K = 128, 64, 32
    assert ladder.one_block_represents("tuned", M, N, K, p)
    scaled = ladder.count("tuned", M, N, K, p)
    from tilinglib.emulator import In, Out, SourceModule
    from tilinglib import kernels

    step = ladder.get("tuned")
    f = SourceModule(kernels.load("sgemm_tuned"), options=step.defines(p)).get_function("sgemmTuned")
    A, B = _integers(M, N, K)
    C = np.zeros((M, N), np.float32)
    f(np.int32(M), np.int32(N), np.int32(K), In(A), In(B), Out(C), block=step.block(p),
      grid=step.grid(M, N, p))
    full = f.last_report
    for name in ("global_load_requests", "global_load_sectors", "global_load_bytes_requested",
                 "shared_load_wavefronts", "shared_store_wavefronts", "flops", "barriers"):
        assert getattr(scaled, name) == getattr(full, name), name
    np.testing.assert_array_equal(C, A @ B)


@pytest.mark.parametrize("BK", [4, 8, 16])
def test_swizzle_removes_the_store_conflicts_padding_removed(BK):
    base = {**SMALL, "BK": BK}
    plain = ladder.count("tuned", 64, 32, 2 * BK, {**base, "APAD": 0})
    padded = ladder.count("tuned", 64, 32, 2 * BK, {**base, "APAD": 4})
    swizzled = ladder.count("tuned", 64, 32, 2 * BK, {**base, "APAD": 0, "SWIZZLE": 1})
    if BK > 4:      # at BK = 4 one lane copies each row of A: nothing to collide
        assert plain.shared_store_bank_conflicts > 0
    assert swizzled.shared_store_bank_conflicts == 0
    assert swizzled.shared_load_bank_conflicts == plain.shared_load_bank_conflicts == 0
    # the same reads: a permutation of whole float4 slots within each row
    assert swizzled.shared_load_wavefronts == plain.shared_load_wavefronts
    assert padded.shared_store_bank_conflicts >= swizzled.shared_store_bank_conflicts
    step = ladder.get("tuned")
    assert step.shared_bytes({**base, "APAD": 0, "SWIZZLE": 1}) == 2 * BK * (64 + 32) * 4


def test_formulas_by_hand():
    step = ladder.get("tuned")
    p = step.resolve()
    # 128 x 256 block tile: 4 (128 + 256) / (128 * 256) = 0.046875 B/FMA; a lane 16 x 8
    assert step.global_bytes_per_fma(p) == 4 * (128 + 256) / (128 * 256)
    assert step.shared_bytes_per_fma(p) == 4 * (16 + 8) / (16 * 8)
    assert step.threads(p) == 256
    # two buffers of 12 x (128 + 4 + 256) floats; swizzled at BK = 16: 16 x (128 + 256)
    assert step.shared_bytes(p) == 2 * 12 * 388 * 4
    assert step.shared_bytes({"BK": 16, "APAD": 0, "SWIZZLE": 1}) == 2 * 16 * 384 * 4
    # registers: 128 accumulators + 2 x (16 + 8) fragments + 4 x (2 + 3) in flight + 30
    assert step.registers_estimate(p) == 128 + 48 + 20 + 30
    assert step.registers_estimate({"FRAGDB": 0}) == 128 + 24 + 20 + 30


@pytest.mark.parametrize("params, phrase", [
    ({"SWIZZLE": 1, "APAD": 0}, "BK in {4, 8, 16, 32}"),       # BK = 12
    ({"SWIZZLE": 1, "BK": 8}, "set APAD=0"),
    ({"SWIZZLE": 1, "BK": 8, "APAD": 0, "BM": 48, "BN": 32, "WM": 48, "WN": 32, "WMITER": 3,
      "WNITER": 1, "TM": 4, "TN": 4}, "BM a multiple of 32"),
    ({"FRAGDB": 2}, "0 (off) or 1 (on)"),
    ({"MINB": 2}, "would spill"),
    ({"SPLITK": 0}, "at least 1"),
    ({"ASYNC": 3}, "ASYNC is 0, 1"),
    ({"FAST": 2}, "FAST=2: a switch"),
    ({"PINGPONG": 1, "ASYNC": 1}, "set ASYNC=0"),
    ({"TAILWAVE": 132}, "set SPLITK to 2 or more"),
    ({"TAILWAVE": -1, "SPLITK": 2}, "TAILWAVE, ASYNC: at least 0"),
    ({"ASYNC": 1, "STAGES": 3}, "STAGES is 2 unless ASYNC=2"),
    ({"ASYNC": 2, "STAGES": 3}, "48 KiB"),        # 3 x 12 x (132 + 256) floats: 55,872 B
])
def test_valid_refuses_with_reason(params, phrase):
    why = ladder.get("tuned").valid(params)
    assert why is not None and phrase in why, why
    with pytest.raises(ArgumentError, match="cannot launch"):
        ladder.launch("tuned", 64, 64, 64, params)


# cp.async (ASYNC=1: B; ASYNC=2: A and B, in STAGES buffers), with the swizzle and split-K
ASYNC_SWITCHES = [{"ASYNC": 1}, {"ASYNC": 2, "STAGES": 2}, {"ASYNC": 2, "STAGES": 3},
                  {"ASYNC": 2, "STAGES": 3, "SWIZZLE": 1, "SPLITK": 3},
                  {"ASYNC": 1, "SWIZZLE": 1, "SPLITK": 3, "GSWZ": 2, "FRAGDB": 0}]


@pytest.mark.parametrize("switches", ASYNC_SWITCHES,
                         ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
@pytest.mark.parametrize("M,N,K", ODD_SHAPES)
def test_async_copies_are_exact_and_race_free_on_odd_shapes(switches, M, N, K):
    from tilinglib import kernels
    from tilinglib.emulator import In, InOut, Out, SourceModule

    p = _params({"SWIZZLE": 0, "FRAGDB": 1, "SPLITK": 1, "GSWZ": 1, **switches})
    step = ladder.get("tuned")
    assert step.valid(p) is None
    A, B = _integers(M, N, K)
    C = np.zeros((M, N), np.float32)
    f = SourceModule(kernels.load("sgemm_tuned"), options=step.defines(p)).get_function(
        "sgemmTuned")
    f(np.int32(M), np.int32(N), np.int32(K), In(A), In(B),
      (InOut if step.adds_into_c(p) else Out)(C), block=step.block(p),
      grid=step.grid(M, N, p), hazards="raise")
    np.testing.assert_array_equal(C, A @ B)


def test_async_default_shape_is_exact_at_an_odd_size():
    # the measured shape (two K tiles and a cut one, every edge of a 128 x 256 block)
    A, B = _integers(131, 259, 29)
    for switches in ({"ASYNC": 1, "GSWZ": 4}, {"ASYNC": 2, "STAGES": 3, "BK": 8}):
        assert ladder.get("tuned").valid(switches) is None
        np.testing.assert_array_equal(ladder.run("tuned", A, B, switches), A @ B)
    assert ladder.get("tuned").shared_bytes({"ASYNC": 2, "STAGES": 3, "BK": 8}) == \
        3 * 8 * (128 + 4 + 256) * 4


def test_minb_two_fits_a_smaller_lane_tile():
    # 64 accumulators at 256 threads: 65,536 / (2 x 256) = 128 registers allowed; the
    # estimate: 64 + (4 + 16) fragments + 4 x (1 + 1) in flight + 30 = 122 without FRAGDB,
    # 142 with its second pair of fragments (refused)
    p = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "WMITER": 1, "WNITER": 4,
         "TM": 4, "TN": 4, "APAD": 4, "MINB": 2, "FRAGDB": 0}
    step = ladder.get("tuned")
    assert step.registers_estimate(p) == 122
    assert step.valid(p) is None
    assert "would spill" in step.valid({**p, "FRAGDB": 1})


def test_tuned_is_found_by_name_but_kept_out_of_the_measured_ladder():
    assert ladder.get("tuned") is ladder.TUNED
    assert "tuned" not in ladder.names() and ladder.TUNING == [ladder.TUNED]
    with pytest.raises(ArgumentError, match="tuned"):
        ladder.get("nope")


def test_the_reference_bench_measures_the_tuned_kernel_too():
    # python -m tilinglib.devtools.bench --only-ladder: the ladder's steps, then tuned at its defaults
    from tilinglib.devtools import bench

    shapes = bench.ladder_shapes()
    assert [s.name for s, _ in shapes][-1] == "tuned"
    assert shapes[-1][1] == ladder.TUNED.resolve()


# -- on the GPU: the course's choice per size, and the switches of lesson 08's last steps ----

def _gpu_shapes(p):
    # inside blocks, blocks cut at the bottom and the right, and a partial last K tile;
    # then the odd shape the H200's sweep checks
    return [(2 * p["BM"] + 3, 2 * p["BN"] + 5, 5 * p["BK"] * p["SPLITK"] + 1), (1000, 1003, 999)]


@pytest.mark.gpu
@pytest.mark.parametrize("size", [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
                                  (8192, 8192, 8192), (1500, 2500, 3000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_courses_choice_is_exact_on_the_gpu(monkeypatch, size):
    from tilinglib import tile_choice

    monkeypatch.setenv("TILINGLIB_BACKEND", "pycuda")
    c = tile_choice.pick_per_size(size[1], M=size[0], K=size[2])
    p = ladder.get(c.step).resolve(c.params)
    for M, N, K in _gpu_shapes(p):
        A, B = _integers(M, N, K, seed=M + K)
        np.testing.assert_array_equal(ladder.run(c.step, A, B, p), A @ B)


@pytest.mark.gpu
@pytest.mark.parametrize("switches", [{"FAST": 1}, {"PINGPONG": 1}, {"FAST": 1, "PINGPONG": 1},
                                      {"BK": 16, "APAD": 0, "SWIZZLE": 1, "FAST": 1, "PINGPONG": 1},
                                      {"FAST": 1, "SPLITK": 9, "TAILWAVE": 132},
                                      {"FAST": 1, "PINGPONG": 1, "SPLITK": 3, "TAILWAVE": 4}],
                         ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
def test_the_last_steps_switches_are_exact_on_the_gpu(monkeypatch, switches):
    monkeypatch.setenv("TILINGLIB_BACKEND", "pycuda")
    p = ladder.TUNED.resolve(switches)
    for M, N, K in _gpu_shapes(p):
        A, B = _integers(M, N, K, seed=M + K)
        np.testing.assert_array_equal(ladder.run("tuned", A, B, p), A @ B)
    # with the switches off, the same FMAs in the same order (split-K aside): bit for bit
    if p["SPLITK"] == 1:
        rng = np.random.default_rng(11)
        A = rng.standard_normal((1000, 999), dtype=np.float32)
        B = rng.standard_normal((999, 1003), dtype=np.float32)
        off = {**p, "FAST": 0, "PINGPONG": 0}
        np.testing.assert_array_equal(ladder.run("tuned", A, B, p), ladder.run("tuned", A, B, off))


# nvcc warns on a local variable that a switch combination leaves unused (warning #177-D on
# stderr), and nbval fails a lesson cell whose compile prints it. clang's -Wunused-variable
# says the same of the kernel's text: none for any combination the course compiles.
UNUSED_CHECK = [{}, {"GSWZ": 4}, {"FRAGDB": 0}, {"SWIZZLE": 1, "APAD": 0, "BK": 16},
                {"SPLITK": 3}, {"SPLITK": 9, "TAILWAVE": 132}, {"FAST": 1, "PINGPONG": 1},
                {"FAST": 1, "PINGPONG": 1, "SPLITK": 2, "TAILWAVE": 132, "GSWZ": 4},
                {"ASYNC": 1}, {"ASYNC": 2, "STAGES": 3, "BK": 8}, {"MINB": 2, "BM": 64, "BN": 128,
                                                               "WM": 32, "WN": 64, "WMITER": 1}]


@pytest.mark.parametrize("switches", UNUSED_CHECK, ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()) or "defaults")
def test_no_switch_combination_leaves_a_variable_unused(switches):
    import subprocess

    from tilinglib import kernels
    from tilinglib.toolchain.frontend import clang

    p = ladder.TUNED.resolve(switches)
    assert ladder.TUNED.valid(p) is None
    header = "#include <cuda_pipeline.h>"
    src = kernels.load("sgemm_tuned").replace(header, "")        # the prelude declares it
    defines = "".join(f"#define {k} {v}\n" for k, v in p.items())
    text, _ = clang.clang_input(defines + 'extern "C" {\n' + src + "\n}\n",
                                included=("cuda_pipeline.h",) if p["ASYNC"] else ())
    flags = [f for f in clang.FLAGS if f not in ("-w", "-Xclang", "-ast-dump=json", "-")]
    done = subprocess.run(clang.clang_command() + flags + ["-Wunused-variable", "-"],
                          input=text.encode(), capture_output=True, timeout=120)
    said = done.stderr.decode()
    assert done.returncode == 0, said[-800:]
    assert "unused variable" not in said, [line for line in said.splitlines() if "unused" in line]
