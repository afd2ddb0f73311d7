"""tilinglib.tile_choice: the wave arithmetic by hand, blocks per SM from the H200's register
counts, the configurations the bench sweeps, the data file's reading, and the choice per
size from data and from the wave model."""

from __future__ import annotations

import json

import pytest

from tilinglib import ladder, reference, tile_choice as tc
from tilinglib.errors import ArgumentError


def test_waves_by_hand():
    # lesson 08's N = 1024 case: 1024/256 x 1024/128 = 4 x 8 = 32 blocks, one per SM
    w = tc.waves(1024, 1024, (128, 256), 1)
    assert (w.blocks, w.per_wave, w.waves, w.tail_blocks) == (32, 132, 1, 32)
    assert w.efficiency == 32 / 132 and w.busy_sms_last_wave == 32
    # N = 4096: 16 x 32 = 512 blocks = 3 full waves of 132 and a tail of 512 - 396 = 116
    w = tc.waves(4096, 4096, (128, 256), 1)
    assert (w.blocks, w.waves, w.tail_blocks) == (512, 4, 116)
    assert w.efficiency == 512 / 528
    # three blocks per SM: 396 per wave; 128 blocks fill a third of it
    w = tc.waves(1024, 1024, (64, 128), 3)
    assert (w.blocks, w.per_wave, w.waves) == (128, 396, 1)
    assert w.efficiency == 128 / 396 and w.busy_sms_last_wave == 128
    # split-K multiplies the blocks; edges round up: ceil(1000/128) x ceil(1003/256) = 8 x 4
    assert tc.waves(1024, 1024, (128, 256), 1, splitk=4).blocks == 128
    assert tc.waves(1000, 1003, (128, 256), 1).blocks == 32
    w = tc.waves(8192, 8192, (128, 256), 1, sms=100)
    assert (w.blocks, w.waves, w.tail_blocks) == (2048, 21, 48)
    assert "2,048 blocks" in str(w) and "21 waves" in str(w)
    for bad in ({"M": 0}, {"blocks_per_sm": 0}, {"splitk": 1.5}):
        kw = dict(M=64, N=64, tile=(32, 32), blocks_per_sm=1) | bad
        with pytest.raises(ArgumentError, match="whole number >= 1"):
            tc.waves(**kw)


def test_blocks_per_sm_from_the_h200s_registers():
    # warptile_db: 221 registers x 32 lanes = 7,072, allocated as 7,168 (units of 256); a
    # sub-partition's 16,384 hold 2 warps, 8 per SM: one block of 8 warps
    assert tc.registers("warptile_db") == (221, "PyCUDA's num_regs on the H200 (reference data)")
    assert tc.blocks_per_sm("warptile_db")[0] == 1
    # warptile: 127 -> 4,096 per warp, 4 per sub-partition, 16 warps: 2 blocks
    assert tc.blocks_per_sm("warptile")[0] == 2
    # vec4: 72 -> 2,304 per warp, 7 per sub-partition, 28 warps: 3 blocks of 8
    assert tc.blocks_per_sm("vec4")[0] == 3
    # given registers win
    assert tc.blocks_per_sm("warptile", registers_per_thread=64) == (4, "given")


def test_sweep_configurations_are_valid_unique_and_start_with_the_defaults():
    full = tc.sweep_configurations()
    quick = tc.sweep_configurations(quick=True)
    for configs in (full, quick):
        keys = [(n, tuple(sorted(p.items()))) for n, p in configs]
        assert len(keys) == len(set(keys))
        assert all(ladder.get(n).valid(p) is None for n, p in configs)
        assert [n for n, _ in configs[:4]] == ["vec4", "warptile", "warptile_db", "tuned"]
        assert all(p == ladder.get(n).resolve() for n, p in configs[:4])
        assert [p["SPLITK"] for _, p in configs[4:7]] == [2, 3, 4]
    assert len(quick) < 16 < len(full) < 160
    assert {n for n, _ in full} == {"vec4", "warptile", "warptile_db", "tuned"}


def test_the_wave_model_by_hand_and_its_choice_at_each_size():
    ref = reference.load("h200")
    db = ref.step("warptile_db", 4096).gflops
    g, w = tc.model_gflops("warptile_db", {}, 4096, 4096, 4096)
    assert g == db and w.waves == 4
    # at N = 1024 the 32 blocks fill 32/132 of one wave, against 512/528 at 4096
    g, _ = tc.model_gflops("warptile_db", {}, 1024, 1024, 1024)
    assert g == pytest.approx(db * (32 / 132) / (512 / 528))
    # split 4 ways: 128 blocks (32/132 -> 128/132); 8 ways: 256 of 264, the same efficiency,
    # so the fewer chunks win; vec4: 128 of 396 slots
    c = tc.pick_per_size(1024, data=None)
    assert (c.step, c.params["SPLITK"], c.source) == ("tuned", 4, "wave model")
    assert c.gflops == pytest.approx(db * (128 / 132) / (512 / 528))
    assert "wave model" in c.reason and "128 blocks" in c.reason and c.cublas_gflops is None
    # 4096 and 8192 fill the GPU unsplit: no split-K is considered
    for N in (4096, 8192):
        c = tc.pick_per_size(N, data=None)
        assert (c.step, c.params) == ("warptile_db", ladder.WARPTILE_DB.resolve())
    with pytest.raises(ArgumentError, match="whole numbers"):
        tc.pick_per_size(0)


def _sizes_file(tmp_path, rows, cublas):
    data = {"format": "tilinglib-ladder-sizes", "format_version": 1,
            "device": {"name": "NVIDIA H200", "sms": 132, "compute_capability": "9.0"},
            "software": {}, "settings": {}, "date": "2030-01-01",
            "command": "python3 bench/ladder_sizes.py", "sizes": [[1024, 1024, 1024]],
            "cublas": cublas, "rows": rows}
    path = tmp_path / "sizes.json"
    path.write_text(json.dumps(data))
    return path


def test_the_choice_from_data_is_the_fastest_correct_row(tmp_path):
    vec4 = ladder.VEC4.resolve()
    tuned = ladder.TUNED.resolve({"SPLITK": 2})
    db = ladder.WARPTILE_DB.resolve()
    row = dict(M=1024, N=1024, K=1024, registers=None)
    rows = [dict(row, step="vec4", kernel="sgemm_vec4", params=vec4, gflops=17000.0,
                 correct=True, registers=72),
            dict(row, step="tuned", kernel="sgemm_tuned", params=tuned, gflops=21000.0,
                 correct=True, registers=226),
            dict(row, step="warptile_db", kernel="sgemm_warptile_db", params=db,
                 gflops=99000.0, correct=False)]             # fast and wrong: never chosen
    cublas = [dict(M=1024, N=1024, K=1024, gflops=g, median_ms=1.0, when=w)
              for g, w in ((22000.0, "before"), (23000.0, "between"), (24000.0, "after"))]
    data = tc.load_sizes(_sizes_file(tmp_path, rows, cublas))
    assert data.cublas(1024, 1024, 1024) == 23000.0
    assert [r["step"] for r in data.rows_at(1024, 1024, 1024)] == ["tuned", "vec4"]
    assert tc.registers("tuned", tuned, data=data)[0] == 226
    c = tc.pick_per_size(1024, data=data)
    assert (c.step, c.params, c.source, c.gflops) == ("tuned", tuned, "measured", 21000.0)
    assert c.percent_of_cublas == pytest.approx(100 * 21000 / 23000)
    assert c.waves.blocks == 64 and "fastest of 2 correct" in c.reason
    # a size the data did not time falls back on the model
    assert tc.pick_per_size(4096, data=data).source == "wave model"


def test_a_file_of_another_format_is_refused(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"format": "tilinglib-reference"}))
    with pytest.raises(ValueError, match="not a tilinglib-ladder-sizes file"):
        tc.load_sizes(path)
    assert tc.load_sizes(tmp_path / "missing.json") is None


def test_shape_labels():
    assert tc.shape_label("tuned", {"SPLITK": 4}) == "tuned 128x256x12, warp 32x128, split-K 4"
    assert tc.shape_label("vec4", {}) == "vec4 64x128x16, thread 8x4"
    assert "swizzled" in tc.shape_label("tuned", {"BK": 16, "APAD": 0, "SWIZZLE": 1})
