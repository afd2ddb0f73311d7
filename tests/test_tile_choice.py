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
    assert c.waves.blocks == 64 and "fastest of 2 correct, unspilled" in c.reason
    # a size the data did not time falls back on the model
    assert tc.pick_per_size(4096, data=data).source == "wave model"


def test_a_file_of_another_format_is_refused(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"format": "tilinglib-reference"}))
    with pytest.raises(ValueError, match="not a tilinglib-ladder-sizes file"):
        tc.load_sizes(path)
    assert tc.load_sizes(tmp_path / "missing.json") is None


def test_shape_labels():
    assert tc.shape_label("tuned", {"SPLITK": 4}) == \
        "tuned 128x256x12, warp 32x128 in 2x2, thread 8x4, split-K 4"
    assert tc.shape_label("vec4", {}) == "vec4 64x128x16, thread 8x4"
    assert tc.shape_label("warptile", {"WMITER": 1, "WNITER": 1, "WM": 32, "WN": 16,
                                       "BM": 32, "BN": 32}) == \
        "warptile 32x32x8, warp 32x16, thread 4x4"
    assert "swizzled" in tc.shape_label("tuned", {"BK": 16, "APAD": 0, "SWIZZLE": 1})


def test_compare_puts_model_and_measurement_side_by_side(tmp_path):
    rows = tc.compare(1024, data=None)
    assert [r["label"] for r in rows[:3]] == [
        "vec4 64x128x16, thread 8x4", "warptile 128x128x8, warp 64x32 in 1x4, thread 4x4",
        "warptile_db 128x256x12, warp 32x128 in 2x2, thread 8x4"]
    db = rows[2]
    assert (db["registers"], db["blocks_per_sm"], db["waves"].blocks) == (221, 1, 32)
    assert db["gflops"] is None and db["cublas_gflops"] is None
    data = tc.load_sizes(_sizes_file(tmp_path, [dict(
        step="warptile_db", kernel="sgemm_warptile_db", params=ladder.WARPTILE_DB.resolve(),
        M=1024, N=1024, K=1024, gflops=9000.0, correct=True, registers=221)],
        [dict(M=1024, N=1024, K=1024, gflops=22000.0, median_ms=0.1, when="before")]))
    rows = tc.compare(1024, data=data)
    assert rows[2]["gflops"] == 9000.0 and rows[0]["gflops"] is None
    assert rows[2]["cublas_gflops"] == 22000.0


def test_the_size_explorer_shows_the_choice_per_size():
    from tilinglib import widgets

    ex = widgets.size_explorer(data=None)
    assert ex.menu.value == (1024, 1024, 1024)
    assert ex.values["step"] == "tuned" and ex.values["blocks"] == 128
    assert ex.values["shape"] == "tuned 128x256x12, warp 32x128 in 2x2, thread 8x4, split-K 4"
    assert widgets.read_values(ex.readout.value)["waves"] == "1"
    ex.select(4096, 4096, 4096)
    assert ex.values["step"] == "warptile_db" and ex.values["waves"] == 4
    assert ex.values["busy"] == round(512 / 528, 4)
    with pytest.raises(widgets.WidgetArgumentError, match="not in the menu"):
        ex.select(5, 5, 5)
    with pytest.raises(widgets.WidgetArgumentError, match="whole numbers"):
        widgets.size_explorer([(0, 1, 1)])


def test_the_models_winner_at_1024_is_the_h200s():
    # lesson 08, section 8 says so ("The model names the right winner"); both from the data
    ref = reference.load("h200")
    names = ("vec4", "warptile", "warptile_db")
    model = {n: tc.model_gflops(n, {}, 1024, 1024, 1024)[0] for n in names}
    measured = {n: ref.step(n, 1024).gflops for n in names}
    assert max(names, key=model.get) == max(names, key=measured.get) == "vec4"


def test_a_spilling_row_is_never_chosen(tmp_path):
    vec4, db = ladder.VEC4.resolve(), ladder.WARPTILE_DB.resolve()
    row = dict(M=1024, N=1024, K=1024, correct=True, registers=72)
    rows = [dict(row, step="vec4", kernel="sgemm_vec4", params=vec4, gflops=17000.0,
                 spill_stores=0, spill_loads=0),
            dict(row, step="warptile_db", kernel="sgemm_warptile_db", params=db,
                 gflops=18000.0, spill_stores=16, spill_loads=16)]
    data = tc.load_sizes(_sizes_file(tmp_path, rows, []))
    assert not tc.usable(rows[1]) and tc.usable(rows[0])
    assert tc.pick_per_size(1024, data=data).step == "vec4"
    assert len(data.rows_at(1024, 1024, 1024, usable_only=False)) == 2


def test_the_models_tuned_shapes_have_ptxas_counts_and_do_not_spill():
    # tilinglib/data/ptxas_sm90.json (bench/ptxas_registers.py, CUDA 13.0 for sm_90)
    for name, p in tc.candidates() + [("tuned", {})]:
        if name != "tuned":
            continue
        row = ladder.ptxas_registers(name, p)
        assert row is not None, p
        assert row["spill_store_bytes"] == row["spill_load_bytes"] == 0
        assert tc.registers(name, p)[0] == row["registers"] <= ladder.MAX_REGISTERS


def test_every_swept_label_fits_lesson_08s_tables():
    labels = [tc.shape_label(n, p) for n, p in tc.sweep_configurations()]
    assert max(map(len, labels)) <= 80
    assert len(set(labels)) == len(labels)          # each configuration told apart


def test_the_second_sweep_is_valid_sized_and_new_where_it_should_be():
    second = tc.second_sweep_configurations()
    keys = [(n, tuple(sorted(p.items()))) for n, p, _ in second]
    assert len(keys) == len(set(keys)) and 60 <= len(second) <= 120
    assert all(n == "tuned" and ladder.TUNED.valid(p) is None for n, p, _ in second)
    assert all(set(s) <= set(tc.SIZES) and s for _, _, s in second)
    first = {(n, tuple(sorted(p.items()))) for n, p in tc.sweep_configurations()}
    again = [k for k in keys if k in first]
    # mostly new, with the first sweep's winners at 1024 and 4096 timed again beside them
    assert 3 <= len(again) <= 12
    winner_1024 = ladder.TUNED.resolve({"BM": 64, "BN": 128, "BK": 16, "APAD": 0, "SWIZZLE": 1,
                                        "WM": 32, "WN": 64, "WMITER": 1, "WNITER": 2,
                                        "SPLITK": 2})
    winner_4096 = ladder.TUNED.resolve({"GSWZ": 8})
    sized = {(n, tuple(sorted(p.items()))): s for n, p, s in second}
    assert sized[("tuned", tuple(sorted(winner_1024.items())))] == tc.SMALL_SIZES
    assert sized[("tuned", tuple(sorted(winner_4096.items())))] == tc.LARGE_SIZES
    for _, p, s in second:
        blocks_1024 = tc.waves(1024, 1024, (p["BM"], p["BN"]), 1).blocks
        if s == tc.SMALL_SIZES:       # tiles, or K chunks, that fill more SMs at N = 1024
            assert blocks_1024 * p["SPLITK"] >= 128
        if p["SPLITK"] > 1 and s != tc.SMALL_SIZES:
            assert (p["BM"], p["BN"]) == (128, 256) and s == ((4096,) * 3, (8192,) * 3)
        assert p["MINB"] == 1 or ladder.TUNED.threads(p) <= 128
    labels = [tc.shape_label(n, p) for n, p, _ in second]
    # split-K, the swizzle, MINB and FRAGDB together: 85 characters (shape_label's docstring)
    assert len(set(labels)) == len(labels) and max(map(len, labels)) == 85


def _run(rows, cublas, date="2030-01-01", command="python3 bench/ladder_sizes.py",
         device=None, sizes=((1024, 1024, 1024),)):
    return {"format": "tilinglib-ladder-sizes", "format_version": 1,
            "device": device or {"name": "NVIDIA H200", "sms": 132, "compute_capability": "9.0"},
            "software": {"cupy": "x"}, "settings": {"repeat": 10}, "date": date,
            "command": command, "sizes": [list(s) for s in sizes], "cublas": cublas,
            "rows": rows}


def test_a_merged_run_is_compared_with_its_own_cublas(tmp_path):
    vec4, split = ladder.VEC4.resolve(), ladder.TUNED.resolve({"SPLITK": 2})
    at = dict(M=1024, N=1024, K=1024, correct=True, spill_stores=0, spill_loads=0)
    first = _run([dict(at, step="vec4", kernel="sgemm_vec4", params=vec4, gflops=18000.0,
                       registers=72),
                  dict(at, step="tuned", kernel="sgemm_tuned", params=split, gflops=20000.0,
                       registers=227)],
                 [dict(M=1024, N=1024, K=1024, gflops=g, median_ms=1.0, when="before")
                  for g in (40000.0, 40000.0)])
    # the second run: cuBLAS slower (30,000), the split kernel again (21,000) and at 2048
    second = _run([dict(at, step="tuned", kernel="sgemm_tuned", params=split, gflops=21000.0,
                        registers=227),
                   dict(at, step="tuned", kernel="sgemm_tuned", params=split, gflops=30000.0,
                        registers=227, M=2048, N=2048, K=2048)],
                  [dict(M=1024, N=1024, K=1024, gflops=30000.0, median_ms=1.0, when="before"),
                   dict(M=2048, N=2048, K=2048, gflops=45000.0, median_ms=1.0, when="before")],
                  date="2030-01-02", command="python3 bench/ladder_sizes.py --configs second",
                  sizes=((1024, 1024, 1024), (2048, 2048, 2048)))
    before = json.dumps(first)
    merged = tc.merge_sizes(first, second)
    assert json.dumps(first) == before                       # the arguments are left alone
    assert len(merged["rows"]) == 4 and merged["rows"][:2] == first["rows"]
    assert [tc.run_of(r) for r in merged["rows"]] == [0, 0, 1, 1]
    assert [tc.run_of(c) for c in merged["cublas"]] == [0, 0, 1, 1]
    assert merged["sizes"] == [[1024, 1024, 1024], [2048, 2048, 2048]]
    assert merged["runs"][0]["run"] == 1 and merged["runs"][0]["date"] == "2030-01-02"
    assert merged["date"] == "2030-01-01" and merged["command"] == first["command"]
    path = tmp_path / "sizes.json"
    path.write_text(json.dumps(merged))
    data = tc.load_sizes(path)
    assert [r["run"] for r in data.runs] == [0, 1] and "then 2030-01-02" in data.label
    assert data.cublas(1024, 1024, 1024, run=0) == 40000.0
    assert data.cublas(1024, 1024, 1024, run=1) == 30000.0
    assert data.cublas(1024, 1024, 1024) == 40000.0          # median of 40, 40, 30 thousand
    assert data.cublas(2048, 2048, 2048, run=0) is None
    r0, r1 = (data.row("tuned", split, 1024, 1024, 1024, run=i) for i in (0, 1))
    assert data.percent_of_cublas(r0) == pytest.approx(50.0)     # 20,000 / 40,000
    assert data.percent_of_cublas(r1) == pytest.approx(70.0)     # 21,000 / 30,000
    assert data.row("tuned", split, 1024, 1024, 1024) is r1      # the faster of the two
    # the choice: the fastest row of any run, with cuBLAS of that row's run
    c = tc.pick_per_size(1024, data=data)
    assert (c.gflops, c.cublas_gflops) == (21000.0, 30000.0)
    assert c.percent_of_cublas == pytest.approx(70.0) and "in run 1" in c.reason
    c = tc.pick_per_size(2048, data=data)
    assert c.percent_of_cublas == pytest.approx(100 * 30000 / 45000)
    assert tc.compare(1024, data=data, configs=[("tuned", split)])[0]["cublas_gflops"] == 30000.0
    # a third run is run 2; runs of another GPU, or files of several runs, are refused
    assert tc.merge_sizes(merged, second)["runs"][-1]["run"] == 2
    other = _run([], [], device={"name": "NVIDIA A100", "sms": 108})
    with pytest.raises(ValueError, match="one GPU per file"):
        tc.merge_sizes(first, other)
    with pytest.raises(ValueError, match="one run at a time"):
        tc.merge_sizes(first, merged)
    with pytest.raises(ValueError, match="not a tilinglib-ladder-sizes file"):
        tc.merge_sizes({"format": "tilinglib-reference"}, second)


def test_run_3_of_the_h200_data_is_the_fourth_sweep():
    # run 3 is `bench/ladder_sizes.py --configs fourth`: exactly the (configuration, size)
    # pairs of fourth_sweep_configurations, each timed once and correct
    data = tc.load_sizes()
    run3 = [r for r in data.rows if tc.run_of(r) == 3]
    pairs = sorted((json.dumps(ladder.TUNED.resolve(r["params"]), sort_keys=True), (r["M"], r["N"], r["K"]))
                   for r in run3)
    wanted = sorted((json.dumps(p, sort_keys=True), s) for _, p, sizes in
                    tc.fourth_sweep_configurations() for s in sizes)
    assert pairs == wanted
    assert [r["command"] for r in data.runs if r["run"] == 3] == ["python3 bench/ladder_sizes.py --configs fourth"]
    assert all(r["correct"] for r in run3)


def test_run_2_of_the_h200_data_is_the_third_sweep():
    tile_choice = tc
    # The data's run 2 is `bench/ladder_sizes.py --configs third`: exactly the (configuration,
    # size) pairs of third_sweep_configurations, each timed once, every one valid.
    data = tile_choice.load_sizes()
    run2 = [r for r in data.rows if tile_choice.run_of(r) == 2]
    pairs = sorted((json.dumps(ladder.TUNED.resolve(r["params"]), sort_keys=True), (r["M"], r["N"], r["K"]))
                   for r in run2)
    wanted = sorted((json.dumps(p, sort_keys=True), s) for _, p, sizes in
                    tile_choice.third_sweep_configurations() for s in sizes)
    assert pairs == wanted
    assert [r["command"] for r in data.runs if r["run"] == 2] == ["python3 bench/ladder_sizes.py --configs third"]
    assert all(ladder.TUNED.valid(json.loads(p)) is None for p, _ in wanted)


def test_waves_of_a_tail_split_by_hand():
    # N = 4096 in 128 x 256 tiles: 512 tiles; waves of 132 hold 396 whole, and the 116 of the
    # tail split 9 ways make 1,044 chunks: 3 waves of tiles, then 8 of chunks (the last 120)
    w = tc.waves(4096, 4096, (128, 256), 1, splitk=9, tailwave=132)
    assert (w.blocks, w.waves, w.tail_blocks) == (396 + 1044, 3 + 8, 1044 - 7 * 132)
    # work-weighted: 512 tile-times over 132 SMs x (3 + 8 / 9) tile-times
    assert w.efficiency == pytest.approx(512 / (132 * (3 + 8 / 9)))
    plain = tc.waves(4096, 4096, (128, 256), 1)
    assert plain.efficiency == pytest.approx(512 / (4 * 132))
    assert plain.efficiency < w.efficiency
    # a uniform split is the same with or without tailwave when no tile fills a wave
    assert tc.waves(1024, 1024, (128, 256), 1, splitk=4, tailwave=132).efficiency == \
        pytest.approx(tc.waves(1024, 1024, (128, 256), 1, splitk=4).efficiency)
    with pytest.raises(ArgumentError, match="tailwave=-1"):
        tc.waves(4096, 4096, (128, 256), 1, tailwave=-1)


def test_issue_profiles_count_the_fmas_of_the_product():
    profiles = tc.load_issue_profiles()
    assert {"cuBLAS", "base", "fast", "best4096"} <= set(profiles)
    # one FFMA per multiply-add of the tiles the kernel computes: BK = 16 divides 4096, so
    # exactly 4096^3; BK = 12 pads K to 342 tiles of 12 (zeros past the edge)
    assert profiles["best4096"].ffma * 32 == 4096 ** 3
    assert profiles["base"].ffma * 32 == 4096 ** 2 * (-(-4096 // 12) * 12)
    assert profiles["base"].changed == {"GSWZ": 4}
    for q in profiles.values():
        assert 0 < q.issue_busy_pct <= 100 and q.instructions > q.ffma > 0
        assert q.other_per_ffma == pytest.approx((q.instructions - q.ffma) / q.ffma)
        assert "Wait" in q.stalls and q.cycles_per_issue >= 2.0    # two warps per scheduler
    assert tc.load_issue_profiles("/nonexistent/file.json") == {}
