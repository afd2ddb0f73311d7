"""Tests of tilinglib.reference: the shipped H200 figures and their file format."""

import pytest

from tilinglib import reference


def test_h200_file_loads_with_its_provenance():
    assert "h200" in reference.names()
    ref = reference.load("h200")
    assert ref.device["name"] == "NVIDIA H200" and ref.device["sms"] == 132
    assert ref.date == "2026-11-29" and ref.software["driver"] == "580.159.04"
    assert ref.settings["warmup"] == 3 and ref.settings["repeat"] == 10
    assert ref.source.startswith("python -m tilinglib.bench")
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
