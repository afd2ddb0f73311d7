"""Tests of tilinglib.reference: the shipped H200 figures and their file format."""

import pytest

from tilinglib import reference


def test_h200_file_loads_with_its_provenance():
    assert "h200" in reference.names()
    ref = reference.load("h200")
    assert ref.device["name"] == "NVIDIA H200"
    assert ref.date == "2026-11-29" and ref.software["driver"] == "580.159"
    assert ref.settings["warmup"] == 3 and ref.settings["repeat"] == 10
    assert "measured on an NVIDIA H200" in ref.label


def test_figures_match_the_measurements():
    ref = reference.load()
    assert ref.run("sgemm_naive", 4096, block=(32, 32, 1)).gflops == 6037
    assert ref.run("sgemm_tiled", 4096, tile=32, pad=0).gflops == 8837
    assert ref.run("cublas", 4096).gflops == 49456
    naive = ref.counters("sgemm_naive", 1024)
    assert naive["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 2 * 1024**3 // 32
    assert naive["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 5 * 1024**3 // 32


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
    text = reference.load().table(N=1024)
    assert text.splitlines()[0].startswith("SGEMM, measured on an NVIDIA H200")
    assert "8,357" in text and "5,181" not in text


def test_extra_run_keys_are_kept(tmp_path):
    data = reference.load().to_dict()
    data["runs"].append({"kernel": "saxpy", "N": 268435456, "block": [256, 1, 1], "tile": None,
                         "pad": None, "static_shared_bytes": 0, "gflops": None,
                         "gbps": 3357.0, "median_ms": 0.96})
    ref = reference.from_dict(data, "x")
    saxpy = ref.run("saxpy", 268435456)
    assert saxpy.gflops is None and saxpy.extra["gbps"] == 3357.0
    assert "saxpy" not in ref.table()            # the table lists GFLOP/s only
    assert reference.from_dict(ref.to_dict(), "x") == ref


def test_the_bench_command_writes_this_format():
    import json
    from pathlib import Path

    path = Path(__file__).parent.parent / "bench" / "results" / "reference_h200_bench.json"
    if not path.exists():
        pytest.skip("no bench results in this checkout")
    ref = reference.from_dict(json.loads(path.read_text()), "bench")
    assert ref.run("sgemm_tiled", 4096, tile=32, pad=0).gflops > 0
