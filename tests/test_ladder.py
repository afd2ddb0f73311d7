"""tilinglib.ladder: each step's kernel against NumPy on the emulator, its refusals, and its
bytes-per-FMA formulas against the emulator's counters."""

from __future__ import annotations

import numpy as np
import pytest

from tilinglib import kernels, ladder
from tilinglib.errors import ArgumentError
from tilinglib.sgemm import relative_error

# Small tile shapes keep the emulator quick; the defaults are tested once each below.
SMALL = {
    "coarse": {"BM": 32, "BN": 32, "BK": 8, "TM": 4},
    "regtile2d": {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4},
}
ODD_SHAPES = [(1, 1, 1), (31, 31, 31), (33, 33, 33), (65, 47, 129), (1, 40, 3), (40, 1, 70)]


@pytest.fixture(autouse=True)
def _emulator(monkeypatch):
    monkeypatch.setenv("TILINGLIB_BACKEND", "emulator")


def _inputs(M, N, K, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K), dtype=np.float32),
            rng.standard_normal((K, N), dtype=np.float32))


def test_steps_in_ladder_order_and_files_exist():
    assert ladder.names()[:3] == ["tiled", "coarse", "regtile2d"]
    for s in ladder.STEPS:
        src = kernels.load(s.kernel)
        assert f"{s.function}(int " in src
        for name in s.parameters:
            assert f"#ifndef {name}" in src, (s.name, name)


@pytest.mark.parametrize("name", ["coarse", "regtile2d"])
@pytest.mark.parametrize("M,N,K", ODD_SHAPES)
def test_odd_shapes_match_numpy(name, M, N, K):
    A, B = _inputs(M, N, K)
    C = ladder.run(name, A, B, SMALL[name])
    assert C.shape == (M, N) and C.dtype == np.float32
    assert relative_error(C, A, B) < 1e-5


@pytest.mark.parametrize("name", ["coarse", "regtile2d"])
def test_default_tile_shape_matches_numpy(name):
    A, B = _inputs(70, 130, 20)      # over one block tile wide, a partial one down
    C = ladder.run(name, A, B)
    assert relative_error(C, A, B) < 1e-5


@pytest.mark.parametrize("params", [{"TM": 1}, {"TM": 2, "BK": 4}, {"BM": 16, "BN": 64, "TM": 8},
                                    {"BK": 3, "TM": 4}])
def test_coarse_other_shapes_match_numpy(params):
    A, B = _inputs(37, 70, 41)
    assert relative_error(ladder.run("coarse", A, B, {**SMALL["coarse"], **params}), A, B) < 1e-5


@pytest.mark.parametrize("params", [{"TM": 8, "TN": 2}, {"TM": 2, "TN": 8, "BK": 5},
                                    {"BM": 64, "BN": 16, "TM": 8, "TN": 2}])
def test_regtile2d_other_shapes_match_numpy(params):
    A, B = _inputs(37, 70, 41)
    C = ladder.run("regtile2d", A, B, {**SMALL["regtile2d"], **params})
    assert relative_error(C, A, B) < 1e-5


def test_tiled_step_is_lesson_03_kernel_on_square_matrices():
    A, B = _inputs(64, 64, 64)
    assert relative_error(ladder.run("tiled", A, B, {"TILE": 16}), A, B) < 1e-5
    with pytest.raises(ArgumentError, match="square"):
        ladder.run("tiled", *_inputs(64, 32, 64))
    with pytest.raises(ArgumentError, match="N % TILE"):
        ladder.launch("tiled", 48, 48, 48, {"TILE": 32})


def test_launch_shapes():
    assert ladder.launch("coarse", 100, 200, 7) == ((512, 1, 1), (4, 2))
    assert ladder.launch("regtile2d", 100, 200, 7, {"TM": 4}) == ((512, 1, 1), (2, 1))
    assert ladder.launch("tiled", 64, 64, 64, {"TILE": 16}) == ((16, 16, 1), (4, 4))


@pytest.mark.parametrize("name,params,phrase", [
    ("coarse", {"TM": 3}, "does not divide BM"),
    ("coarse", {"BM": 128, "BN": 128, "TM": 4}, "at most 1,024"),
    ("coarse", {"BM": 8, "BN": 8, "TM": 8}, "multiple of 32"),
    ("coarse", {"BK": 128, "BM": 64, "BN": 64}, "48 KiB"),
    ("regtile2d", {"TN": 3}, "does not divide BN"),
    ("regtile2d", {"TM": 16, "TN": 16}, "registers"),
    ("regtile2d", {"TM": 0}, "at least 1"),
    ("regtile2d", {"TX": 4}, "no parameter 'TX'"),
    ("regtile2d", {"TM": 2.5}, "whole number"),
    ("tiled", {"TILE": 64}, "over 1,024"),
])
def test_valid_refuses_with_reason(name, params, phrase):
    why = ladder.get(name).valid(params)
    assert why is not None and phrase in why
    with pytest.raises(ArgumentError, match="cannot launch|no parameter|whole number"):
        ladder.launch(name, 64, 64, 64, params)


def test_valid_accepts_defaults_and_choices_are_the_valid_ones():
    for s in ladder.STEPS:
        assert s.valid() is None, s.name
    # 128-row tile, TN = 8: TM = 1 gives 2,048 threads, TM = 3 does not divide 128,
    # TM = 32 needs 32*8 + 40 + 30 registers.
    assert ladder.choices("regtile2d", "TM", [1, 2, 3, 4, 8, 16, 32]) == [2, 4, 8, 16]
    assert ladder.choices("tiled", "TILE", range(1, 65)) == [8, 16, 24, 32]
    with pytest.raises(ArgumentError, match="no parameter"):
        ladder.choices("coarse", "TN", [1])


def test_bad_arrays_are_refused_clearly():
    A, B = _inputs(8, 8, 8)
    with pytest.raises(ArgumentError, match="float32"):
        ladder.run("coarse", A.astype(np.float64), B)
    with pytest.raises(ArgumentError, match="columns must equal"):
        ladder.run("coarse", A, B[:5])
    with pytest.raises(ArgumentError, match="2-D"):
        ladder.run("coarse", A.ravel(), B)
    with pytest.raises(ArgumentError, match="no ladder step"):
        ladder.get("cublas")


def test_formulas_by_hand():
    c, r = ladder.get("coarse"), ladder.get("regtile2d")
    # 1-D: 9 shared loads (8 of A, 1 of B) per 8 FMAs; tiles of 64 + 64 floats per 64*64 FMAs
    assert c.shared_bytes_per_fma() == 4 * 9 / 8
    assert c.global_bytes_per_fma() == 4 * 128 / 4096
    # 2-D 8x8: 16 loads per 64 FMAs = 1 byte per FMA; 128x128 tile: 1/16 byte per FMA
    assert r.shared_bytes_per_fma() == 1.0
    assert r.global_bytes_per_fma() == 0.0625
    assert ladder.get("tiled").shared_bytes_per_fma({"TILE": 16}) == 8.0
    assert ladder.get("tiled").global_bytes_per_fma({"TILE": 16}) == 0.5


@pytest.mark.parametrize("name,params,shape", [
    ("tiled", {"TILE": 16}, (32, 32, 32)),
    ("tiled", {"TILE": 8}, (48, 48, 48)),
    ("coarse", SMALL["coarse"], (64, 32, 96)),
    ("coarse", {"BM": 16, "BN": 64, "BK": 4, "TM": 2}, (32, 128, 8)),
    ("coarse", {"BM": 64, "BN": 32, "BK": 8, "TM": 8}, (128, 64, 16)),
    ("regtile2d", SMALL["regtile2d"], (64, 96, 32)),
    ("regtile2d", {"BM": 64, "BN": 32, "BK": 4, "TM": 8, "TN": 2}, (64, 64, 12)),
    ("regtile2d", {"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 8}, (128, 64, 24)),
])
def test_formulas_equal_emulator_counters(name, params, shape):
    s = ladder.get(name)
    report = ladder.count(s, *shape, params)
    M, N, K = shape
    assert report.flops == 2 * M * N * K
    g, sh = ladder.measured_bytes_per_fma(report)
    assert g == pytest.approx(s.global_bytes_per_fma(params), rel=1e-12)
    assert sh == pytest.approx(s.shared_bytes_per_fma(params), rel=1e-12)
    assert report.shared_bytes == s.shared_bytes(params)


def test_measure_on_the_emulator_counts_what_the_formulas_say():
    m = ladder.measure("regtile2d", 64, {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4})
    assert m.backend == "emulator" and m.relative_error < 1e-5
    assert m.counted_global_bytes_per_fma == m.formula_global_bytes_per_fma == 4 * 64 / 32 ** 2
    assert m.counted_shared_bytes_per_fma == m.formula_shared_bytes_per_fma == 2.0
    assert m.gflops is None and m.registers is None
    assert m.threads == 64 and m.static_shared_bytes == 2 * 32 * 8 * 4


def test_ladder_explorer_offers_only_valid_shapes_and_recounts():
    from tilinglib import widgets

    e = widgets.ladder_explorer("regtile2d", 64, value={"BM": 32, "BN": 32, "TM": 4, "TN": 4})
    # BM = 16 is 32 threads, 64 is 128: offered; 128 and 256 do not divide N = 64
    assert list(e.sliders["BM"].options) == [16, 32, 64]
    for name, slider in e.sliders.items():
        for v in slider.options:
            assert ladder.get("regtile2d").valid({**e.params, name: v}) is None
    assert e.values["shared_counted"] == 2.0
    e.select(TM=8)
    assert e.params["TM"] == 8 and e.values["shared_counted"] == e.values["shared_formula"] == 1.5
    assert 'data-state="idle"' in e.status.value
    with pytest.raises(widgets.WidgetArgumentError, match="not offered"):
        e.select(TN=3)
    with pytest.raises(widgets.WidgetArgumentError, match="cannot run"):
        widgets.ladder_explorer("regtile2d", 64, value={"TM": 3})


def _reference_with(runs, counters):
    from tilinglib import reference

    data = reference.load("h200").to_dict()
    data["runs"] = data["runs"] + runs
    data["counters"] = data["counters"] + counters
    return reference.from_dict(data, "test")


def test_reference_lookups_find_a_step_by_its_params_and_say_none_otherwise():
    p = ladder.get("regtile2d").resolve({"TM": 4})
    run = {"kernel": "sgemm_regtile2d", "N": 4096, "block": [512, 1, 1], "tile": None,
           "pad": None, "static_shared_bytes": 8192, "gflops": 1234.5, "params": p,
           "registers": 90}
    counters = {"kernel": "sgemm_regtile2d", "N": 1024, "block": [512, 1, 1], "tile": None,
                "pad": None, "metrics": {
                    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 2 * 1024 ** 3 / 4096,
                    "smsp__inst_executed_op_shared_ld.sum": 12 * 1024 ** 3 / 1024,
                    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1024 ** 3}}
    ref = _reference_with([run], [counters])
    found = ladder.reference_run("regtile2d", {"TM": 4}, ref=ref)
    assert found.gflops == 1234.5 and found.extra["registers"] == 90
    # a shape the data does not hold (the ladder's own run is at the defaults, TM = 8)
    assert ladder.reference_run("regtile2d", {"TM": 2}, ref=ref) is None
    assert ladder.reference_run("regtile2d", {"TM": 4}, N=1024, ref=ref) is None
    # reference.py does not keep a counter set's params (yet): no match, never a wrong one.
    assert ladder.reference_counters("regtile2d", {"TM": 4}, ref=ref) is None
    # requests x 128 B / FMAs: 2 N^3 / 4,096 requests -> 1/16 B; 12 N^3 / 1,024 LDS -> 1.5 B
    cs = [c for c in ref.counter_sets if c.kernel == "sgemm_regtile2d"][0]
    assert ladder.ncu_bytes_per_fma(cs) == (0.0625, 1.5)
    tiled = ladder.reference_counters("tiled", {"TILE": 32})   # lesson 03's, measured
    g, s = ladder.ncu_bytes_per_fma(tiled)
    assert g == 0.25 and s == 5.0   # 8/TILE; nvcc's LDS.128 leaves 5/8 of the source's 8
    assert ladder.reference_run("tiled", {"TILE": 32}).gflops == 8997.2


def test_ptxas_table_covers_the_lesson_shapes_and_agrees_with_valid():
    # Read by bench/ptxas_registers.py from nvcc -Xptxas -v for sm_90 (CUDA 13.0).
    r = ladder.ptxas_registers("regtile2d")
    assert r["registers"] == 113 and r["spill_store_bytes"] == 0 and r["shared_bytes"] == 8192
    assert "sm_90" in r["label"]
    assert ladder.ptxas_registers("regtile2d", {"TM": 2}) is None      # not compiled
    big = {"TM": 16, "TN": 16}
    spilled = ladder.ptxas_registers("regtile2d", big)
    assert spilled["registers"] == 255 and spilled["spill_store_bytes"] > 0
    assert "registers" in ladder.get("regtile2d").valid(big)          # refused, and rightly
    for s, p in [("coarse", {}), ("tiled", {"TILE": 32}), ("regtile2d", {"TM": 16})]:
        row = ladder.ptxas_registers(s, p)
        assert row["shared_bytes"] == ladder.get(s).shared_bytes(p)
        # __launch_bounds__: ptxas keeps every block within an SM's 65,536 registers
        assert row["registers"] * ladder.get(s).threads(p) <= 65536


def test_gpu_script_launches_as_the_ladder_does():
    # bench/gpu_regtile.py is standalone (no tilinglib on the GPU machine): its launch
    # shapes must be the ladder's, and every shape it times must be valid.
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "bench" / "gpu_regtile.py"
    spec = importlib.util.spec_from_file_location("gpu_regtile", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name, kernel, p in mod.SHAPES:
        step = ladder.get(name)
        assert step.kernel == kernel and step.valid(p) is None, (name, p)
        assert mod.FUNCTIONS[kernel] == step.function
        for M, N in ((4096, 4096), (1000, 1030)):
            if step.square_only and M != N:
                continue
            assert mod.launch_shape(kernel, p, M, N) == ladder.launch(step, M, N, M, p)


def _full_launch_report(step, M, N, K, params, seed=0):
    """The whole launch's report, every block run (what `count` saves work on)."""
    from tilinglib.emulator import In, Out

    s = ladder.get(step)
    p = s.resolve(params)
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = np.zeros((M, N), dtype=np.float32)
    f = ladder._function("emulator-always", s.kernel, s.function, tuple(s.defines(p)))
    ladder._call(f, s, p, A, B, C, In, Out)
    assert relative_error(C, A, B) < 1e-5
    return f.last_report


# Shapes where every block is full and moves by whole sectors (one block counts for all),
# among them K not a multiple of BK, a BK = 12 that cuts A's rows across sectors, and more
# blocks along one axis than the other.
ONE_BLOCK_CASES = [
    ("tiled", {"TILE": 8}, (32, 32, 32)),
    ("tiled", {"TILE": 16}, (48, 48, 48)),
    ("coarse", {"BM": 32, "BN": 32, "BK": 8, "TM": 4}, (64, 96, 40)),
    ("coarse", {"BM": 32, "BN": 16, "BK": 4, "TM": 8}, (96, 32, 30)),
    ("regtile2d", {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4}, (64, 64, 37)),
    ("vec4", {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4}, (64, 96, 32)),
    ("vec4", {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4}, (64, 64, 30)),
    ("warptile", {"BM": 32, "BN": 64, "BK": 8, "WM": 32, "WN": 32, "WMITER": 1, "WNITER": 2,
                  "TM": 4, "TN": 4, "APAD": 4}, (64, 128, 24)),
    ("warptile_db", {"BM": 32, "BN": 64, "BK": 12, "WM": 32, "WN": 32, "WMITER": 1,
                     "WNITER": 2, "TM": 4, "TN": 4, "APAD": 4}, (64, 128, 36)),
]


@pytest.mark.parametrize("name, params, shape", ONE_BLOCK_CASES)
def test_one_block_counts_equal_the_whole_launch(name, params, shape, monkeypatch):
    M, N, K = shape
    assert ladder.one_block_represents(name, M, N, K, params)
    monkeypatch.setenv("TILINGLIB_CACHE_DIR", "off")     # counted here, not found on disk
    ladder._COUNTS.clear()
    one = ladder.count(name, M, N, K, params)
    full = _full_launch_report(name, M, N, K, params)
    assert one.as_dict() == full.as_dict()
    assert one.grid == full.grid and one.threads == full.threads and one.flops > 0


@pytest.mark.parametrize("name, params, shape, why", [
    ("coarse", {"BM": 64, "BN": 4, "BK": 8, "TM": 8}, (64, 16, 16),
     "a block 4 columns wide moves B by 16 bytes, half a sector"),
    ("coarse", {"BM": 32, "BN": 32, "BK": 8, "TM": 4}, (40, 64, 32), "M % BM: partial blocks"),
    ("regtile2d", {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4}, (32, 32, 32), "one block"),
    ("coarse", {"BM": 4, "BN": 32, "BK": 8, "TM": 4}, (8, 32, 31),
     "BM·K = 124 floats is not whole sectors"),
])
def test_one_block_is_not_taken_for_all_where_the_blocks_differ(name, params, shape, why,
                                                                monkeypatch):
    M, N, K = shape
    assert not ladder.one_block_represents(name, M, N, K, params), why
    # and there the full launch is what count reports
    monkeypatch.setenv("TILINGLIB_CACHE_DIR", "off")
    ladder._COUNTS.clear()
    assert ladder.count(name, M, N, K, params).as_dict() == \
        _full_launch_report(name, M, N, K, params).as_dict()


def test_blocks_that_move_by_half_sectors_really_differ():
    """The sector condition is needed: with BM·K = 124 floats, block row 1 reads A 16
    bytes off block row 0's sector boundaries, so block (0, 0) times the blocks would count
    other sectors than the launch's."""
    from tilinglib.emulator import In, InOut

    p = {"BM": 4, "BN": 32, "BK": 8, "TM": 4}
    full = _full_launch_report("coarse", 8, 32, 31, p)
    s = ladder.get("coarse")
    p = s.resolve(p)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((8, 31), dtype=np.float32)
    B = rng.standard_normal((31, 32), dtype=np.float32)
    f = ladder._function("emulator-always", s.kernel, s.function, tuple(s.defines(p)))
    ladder._call(f, s, p, A, B, np.zeros((8, 32), np.float32), In, InOut, grid=(1, 1))
    assert f.last_report.global_load_sectors * 2 != full.global_load_sectors


@pytest.mark.parametrize("name, params", [
    ("coarse", {"BM": 32, "BN": 32, "BK": 8, "TM": 4}),
    ("coarse", {"BM": 32, "BN": 32, "BK": 4, "TM": 4}),
    ("regtile2d", {"BM": 32, "BN": 32, "BK": 16, "TM": 4, "TN": 4}),
    ("vec4", {"BM": 32, "BN": 32, "BK": 4, "TM": 4, "TN": 4}),
    ("warptile", {"BM": 32, "BN": 64, "BK": 8, "WM": 32, "WN": 32, "WMITER": 1, "WNITER": 2,
                  "TM": 4, "TN": 4, "APAD": 0}),
    ("warptile_db", {"BM": 32, "BN": 64, "BK": 12, "WM": 32, "WN": 32, "WMITER": 1,
                     "WNITER": 2, "TM": 4, "TN": 4, "APAD": 4}),
])
def test_whole_periods_of_the_tile_loop_give_the_bytes_per_fma_of_all_of_it(name, params):
    """measure counts the emulator's N x N product over tile_loop_k steps: the bytes per
    FMA (and the sectors per request) are those of K = N."""
    s = ladder.get(name)
    N = 96 if s.resolve(params)["BK"] == 12 else 64
    k = ladder.tile_loop_k(s, N, params)
    assert k < N and N % k == 0
    short, whole = ladder.count(s, N, N, k, params), ladder.count(s, N, N, N, params)
    width = s.shared_load_width
    assert ladder.measured_bytes_per_fma(short, shared_bytes_per_load=width) == \
        ladder.measured_bytes_per_fma(whole, shared_bytes_per_load=width)
    assert short.global_load_sectors * whole.global_load_requests == \
        whole.global_load_sectors * short.global_load_requests
    assert short.shared_load_wavefronts * whole.shared_load_instructions == \
        whole.shared_load_wavefronts * short.shared_load_instructions
    assert ladder.tile_loop_k("tiled", 64) == 64


def test_run_kept_in_the_disk_cache_by_kernel_shape_and_inputs(tmp_path, monkeypatch):
    from tilinglib.backend import backend_name

    if backend_name() != "emulator":
        pytest.skip("the disk cache keeps the emulator's results only")
    monkeypatch.setenv("TILINGLIB_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(3)
    A = rng.integers(-4, 5, (40, 24)).astype(np.float32)
    B = rng.integers(-4, 5, (24, 36)).astype(np.float32)
    p = {"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 4}
    first = ladder.run("regtile2d", A, B, p)
    kept = lambda: sorted(tmp_path.rglob("ladder_runs/*"))
    assert len(kept()) == 1 and np.array_equal(first, A @ B)
    again = ladder.run("regtile2d", A, B, p)
    assert np.array_equal(again, first) and again.dtype == np.float32
    ladder.run("regtile2d", A, B + 1, p)                        # other inputs, another entry
    ladder.run("regtile2d", A, B, {**p, "TM": 8})               # another tile shape
    assert len(kept()) == 3
    monkeypatch.setenv("TILINGLIB_CACHE_DIR", "off")
    assert np.array_equal(ladder.run("regtile2d", A, B, p), first)
    assert len(kept()) == 3
