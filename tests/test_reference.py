"""Tests of tilinglib.reference: the shipped H200 figures and their file format."""

import pytest

from tilinglib import reference


def test_h200_file_loads_with_its_provenance():
    assert "h200" in reference.names()
    ref = reference.load("h200")
    assert ref.device["name"] == "NVIDIA H200" and ref.device["sms"] == 132
    assert ref.date == "2026-11-29" and ref.software["driver"] == "580.159.04"
    assert ref.settings["warmup"] == 3 and ref.settings["repeat"] == 10
    # The command as the measured file records it: the bench was `tilinglib.bench` when it
    # ran (2026-11-29) and is `tilinglib.devtools.bench` now; a later run records the new name.
    assert ref.source.startswith(("python -m tilinglib.bench", "python -m tilinglib.devtools.bench"))
    assert "measured on an NVIDIA H200" in ref.label


# GFLOP/s at N = 4096 from an earlier, independent session on the same H200
# (docs/h200-measurements.md): the shipped bench run must agree within 10%.
EARLIER = {("sgemm_naive", (16, 16, 1), None, None): 5181,
           ("sgemm_naive", (32, 32, 1), None, None): 6037,
           ("sgemm_tiled", None, 4, 0): 1608, ("sgemm_tiled", None, 4, 1): 1361,
           ("sgemm_tiled", None, 8, 0): 5107, ("sgemm_tiled", None, 8, 1): 4128,
           ("sgemm_tiled", None, 16, 0): 8085, ("sgemm_tiled", None, 16, 1): 6234,
           ("sgemm_tiled", None, 32, 0): 8837, ("sgemm_tiled", None, 32, 1): 7036,
           ("cublas", None, None, None): 49456}


def test_figures_agree_with_the_earlier_measurements():
    ref = reference.load()
    for (kernel, block, tile, pad), earlier in EARLIER.items():
        run = ref.run(kernel, 4096, block=block, tile=tile, pad=pad)
        assert abs(run.gflops / earlier - 1) < 0.10, (kernel, block, tile, pad, run.gflops)


def test_counters_equal_the_formulas():
    ref = reference.load()
    n = 1024
    naive = ref.counters("sgemm_naive", n, block=(32, 32, 1))
    assert naive["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 2 * n**3 // 32
    assert naive["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 5 * n**3 // 32
    for tile in (8, 16, 32):
        c = ref.counters("sgemm_tiled", n, tile=tile, pad=1)
        assert c["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 2 * n**3 // (32 * tile)
        assert c["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 8 * n**3 // (32 * tile)
        # Padding keeps nvcc from merging As[ty][k..k+3]: the source-level count.
        assert c["smsp__inst_executed_op_shared_ld.sum"] == 2 * n**3 // 32


def test_ambiguous_or_missing_lookups_say_what_there_is():
    ref = reference.load()
    with pytest.raises(KeyError, match="2 runs match"):
        ref.run("sgemm_naive", 4096)
    with pytest.raises(KeyError, match="no run"):
        ref.run("sgemm_naive", 123)
    with pytest.raises(KeyError, match="available"):
        reference.load("nope")


def test_round_trip_and_format_checks():
    ref = reference.load()
    data = ref.to_dict()
    assert reference.from_dict(data, "h200") == ref
    with pytest.raises(ValueError, match="format_version"):
        reference.from_dict({**data, "format_version": 99})
    broken = {**data, "runs": [{"kernel": "x"}]}
    with pytest.raises(ValueError, match=r"runs\[0\] lacks"):
        reference.from_dict(broken)


def test_table_is_labelled():
    ref = reference.load()
    text = ref.table(N=1024)
    assert text.splitlines()[0].startswith("SGEMM, measured on an NVIDIA H200")
    tiled = ref.run("sgemm_tiled", 1024, tile=32, pad=0).gflops
    assert f"{tiled:,.0f}" in text
    assert all(" 4096 " not in line for line in text.splitlines()[1:])


def test_bandwidth_runs_keep_their_extra_keys():
    ref = reference.load()
    saxpy = ref.run("saxpy", 1 << 28)
    assert saxpy.gflops is None and saxpy.extra["bytes_per_element"] == 12
    assert abs(saxpy.extra["gbps"] / 3357 - 1) < 0.10      # the earlier session: 3,357 GB/s
    assert "saxpy" not in ref.table()            # the table lists GFLOP/s only
    assert reference.from_dict(ref.to_dict(), "h200") == ref


def test_the_bench_command_writes_this_format():
    import json
    from pathlib import Path

    path = Path(__file__).parent.parent / "bench" / "results" / "reference_h200_bench.json"
    if not path.exists():
        pytest.skip("no bench results in this checkout")
    ref = reference.from_dict(json.loads(path.read_text()), "bench")
    assert ref.run("sgemm_tiled", 4096, tile=32, pad=0).gflops > 0


# ----------------------------------------------------------------- the ladder (lessons 07-08)
# Read on the H200 on 2026-12-01 (python -m tilinglib.bench --only-ladder --ncu --repeat 20,
# bench/results/ladder_bench_h200.log): GFLOP/s at N = 4096, the ladder beside cuBLAS.
# Read on the H200 on 2026-12-01 (the integrator's run after the front end landed;
# docs/gpu-runs.md, bench/results/ladder_bench_h200_1201.log), default tile shapes.
LADDER_H200_2026_12_01 = {"tiled": 8986.5, "coarse": 12098.3, "regtile2d": 21147.5,
                          "vec4": 30673.3, "warptile": 35852.9, "warptile_db": 42526.7,
                          "cublas": 50124.8}


def test_ladder_runs_are_found_by_step_name():
    ref = reference.load()
    assert ref.ladder["date"] == "2026-12-01" and ref.ladder["device"]["name"] == "NVIDIA H200"
    assert "measured on an NVIDIA H200 (2026-12-01" in ref.ladder_label
    from tilinglib import ladder

    for name, gflops in LADDER_H200_2026_12_01.items():
        run = ref.step(name, 4096, ladder.get(name).resolve() if name != "cublas" else None)
        assert run.gflops == pytest.approx(gflops, abs=0.05), name
    best = ref.step("warptile_db", 4096)
    assert best.extra["params"]["BK"] == 12 and best.extra["registers"] == 221
    assert best.extra["ptxas"]["spill_stores"] == 0
    # the goal of issue 13: at least 80% of cuBLAS, measured in the same run
    assert best.gflops / ref.step("cublas", 4096).gflops > 0.80


def test_ladder_lookup_narrows_by_params_and_says_what_there_is():
    ref = reference.load()
    assert ref.step("vec4", 1024, {"BM": 64, "TN": 4}).gflops == pytest.approx(16966.0, abs=0.05)
    # regtile2d was measured at four shapes (its also_measured): the defaults pick one, and
    # params pick the others
    with pytest.raises(KeyError, match="4 ladder runs match step='regtile2d'"):
        ref.step("regtile2d", 4096)
    small = ref.step("regtile2d", 4096, {"BM": 64, "BN": 64, "TM": 4, "TN": 4})
    assert small.gflops == pytest.approx(16824.3, abs=0.05) and small.extra["registers"] == 64
    with pytest.raises(KeyError, match="step='vec4', N=1024"):
        ref.step("vec4", 1024, {"BM": 128})          # not the shape that was measured
    with pytest.raises(KeyError, match=r"\('warptile_db', 4096\)"):
        ref.step("warptile_db", 2048)


def test_ladder_entries_leave_the_earlier_lookups_alone():
    ref = reference.load()
    # the ladder's tiled and cuBLAS runs are not among `runs`: the lessons' lookups stay unique
    assert ref.run("sgemm_tiled", 4096, tile=32, pad=0).gflops == 8997.2
    assert ref.run("cublas", 4096).gflops == 49992.6
    assert all("step" not in r.extra for r in ref.runs)
    # 6 steps at N = 1024 and 4096, regtile2d's 3 further shapes at 4096, cuBLAS at both
    assert len(ref.ladder_runs) == 17 and len(ref.ladder_counter_sets) == 9
    again = reference.from_dict(ref.to_dict(), "again")
    assert again.step("coarse", 4096) == ref.step("coarse", 4096)
    assert again.ladder_label == ref.ladder_label


def test_ladder_counters_equal_the_byte_formulas():
    # ncu at N = 1024: global load bytes (32-byte sectors, all fully used) per FFMA equal the
    # ladder's formula 4 (BM + BN) / (BM BN) wherever K = 1024 is a multiple of BK; shared
    # bytes read from the banks (a broadcast counted once) per FFMA equal 4 (WM + WN) / (WM WN)
    # for the C area a warp covers (WM x WN), for the kernels whose shared loads ptxas keeps
    # as written.
    from tilinglib import ladder

    ref = reference.load()
    warp_area = {"coarse": None, "regtile2d": (16, 128), "vec4": (8, 128), "warptile": (64, 32)}
    for name in ("tiled", "coarse", "regtile2d", "vec4", "warptile"):
        m = ref.step_counters(name, 1024, ladder.get(name).resolve()).metrics
        fmas = m["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"]
        assert fmas == 1024 ** 3
        g = m["l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum"] / fmas
        assert g == ladder.get(name).global_bytes_per_fma(), name
        if warp_area.get(name):
            wm, wn = warp_area[name]
            assert m["smsp__sass_data_bytes_mem_shared_op_ld.sum"] / fmas == 4 * (wm + wn) / (wm * wn)
    db = ref.step_counters("warptile_db", 1024).metrics
    # BK = 12 does not divide 1024: 86 tiles of 12 cover K = 1032, the last one padded with 0
    assert db["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] == 1024 * 1024 * 1032
