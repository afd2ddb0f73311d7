"""bench/tuned_variants.py without a GPU: every variant is a valid shape of the tuned kernel
that the emulator runs exactly, and Nsight Compute's CSV is read back as the script writes
it. The H200 runs themselves are the lead's (the commands are in the script's docstring)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from tilinglib import ladder

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("tuned_variants", ROOT / "bench" / "tuned_variants.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_variant_is_valid_and_listed(script, capsys):
    assert script.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(script.VARIANTS)
    for name in script.VARIANTS:
        p = script.resolved(name)
        assert ladder.TUNED.valid(p) is None, name
        # each line is the variant's -D options, the switches it changes among them
        line = next(x for x in lines if x.split()[0] == name)
        for k, v in script.VARIANTS[name].items():
            assert f"-D{k}={v}" in line.split()
    assert script.VARIANTS["base"] == {"GSWZ": 4}        # the course's choice at N = 4096


def test_unknown_variant_is_refused_before_anything_runs(script, capsys):
    with pytest.raises(SystemExit):
        script.main(["--list", "--only", "base,nosuch"])
    assert "unknown variant(s) nosuch" in capsys.readouterr().err


def test_switches_of_the_variants_run_exactly_on_the_emulator(monkeypatch):
    # the variants' switches at a small tile with inside and edge blocks (the GPU checks
    # each variant's own shape against float64 before timing it)
    monkeypatch.setenv("TILINGLIB_BACKEND", "emulator")
    small = {"BM": 64, "BN": 32, "BK": 8, "WM": 64, "WN": 32, "WMITER": 2, "WNITER": 2,
             "TM": 4, "TN": 4, "APAD": 4}
    rng = np.random.default_rng(5)
    A = rng.integers(-4, 5, (70, 37)).astype(np.float32)
    B = rng.integers(-4, 5, (37, 40)).astype(np.float32)
    for switches in ({"FAST": 1, "PINGPONG": 1}, {"FAST": 1, "APAD": 0, "SWIZZLE": 1, "GSWZ": 2}):
        np.testing.assert_array_equal(ladder.run("tuned", A, B, {**small, **switches}), A @ B)


def test_ncu_details_are_read_per_kernel_last_launch_kept(script):
    text = "\n".join([
        "==PROF== Connected to process 1",
        '"ID","Process ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"',
        '"0","1","sgemmTuned","WarpStateStats","Stall Wait","inst","0.20"',
        '"0","1","sgemmTuned","SchedulerStats","Issue Slots Busy","%","78.09"',
        '"1","1","sm80_xmma_gemm","Command line profiler metrics","smsp__inst_executed.sum","inst","2,428,305,408"',
        '"2","1","sgemmTuned","WarpStateStats","Stall Wait","inst","0.05"',
        '"2","1","sgemmTuned","LaunchStats","Grid Size","","(16, 32, 1)"'])
    got = script.parse_ncu_details(text)
    assert got == {"sgemmTuned": {"Stall Wait": [0.05, "inst"], "Grid Size": ["(16, 32, 1)", ""]},
                   "sm80_xmma_gemm": {"smsp__inst_executed.sum": [2428305408.0, "inst"]}}
    assert script.parse_ncu_details("no csv here") == {}
