"""Shared-memory counters for 4-, 8- and 16-byte accesses against Nsight Compute on the H200.

The expected values are ncu's readings on an NVIDIA H200, 2026-12-01 (CUDA 13.0, ncu
2025.3.1, `ncu --clock-control none`, one launch each), by bench/gpu_shared_widths.py
(results: bench/results/shared_widths_h200.json, .md, _sass.txt). Each case is one warp
storing one element per active lane at st[lane], a barrier, then loading the element at
ld[lane] with every component used; the SASS shows one STS/LDS of the source's width per
kernel (acc4: STS, LDS; acc8: STS.64, LDS.64; acc16: STS.128, LDS.128). The issue's kernel
(8 warps, a float4 and a float2 per thread) runs with every component used and with some
only, where nvcc splits the float4 load (see docs/emulator.md, counters).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from tilinglib import banks
from tilinglib import emulator as E
from tilinglib.toolchain.model import memory as M

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("gpu_shared_widths",
                                               ROOT / "bench" / "gpu_shared_widths.py")
GSW = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(GSW)
CASES = {(c["kernel"], c["name"]): c for c in GSW.cases()}
MODULE = E.SourceModule(GSW.SOURCE, no_extern_c=True)

# Read on the H200, 2026-12-01: (kernel, case) -> (load instructions, load wavefronts,
# load bank conflicts, store instructions, store wavefronts, store bank conflicts).
H200 = {
    ('acc4', 'stride 1'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 2'): (1, 2, 1, 1, 2, 1),
    ('acc4', 'stride 3'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 4'): (1, 4, 3, 1, 4, 3),
    ('acc4', 'stride 8'): (1, 8, 7, 1, 8, 7),
    ('acc4', 'stride 16'): (1, 16, 15, 1, 16, 15),
    ('acc4', 'stride 32'): (1, 32, 31, 1, 32, 31),
    ('acc4', 'broadcast'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'reversed'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'lane % 16'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'lane % 8'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'lane % 4'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'lane // 2'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'lane // 4'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'phase interleave'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'phase same banks'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'xor swap halves'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'xor swap 8'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'xor swap 4'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 1, lanes 0-15'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 2, lanes 0-15'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 1, lanes 16-31'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 2, lanes 16-31'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 1, even lanes'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 2, even lanes'): (1, 2, 1, 1, 2, 1),
    ('acc4', 'stride 1, lanes 0-7'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 2, lanes 0-7'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 1, lane 0'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 2, lane 0'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 1, lanes 0 and 31'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 2, lanes 0 and 31'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 1, lanes 0,8,16,24'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'stride 2, lanes 0,8,16,24'): (1, 2, 1, 1, 2, 1),
    ('acc4', 'permutation of 32 #0'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'permutation of 32 #1'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'permutation of 32 #2'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'permutation of 32 #3'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'permutation of 32 #4'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'permutation of 32 #5'): (1, 1, 0, 1, 1, 0),
    ('acc4', '32 distinct of 64 #0'): (1, 2, 1, 1, 2, 1),
    ('acc4', '32 distinct of 64 #1'): (1, 2, 1, 1, 2, 1),
    ('acc4', '32 distinct of 64 #2'): (1, 2, 1, 1, 2, 1),
    ('acc4', '32 distinct of 64 #3'): (1, 2, 1, 1, 2, 1),
    ('acc4', '32 distinct of 64 #4'): (1, 2, 1, 1, 2, 1),
    ('acc4', '32 distinct of 64 #5'): (1, 2, 1, 1, 2, 1),
    ('acc4', 'draws from 64 #0'): (1, 2, 1, 1, 2, 1),
    ('acc4', 'draws from 64 #1'): (1, 2, 1, 1, 2, 1),
    ('acc4', 'draws from 64 #2'): (1, 2, 1, 1, 2, 1),
    ('acc4', 'draws from 64 #3'): (1, 2, 1, 1, 2, 1),
    ('acc4', 'draws from 64 #4'): (1, 2, 1, 1, 2, 1),
    ('acc4', 'draws from 64 #5'): (1, 2, 1, 1, 2, 1),
    ('acc4', 'draws from 8 #0'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'draws from 8 #1'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'draws from 8 #2'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'draws from 8 #3'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'draws from 1024 #0'): (1, 3, 2, 1, 3, 2),
    ('acc4', 'draws from 1024 #1'): (1, 3, 2, 1, 3, 2),
    ('acc4', 'draws from 1024 #2'): (1, 4, 3, 1, 4, 3),
    ('acc4', 'draws from 1024 #3'): (1, 4, 3, 1, 4, 3),
    ('acc4', 'permutation of 32, random mask #0'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'permutation of 32, random mask #1'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'permutation of 32, random mask #2'): (1, 1, 0, 1, 1, 0),
    ('acc4', 'permutation of 32, random mask #3'): (1, 1, 0, 1, 1, 0),
    ('acc8', 'stride 1'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'stride 2'): (1, 4, 2, 1, 4, 2),
    ('acc8', 'stride 3'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'stride 4'): (1, 8, 6, 1, 8, 6),
    ('acc8', 'stride 8'): (1, 16, 14, 1, 16, 14),
    ('acc8', 'stride 16'): (1, 32, 30, 1, 32, 30),
    ('acc8', 'stride 32'): (1, 32, 30, 1, 32, 30),
    ('acc8', 'broadcast'): (1, 1, 0, 1, 2, 0),
    ('acc8', 'reversed'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'lane % 16'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'lane % 8'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'lane % 4'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'lane // 2'): (1, 1, 0, 1, 2, 0),
    ('acc8', 'lane // 4'): (1, 1, 0, 1, 2, 0),
    ('acc8', 'phase interleave'): (1, 4, 2, 1, 4, 2),
    ('acc8', 'phase same banks'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'xor swap halves'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'xor swap 8'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'xor swap 4'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'stride 1, lanes 0-15'): (1, 1, 0, 1, 1, 0),
    ('acc8', 'stride 2, lanes 0-15'): (1, 2, 1, 1, 2, 1),
    ('acc8', 'stride 1, lanes 16-31'): (1, 1, 0, 1, 1, 0),
    ('acc8', 'stride 2, lanes 16-31'): (1, 2, 1, 1, 2, 1),
    ('acc8', 'stride 1, even lanes'): (1, 2, 1, 1, 2, 0),
    ('acc8', 'stride 2, even lanes'): (1, 4, 3, 1, 4, 2),
    ('acc8', 'stride 1, lanes 0-7'): (1, 1, 0, 1, 1, 0),
    ('acc8', 'stride 2, lanes 0-7'): (1, 1, 0, 1, 1, 0),
    ('acc8', 'stride 1, lane 0'): (1, 1, 0, 1, 1, 0),
    ('acc8', 'stride 2, lane 0'): (1, 1, 0, 1, 1, 0),
    ('acc8', 'stride 1, lanes 0 and 31'): (1, 1, 0, 1, 2, 0),
    ('acc8', 'stride 2, lanes 0 and 31'): (1, 1, 0, 1, 2, 0),
    ('acc8', 'stride 1, lanes 0,8,16,24'): (1, 2, 1, 1, 2, 0),
    ('acc8', 'stride 2, lanes 0,8,16,24'): (1, 4, 3, 1, 4, 2),
    ('acc8', 'permutation of 32 #0'): (1, 4, 2, 1, 4, 2),
    ('acc8', 'permutation of 32 #1'): (1, 4, 2, 1, 4, 2),
    ('acc8', 'permutation of 32 #2'): (1, 4, 2, 1, 4, 2),
    ('acc8', 'permutation of 32 #3'): (1, 4, 2, 1, 4, 2),
    ('acc8', 'permutation of 32 #4'): (1, 4, 2, 1, 4, 2),
    ('acc8', 'permutation of 32 #5'): (1, 4, 2, 1, 4, 2),
    ('acc8', '32 distinct of 64 #0'): (1, 5, 3, 1, 5, 3),
    ('acc8', '32 distinct of 64 #1'): (1, 6, 4, 1, 6, 4),
    ('acc8', '32 distinct of 64 #2'): (1, 5, 3, 1, 5, 3),
    ('acc8', '32 distinct of 64 #3'): (1, 5, 3, 1, 5, 3),
    ('acc8', '32 distinct of 64 #4'): (1, 6, 4, 1, 6, 4),
    ('acc8', '32 distinct of 64 #5'): (1, 5, 3, 1, 5, 3),
    ('acc8', 'draws from 64 #0'): (1, 5, 3, 1, 5, 3),
    ('acc8', 'draws from 64 #1'): (1, 5, 3, 1, 5, 3),
    ('acc8', 'draws from 64 #2'): (1, 5, 3, 1, 5, 3),
    ('acc8', 'draws from 64 #3'): (1, 4, 2, 1, 4, 2),
    ('acc8', 'draws from 64 #4'): (1, 4, 2, 1, 4, 2),
    ('acc8', 'draws from 64 #5'): (1, 5, 3, 1, 5, 3),
    ('acc8', 'draws from 8 #0'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'draws from 8 #1'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'draws from 8 #2'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'draws from 8 #3'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'draws from 1024 #0'): (1, 6, 4, 1, 6, 4),
    ('acc8', 'draws from 1024 #1'): (1, 5, 3, 1, 5, 3),
    ('acc8', 'draws from 1024 #2'): (1, 5, 3, 1, 5, 3),
    ('acc8', 'draws from 1024 #3'): (1, 7, 5, 1, 7, 5),
    ('acc8', 'permutation of 32, random mask #0'): (1, 4, 2, 1, 4, 2),
    ('acc8', 'permutation of 32, random mask #1'): (1, 2, 0, 1, 2, 0),
    ('acc8', 'permutation of 32, random mask #2'): (1, 3, 1, 1, 3, 1),
    ('acc8', 'permutation of 32, random mask #3'): (1, 4, 2, 1, 4, 2),
    ('acc16', 'stride 1'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'stride 2'): (1, 8, 4, 1, 8, 4),
    ('acc16', 'stride 3'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'stride 4'): (1, 16, 12, 1, 16, 12),
    ('acc16', 'stride 8'): (1, 32, 28, 1, 32, 28),
    ('acc16', 'stride 16'): (1, 32, 28, 1, 32, 28),
    ('acc16', 'stride 32'): (1, 32, 28, 1, 32, 28),
    ('acc16', 'broadcast'): (1, 2, 0, 1, 4, 0),
    ('acc16', 'reversed'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'lane % 16'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'lane % 8'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'lane % 4'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'lane // 2'): (1, 2, 0, 1, 4, 0),
    ('acc16', 'lane // 4'): (1, 2, 0, 1, 4, 0),
    ('acc16', 'phase interleave'): (1, 16, 12, 1, 16, 12),
    ('acc16', 'phase same banks'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'xor swap halves'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'xor swap 8'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'xor swap 4'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'stride 1, lanes 0-15'): (1, 2, 0, 1, 2, 0),
    ('acc16', 'stride 2, lanes 0-15'): (1, 4, 2, 1, 4, 2),
    ('acc16', 'stride 1, lanes 16-31'): (1, 2, 0, 1, 2, 0),
    ('acc16', 'stride 2, lanes 16-31'): (1, 4, 2, 1, 4, 2),
    ('acc16', 'stride 1, even lanes'): (1, 4, 2, 1, 4, 0),
    ('acc16', 'stride 2, even lanes'): (1, 8, 6, 1, 8, 4),
    ('acc16', 'stride 1, lanes 0-7'): (1, 1, 0, 1, 1, 0),
    ('acc16', 'stride 2, lanes 0-7'): (1, 2, 1, 1, 2, 1),
    ('acc16', 'stride 1, lane 0'): (1, 1, 0, 1, 1, 0),
    ('acc16', 'stride 2, lane 0'): (1, 1, 0, 1, 1, 0),
    ('acc16', 'stride 1, lanes 0 and 31'): (1, 2, 0, 1, 2, 0),
    ('acc16', 'stride 2, lanes 0 and 31'): (1, 2, 0, 1, 2, 0),
    ('acc16', 'stride 1, lanes 0,8,16,24'): (1, 4, 2, 1, 4, 0),
    ('acc16', 'stride 2, lanes 0,8,16,24'): (1, 4, 2, 1, 4, 0),
    ('acc16', 'permutation of 32 #0'): (1, 10, 6, 1, 10, 6),
    ('acc16', 'permutation of 32 #1'): (1, 9, 5, 1, 9, 5),
    ('acc16', 'permutation of 32 #2'): (1, 8, 4, 1, 8, 4),
    ('acc16', 'permutation of 32 #3'): (1, 8, 4, 1, 8, 4),
    ('acc16', 'permutation of 32 #4'): (1, 11, 7, 1, 11, 7),
    ('acc16', 'permutation of 32 #5'): (1, 12, 8, 1, 12, 8),
    ('acc16', '32 distinct of 64 #0'): (1, 10, 6, 1, 10, 6),
    ('acc16', '32 distinct of 64 #1'): (1, 8, 4, 1, 8, 4),
    ('acc16', '32 distinct of 64 #2'): (1, 10, 6, 1, 10, 6),
    ('acc16', '32 distinct of 64 #3'): (1, 9, 5, 1, 9, 5),
    ('acc16', '32 distinct of 64 #4'): (1, 10, 6, 1, 10, 6),
    ('acc16', '32 distinct of 64 #5'): (1, 11, 7, 1, 11, 7),
    ('acc16', 'draws from 64 #0'): (1, 9, 5, 1, 9, 5),
    ('acc16', 'draws from 64 #1'): (1, 10, 6, 1, 10, 6),
    ('acc16', 'draws from 64 #2'): (1, 9, 5, 1, 9, 5),
    ('acc16', 'draws from 64 #3'): (1, 10, 6, 1, 10, 6),
    ('acc16', 'draws from 64 #4'): (1, 9, 5, 1, 9, 5),
    ('acc16', 'draws from 64 #5'): (1, 10, 6, 1, 10, 6),
    ('acc16', 'draws from 8 #0'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'draws from 8 #1'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'draws from 8 #2'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'draws from 8 #3'): (1, 4, 0, 1, 4, 0),
    ('acc16', 'draws from 1024 #0'): (1, 12, 8, 1, 12, 8),
    ('acc16', 'draws from 1024 #1'): (1, 13, 9, 1, 13, 9),
    ('acc16', 'draws from 1024 #2'): (1, 10, 6, 1, 10, 6),
    ('acc16', 'draws from 1024 #3'): (1, 11, 7, 1, 11, 7),
    ('acc16', 'permutation of 32, random mask #0'): (1, 6, 2, 1, 6, 2),
    ('acc16', 'permutation of 32, random mask #1'): (1, 7, 3, 1, 7, 3),
    ('acc16', 'permutation of 32, random mask #2'): (1, 6, 2, 1, 6, 2),
    ('acc16', 'permutation of 32, random mask #3'): (1, 6, 2, 1, 6, 2),
    ('issue_all', 'issue_all'): (16, 48, 0, 16, 48, 0),
    ('issue_xw', 'issue_xw'): (24, 80, 48, 16, 48, 0),
    ('issue_xyz', 'issue_xyz'): (16, 48, 0, 16, 48, 0),
    ('issue_xy_x', 'issue_xy_x'): (16, 48, 24, 16, 48, 0),
}

# The SASS nvcc (CUDA 13.0, sm_90) emitted for each kernel's shared accesses, in order.
H200_SASS = {
    "acc4": ["@P0 STS", "LDS"],
    "acc8": ["@P0 STS.64", "LDS.64"],
    "acc16": ["@P0 STS.128", "LDS.128"],
    "issue_all": ["STS.128", "STS.64", "LDS.128", "LDS.64"],
    "issue_xyz": ["STS.128", "STS.64", "LDS.128", "LDS.64"],
    "issue_xw": ["STS.128", "STS.64", "LDS", "LDS", "LDS.64"],
    "issue_xy_x": ["STS.128", "STS.64", "LDS.64", "LDS"],
}
SPLIT_BY_NVCC = {"issue_xw", "issue_xy_x"}


def counters(report):
    return (report.shared_load_instructions, report.shared_load_wavefronts,
            report.shared_load_bank_conflicts, report.shared_store_instructions,
            report.shared_store_wavefronts, report.shared_store_bank_conflicts)


def launch(kernel, ld=None, st=None, mask=0xFFFFFFFF, trace=False):
    f = MODULE.get_function(kernel)
    if kernel.startswith("issue"):
        out = np.zeros(256, dtype=np.float32)
        f(E.In(np.arange(256, dtype=np.int32)), E.Out(out), block=(256, 1, 1), grid=(1, 1),
          hazards="ignore")
    else:
        out = np.zeros(32, dtype=np.float32)
        f(E.In(np.asarray(ld, dtype=np.int32)), E.In(np.asarray(st, dtype=np.int32)),
          np.uint32(mask), E.Out(out), block=(32, 1, 1), grid=(1, 1), hazards="ignore",
          trace=trace)
    return f


def test_results_file_holds_these_patterns_and_readings():
    saved = json.loads((ROOT / "bench/results/shared_widths_h200.json").read_text())
    assert saved["meta"]["device"] == "NVIDIA H200"
    assert len(saved["cases"]) == len(CASES) == len(H200) == 193
    for c in saved["cases"]:
        mine = CASES[(c["kernel"], c["name"])]
        assert (c["ld"], c["st"], c["mask"]) == (mine["ld"], mine["st"], mine["mask"])
        m = c["ncu"]
        assert tuple(int(m[GSW.METRICS[j]]) for j in (0, 2, 4, 1, 3, 5)) == \
            H200[(c["kernel"], c["name"])]
    assert saved["sass"] == H200_SASS


@pytest.mark.parametrize("key", sorted(k for k in H200 if k[0] not in SPLIT_BY_NVCC))
def test_emulator_equals_ncu_where_sass_has_the_source_width(key):
    c = CASES[key]
    f = launch(c["kernel"], c["ld"], c["st"], c["mask"] if c["mask"] is not None else 0)
    assert counters(f.last_report) == H200[key]
    r = f.last_report
    assert r.shared_bank_conflicts == r.shared_load_bank_conflicts + r.shared_store_bank_conflicts


def test_issue_kernel_conflict_free_float4_and_float2():
    # 8 warps: STS.128 (4 wavefronts each) + STS.64 (2): 16 instructions, 48 wavefronts,
    # no conflict, loads the same (LDS.128 + LDS.64) when every component is used.
    assert H200[("issue_all", "issue_all")] == (16, 48, 0, 16, 48, 0)
    assert counters(launch("issue_all").last_report) == (16, 48, 0, 16, 48, 0)


SPLIT_AS_SASS = r"""
__global__ void issue_xw_sass(const int* idx, float* out)
{
    __shared__ float4 a[256];
    __shared__ float2 b[256];
    int t = threadIdx.x;
    a[t] = make_float4((float)t, (float)(t + 1), (float)(t + 2), (float)(t + 3));
    b[t] = make_float2((float)t, (float)(-t));
    __syncthreads();
    const float* af = (const float*)a;
    int i = idx[t];
    float x = af[4 * i];            // LDS     (stride 4 words: 4 wavefronts, 3 conflicts)
    float w = af[4 * i + 3];        // LDS
    float2 y = b[i];                // LDS.64  (2 wavefronts, none)
    out[t] = x + w + y.x + y.y;
}

__global__ void issue_xy_x_sass(const int* idx, float* out)
{
    __shared__ float4 a[256];
    __shared__ float2 b[256];
    int t = threadIdx.x;
    a[t] = make_float4((float)t, (float)(t + 1), (float)(t + 2), (float)(t + 3));
    b[t] = make_float2((float)t, (float)(-t));
    __syncthreads();
    int i = idx[t];
    float2 xy = ((const float2*)a)[2 * i];   // LDS.64 at a 16-byte stride: 4, 2 conflicts
    float yx = ((const float*)b)[2 * i];     // LDS at a 2-word stride: 2, 1 conflict
    out[t] = xy.x + xy.y + yx;
}
"""


@pytest.mark.parametrize("kernel", ["issue_xw", "issue_xy_x"])
def test_float4_split_by_nvcc_counts_the_source_and_the_sass_version_matches_ncu(kernel):
    # The source loads a whole float4: the emulator counts that LDS.128 (4 wavefronts per
    # warp, conflict-free), as for issue_all. nvcc emitted the loads of the used components
    # instead (H200_SASS); written as those instructions, the emulator gives ncu's numbers.
    assert counters(launch(kernel).last_report) == (16, 48, 0, 16, 48, 0)
    f = E.SourceModule(SPLIT_AS_SASS).get_function(kernel + "_sass")
    f(E.In(np.arange(256, dtype=np.int32)), E.Out(np.zeros(256, dtype=np.float32)),
      block=(256, 1, 1), grid=(1, 1))
    assert counters(f.last_report) == H200[(kernel, kernel)]
    assert H200[("issue_xw", "issue_xw")][:3] == (24, 80, 48)


# ----------------------------------------------------------------------------- the rule

def rule(lanes, elems, size, store):
    wf, ideal = M.shared_wavefronts(np.zeros(len(lanes), dtype=np.int64),
                                    np.asarray(lanes, dtype=np.int64),
                                    np.asarray(elems, dtype=np.int64) * size, size, store,
                                    False)
    return wf, ideal


def test_rule_by_hand():
    lanes = list(range(32))
    # float2 broadcast: a load is one wavefront (every lane pair shares its address), a
    # store one per half warp.
    assert rule(lanes, [5] * 32, 8, False) == (1, 1)
    assert rule(lanes, [5] * 32, 8, True) == (2, 2)
    # float2, lane % 16: both halves read the same 32 words, but lane pairs differ: 2 phases.
    assert rule(lanes, [l % 16 for l in lanes], 8, False) == (2, 2)
    # float2, even lanes of stride 1: no pair has two active lanes, so one phase of 16
    # lanes over 64 words: bank b holds words b and b + 32, a 2-way conflict (1 conflict);
    # the store keeps its halves (1 wavefront each, none).
    even = lanes[::2]
    assert rule(even, even, 8, False) == (2, 1)
    assert rule(even, even, 8, True) == (2, 2)
    # float4 stride 2 elements: quarter warps of 8 lanes over 64 words, 2-way each.
    assert rule(lanes, [2 * l for l in lanes], 16, False) == (8, 4)
    # float4 broadcast: one phase per half warp.
    assert rule(lanes, [5] * 32, 16, False) == (2, 2)
    assert rule(lanes, [5] * 32, 16, True) == (4, 4)
    # 4 bytes: the warp is one phase; a column of [32][32] is a 32-way conflict.
    assert rule(lanes, [32 * l for l in lanes], 4, False) == (32, 1)
    assert rule([], [], 8, False) == (0, 0)


@pytest.mark.parametrize("size", [4, 8, 16])
@pytest.mark.parametrize("store", [False, True])
def test_full_warp_fast_path_equals_the_general_path(size, store):
    rng = np.random.default_rng(size + 100 * store)
    for trial in range(60):
        warps = int(rng.integers(1, 6))
        kind = trial % 3
        if kind == 0:
            elems = rng.integers(0, 64, 32 * warps)
        elif kind == 1:
            elems = np.repeat(rng.integers(0, 64, 16 * warps), 2)     # pairs share
        else:
            elems = np.tile(np.arange(32) * int(rng.integers(1, 5)), warps)
        warp = np.repeat(np.arange(warps, dtype=np.int64), 32)
        lane = np.tile(np.arange(32, dtype=np.int64), warps)
        off = elems.astype(np.int64) * size
        fast = M.shared_wavefronts(warp, lane, off, size, store, True)
        slow = M.shared_wavefronts(warp, lane, off, size, store, False)
        per_warp = [M.shared_wavefronts(np.zeros(32, dtype=np.int64), lane[:32],
                                        off[32 * w:32 * (w + 1)], size, store, False)
                    for w in range(warps)]
        assert fast == slow == tuple(int(x) for x in np.sum(per_warp, axis=0))


@pytest.mark.parametrize("size,kernel", [(4, "acc4"), (8, "acc8"), (16, "acc16")])
def test_trace_report_and_banks_agree_on_random_patterns(size, kernel):
    # One rule for all three: the LaunchReport's counters, the trace's record of warp 0 and
    # tilinglib.banks.wavefronts (before, the trace took the warp as one group of first
    # words, 3 wavefronts where the report counted 4 for many 8-byte loads).
    rng = np.random.default_rng(size)
    for trial in range(150):
        idx = rng.integers(0, [8, 64, 1024][trial % 3], 32)
        mask = 0xFFFFFFFF if trial % 2 else int(rng.integers(1, 2**32))
        f = launch(kernel, idx, idx, mask, trace=True)
        r = f.last_report
        load = banks.find(f.last_trace, "s", kind="load")
        store = banks.find(f.last_trace, "s", kind="store")
        assert load.size == store.size == size
        assert (load.wavefronts, load.bank_conflicts) == \
            (r.shared_load_wavefronts, r.shared_load_bank_conflicts)
        assert (store.wavefronts, store.bank_conflicts) == \
            (r.shared_store_wavefronts, r.shared_store_bank_conflicts)
        assert banks.wavefronts(load.words, size=size, lanes=load.lanes) == load.wavefronts
        assert banks.wavefronts(store.words, size=size, lanes=store.lanes, store=True) == \
            store.wavefronts


def test_banks_wavefronts_bad_lanes_are_a_clear_error():
    with pytest.raises(ValueError, match="one lane id per word"):
        banks.wavefronts([0, 1], lanes=[0])
    with pytest.raises(ValueError, match="ascending"):
        banks.wavefronts([0, 1], lanes=[3, 2])


@pytest.mark.parametrize("size,kernel", [(8, "acc8"), (16, "acc16")])
def test_bank_picture_of_a_wide_access_has_one_row_per_wavefront(size, kernel):
    rng = np.random.default_rng(7)
    for trial in range(40):
        idx = rng.integers(0, 64, 32)
        f = launch(kernel, idx, idx, 0xFFFFFFFF if trial % 2 else int(rng.integers(1, 2**32)),
                   trace=True)
        for kind in ("load", "store"):
            access = banks.find(f.last_trace, "s", kind=kind)
            layout = banks.bank_layout(access)
            assert max(row for _, row in layout) + 1 == access.wavefronts
            # every word of every lane is drawn once: lanes x words per lane cells entries
            assert sum(len(v) for v in layout.values()) == len(access.lanes) * size // 4
