"""tilinglib.devtools.bench's ladder parts that run without a GPU: ptxas's report (nvcc is enough),
Nsight Compute's CSV, and --merge, which must keep every earlier entry of a reference file."""

from __future__ import annotations

import json
import shutil

import pytest

from tilinglib import kernels, ladder, reference

from tilinglib.devtools import bench

NCU_CSV = '''==PROF== Connected to process 1
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","h","sgemmVec4","1","7","(256, 1, 1)","(8, 16, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","8,394,240"
"0","1","python3","h","sgemmVec4","1","7","(256, 1, 1)","(8, 16, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","12.43"
"1","1","python3","h","sgemmWarptile","1","7","(256, 1, 1)","(8, 8, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","100"
'''


def test_ncu_csv_is_read_per_launch_in_order():
    launches = bench._parse_ncu_details(NCU_CSV)
    assert launches == [("sgemmVec4", {"dram__bytes_read.sum": 8394240,
                                       "sm__warps_active.avg.pct_of_peak_sustained_active": 12.43}),
                        ("sgemmWarptile", {"dram__bytes_read.sum": 100})]
    assert bench._parse_ncu_details("no profile here") == []


def test_merge_keeps_the_earlier_entries_and_replaces_the_ladder(tmp_path):
    shipped = reference.load("h200").to_dict()
    path = tmp_path / "old.json"
    path.write_text(json.dumps(shipped))
    new = {"ladder": {"description": "x", "device": {"name": "GPU X"}, "software": {},
                      "date": "2030-01-01", "settings": {}, "source": "test",
                      "runs": [], "counters": []}}
    merged = bench.merge_ladder(str(path), new)
    assert merged["runs"] == shipped["runs"] and merged["counters"] == shipped["counters"]
    assert merged["ladder"]["date"] == "2030-01-01"
    ref = reference.from_dict(merged, "merged")
    assert ref.run("sgemm_tiled", 4096, tile=32, pad=0).gflops == 8997.2
    assert ref.ladder_runs == () and ref.ladder_label.startswith("measured on an GPU X")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (no GPU needed)")
def test_ptxas_report_equals_the_registers_read_on_the_h200():
    # same CUDA 13.0 ptxas for sm_90 as on the H200 on 2026-12-01: its register counts there
    # (Function.num_regs, in the reference data) are what ptxas says here
    ref = reference.load("h200")
    for name in ("vec4", "warptile_db"):
        step = ladder.get(name)
        got = bench.ptxas_report(kernels.load(step.kernel), step.defines(), "sm_90")
        assert got == {"registers": ref.step(name, 4096).extra["registers"], "spill_stores": 0,
                       "spill_loads": 0, "stack_bytes": 0}, name
    bad = bench.ptxas_report("__global__ void k() { int x = ; }", [], "sm_90")
    assert "error" in bad
