"""The measured figures the course's prose quotes, each tied to tilinglib/data.

How to use it (README.md, "For contributors"): a sentence that quotes a measurement gets a
claim here, `C(file, pattern, value, ...)`: the words around the figure with ``{}`` where
the figure stands (whitespace and line breaks do not matter), and a function of the data
that gives the figure in the unit it is quoted in. `tests/test_prose_figures.py` finds the
sentence and checks the figure at its printed precision ("42.2" to one decimal, "21,148" to
a unit); ``cmp="<"`` (or ">") checks a bound ("under 1% of the peak"). A number in a sentence
about measurements that is not measured (derived in the text, a datasheet figure used as
such, points of a rubric) goes into EXEMPT with the reason.

Files: "01".."08" are the lessons, "a1".."a4" the assignments, "README" README.md, other
names repository paths. EXEMPT_FILES are documents whose figures are dated records of other
runs (each names its results file in bench/results); a claim still checks any figure in them
that is the course's data.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from prose_figures import C, E
from tilinglib import reference, roofline

REF = reference.load("h200")
H200 = roofline.GPUS["H200 SXM"]
_PTXAS = json.loads((Path(__file__).resolve().parent.parent / "tilinglib" / "data" /
                     "ptxas_sm90.json").read_text())


# -- the data, in the units the prose quotes ------------------------------------------------

def run(kernel, N=4096, **kw):
    """GFLOP/s of a run of the first reference run (lessons 02-06)."""
    return REF.run(kernel, N, **kw).gflops


def naive(N=4096, block=(32, 32, 1)):
    return run("sgemm_naive", N, block=block)


def tiled(tile, pad=0, N=4096):
    return run("sgemm_tiled", N, tile=tile, pad=pad)


def tiled_db(tile, N=4096):
    return run("sgemm_tiled_db", N, tile=tile)


def cublas(N=4096):
    """cuBLAS in the first reference run (lessons 02-06)."""
    return run("cublas", N)


def _default(name):
    from tilinglib import ladder

    return None if name == "cublas" else ladder.get(name).resolve()


def step(name, N=4096, params=None):
    """GFLOP/s of a ladder step (at its default tile shape) in the ladder's run."""
    return REF.step(name, N, params or _default(name)).gflops


def ladder_cublas(N=4096):
    """cuBLAS beside the ladder, same run."""
    return REF.step("cublas", N).gflops


def step_pct(name, N=4096):
    return 100 * step(name, N) / ladder_cublas(N)


def gain(a, b):
    """Percent by which a is above b."""
    return 100 * (a / b - 1)


def regs(name, N=4096):
    return REF.step(name, N, _default(name)).extra["registers"]


def ptxas(name, **params):
    for row in _PTXAS["shapes"]:
        if row["step"] == name and row["params"] == params:
            return row
    raise KeyError((name, params))


def metric(kernel, name, N=1024, **kw):
    return REF.counters(kernel, N, **kw).metrics[name]


def gbps(kernel, N=4096, **kw):
    return REF.run(kernel, N, **kw).extra["gbps"]


T = lambda gflops: gflops / 1000          # noqa: E731  GFLOP/s -> TFLOP/s
M = lambda count: count / 1e6             # noqa: E731  a count in millions
LD = "smsp__inst_executed_op_shared_ld.sum"
LD_WF = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
ST = "smsp__inst_executed_op_shared_st.sum"
ST_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
ST_WF = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"


@functools.lru_cache(maxsize=None)
def swapped_naive_counts():
    """(requests, sectors) of lesson 02's naive kernel with row and col swapped, N = 64,
    32 x 32 blocks, on the emulator (lesson 02, exercise 2's answer), and the plain one's."""
    import numpy as np

    from tilinglib import emulator, kernels, sgemm

    src = kernels.load("sgemm_naive")
    swapped = (src.replace("int col = blockIdx.x * blockDim.x + threadIdx.x;",
                           "int col = blockIdx.y * blockDim.y + threadIdx.y;")
                  .replace("int row = blockIdx.y * blockDim.y + threadIdx.y;",
                           "int row = blockIdx.x * blockDim.x + threadIdx.x;"))
    out = []
    for text in (swapped, src):
        f = emulator.SourceModule(text).get_function("sgemmNaive")
        A, B = sgemm.random_matrices(64)
        f(np.int32(64), emulator.In(A), emulator.In(B), emulator.Out(np.zeros_like(A)),
          block=(32, 32, 1), grid=(2, 2))
        out.append((f.last_report.global_load_requests, f.last_report.global_load_sectors))
    return out


SAXPY_FLOPS = lambda: gbps("saxpy", 2 ** 28) * 1e9 * 2 / 12    # noqa: E731 2 FLOP per 12 B


CLAIMS = [
    # -- lesson 01: datasheet figures (tl.roofline.GPUS) and the first measurement
    C("01", "under {}% of its {} TFLOP/s", lambda: 100 * H200.dram_bandwidth * 0.25
      / H200.fp32_flops, lambda: H200.fp32_flops / 1e12, cmp=("<", "=")),
    C("01", "(H200 {}, H100 {}, A100 {}, the laptop {})",
      *[lambda g=g: roofline.GPUS[g].ridge_point for g in
        ("H200 SXM", "H100 SXM", "A100 SXM 80GB", "RTX 4060 Laptop")]),
    C("01", "the ridge of the H200 ({}), H100 ({}), A100 ({}) and a laptop RTX 4060 ({})",
      *[lambda g=g: roofline.GPUS[g].ridge_point for g in
        ("H200 SXM", "H100 SXM", "A100 SXM 80GB", "RTX 4060 Laptop")]),
    C("01", "TILE=32 is {} times faster than the naive kernel",
      lambda: tiled(32) / naive(), what="tiled TILE=32 / naive 32x32, N=4096"),
    # -- lesson 02
    C("02", "About {}% of the peak", lambda: 100 * naive() * 1e9 / H200.fp32_flops),
    C("02", "Yet {} GFLOP/s is five times the {} TFLOP/s", naive,
      lambda: roofline.attainable(0.25, H200) / 1e12),
    C("02", "the naive kernel reaches {} GFLOP/s at", naive),
    C("02", "about {}% of peak", lambda: 100 * naive() * 1e9 / H200.fp32_flops),
    C("02", "Both are {}% ({} GFLOP/s)", lambda: 100 * naive() * 1e9 / H200.fp32_flops, naive),
    C("02", "beats $16\\times16$ ({} against {} GFLOP/s", naive,
      lambda: naive(block=(16, 16, 1))),
    C("02", "the emulator counts {} requests and {} sectors, {} per request instead of {}: the "
      "same answer (it still matches NumPy), {} times the sectors",
      lambda: swapped_naive_counts()[0][0], lambda: swapped_naive_counts()[0][1],
      lambda: swapped_naive_counts()[0][1] / swapped_naive_counts()[0][0],
      lambda: swapped_naive_counts()[1][1] / swapped_naive_counts()[1][0],
      lambda: swapped_naive_counts()[0][1] / swapped_naive_counts()[1][1],
      what="the emulator's counts, N = 64"),
    # -- lesson 03
    C("03", "TILE = 32 is {} times faster than the naive kernel", lambda: tiled(32) / naive()),
    C("03", "far from the end, at {}% of cuBLAS", lambda: 100 * tiled(32) / cublas()),
    C("03", "TILE = 4 runs at {} GFLOP/s on the H200", lambda: tiled(4)),
    C("03", "TILE = 32 reaches {} GFLOP/s at $N = 4096$: {} times the naive kernel, {}% of",
      lambda: tiled(32), lambda: tiled(32) / naive(), lambda: 100 * tiled(32) / cublas()),
    # -- lesson 04
    C("04", "with the {} registers per thread that nvcc gave this kernel on the H200",
      lambda: REF.run("sgemm_tiled", 4096, tile=32, pad=0).extra["registers"]),
    C("04", "256 threads per block, {} registers per thread",
      lambda: REF.run("sgemm_tiled", 4096, tile=16, pad=0).extra["registers"]),
    C("04", "(N = 4096): {}, {}, {} and {} GFLOP/s at TILE", *[lambda t=t: tiled(t)
                                                              for t in (4, 8, 16, 32)]),
    C("04", "yet the speed rises {}×", lambda: tiled(32) / tiled(8)),
    C("04", "speed rises from {} to {} GFLOP/s with TILE", lambda: tiled(8), lambda: tiled(32)),
    # -- lesson 05
    C("05", "by {}% at TILE = 32. On", lambda: 100 * (1 - tiled(32, 1) / tiled(32))),
    C("05", "the source-level count, {} million; the unpadded one only {} million",
      lambda: M(metric("sgemm_tiled", LD, tile=32, pad=1)),
      lambda: M(metric("sgemm_tiled", LD, tile=32, pad=0))),
    C("05", "the instructions ({} million each, to within {}%)",
      lambda: M(metric("sgemm_tiled", LD, tile=32, pad=1)),
      lambda: max(100 * abs(metric("sgemm_tiled", LD_WF, tile=t, pad=1)
                            / metric("sgemm_tiled", LD, tile=t, pad=1) - 1) for t in (16, 32)),
      cmp=("=", "<")),
    C("05", "Unpadded there are {} million more wavefronts",
      *[lambda: M(metric("sgemm_tiled", LD_WF, tile=16, pad=0)
                  - metric("sgemm_tiled", LD, tile=16, pad=0))]),
    C("05", "($\\tfrac18$ of {} million)", lambda: M(metric("sgemm_tiled", LD, tile=32, pad=1))),
    C("05", "TILE = 16 with padding has {} million store bank conflicts on {} million stores",
      lambda: M(metric("sgemm_tiled", ST_CONFLICTS, tile=16, pad=1)),
      lambda: M(metric("sgemm_tiled", ST, tile=16, pad=1))),
    C("05", "shared-load instructions ({}% more", lambda: 100 * (
        metric("sgemm_tiled", LD, tile=32, pad=1) / metric("sgemm_tiled", LD, tile=32, pad=0)
        - 1)),
    C("05", "each of the {} column reads costs 32 wavefronts ({} in all), as the model says; "
      "padded, about one ({})",
      lambda: metric("transpose:transposeShared", LD, pad=0),
      lambda: metric("transpose:transposeShared", LD_WF, pad=0),
      lambda: metric("transpose:transposeShared", LD_WF, pad=1)),
    C("05", "The padded transpose moves {} GB/s against {}: {}% faster",
      lambda: gbps("transpose:transposeShared", pad=1),
      lambda: gbps("transpose:transposeShared", pad=0),
      lambda: gain(gbps("transpose:transposeShared", pad=1),
                   gbps("transpose:transposeShared", pad=0))),
    C("05", "on the H200 by {}% ({} → {} GFLOP/s at TILE = 32",
      lambda: 100 * (1 - tiled(32, 1) / tiled(32)), lambda: tiled(32), lambda: tiled(32, 1)),
    C("05", "`LDS.128` ({} million shared-load instructions instead of {} million)",
      lambda: M(metric("sgemm_tiled", LD, tile=32, pad=1)),
      lambda: M(metric("sgemm_tiled", LD, tile=32, pad=0))),
    C("05", "32-way conflicts unpadded ({} wavefronts for {} loads)",
      lambda: metric("transpose:transposeShared", LD_WF, pad=0),
      lambda: metric("transpose:transposeShared", LD, pad=0)),
    C("05", "and {} → {} GB/s", lambda: gbps("transpose:transposeShared", pad=0),
      lambda: gbps("transpose:transposeShared", pad=1)),
    C("05", "the H200's ratio is {} at TILE = 32", lambda: tiled(32, 1) / tiled(32)),
    C("05", "(`T[threadIdx.y][threadIdx.x] = in[...]`, a row per warp) and reads {};",
      lambda: metric("transpose:transposeShared", ST_CONFLICTS, pad=0)),
    C("05", "reads {}, next to nothing", lambda: metric("sgemm_tiled_db", ST_CONFLICTS, tile=32)),
    C("05", "They add {}% to the unpadded kernel's store wavefronts at TILE = 16 and {}% at TILE = 32",
      *[lambda t=t: 100 * metric("sgemm_tiled", ST_CONFLICTS, tile=t, pad=0)
        / metric("sgemm_tiled", ST, tile=t, pad=0) for t in (16, 32)]),
    # -- lesson 06
    C("06", "{}% of the datasheet bandwidth is a good streaming kernel",
      lambda: 100 * gbps("saxpy", 2 ** 28) * 1e9 / H200.dram_bandwidth),
    C("06", "Less than {}% of the arithmetic units are used",
      lambda: 100 * SAXPY_FLOPS() / H200.fp32_flops, cmp="<"),
    C("06", "sits just under its roof** (at {}% of it)",
      lambda: 100 * gbps("saxpy", 2 ** 28) * 1e9 / H200.dram_bandwidth),
    C("06", "= 1.2$ TFLOP/s: {} TFLOP/s", lambda: T(naive())),
    C("06", "at TILE = 32: {} TFLOP/s", lambda: T(tiled(32))),
    C("06", "double buffering gains {}% at TILE = 32 and N = 4096 ({} → {} GFLOP/s), {}% at "
      "TILE = 16, and {}–{}% at N = 1024",
      lambda: gain(tiled_db(32), tiled(32)), lambda: tiled(32), lambda: tiled_db(32),
      lambda: gain(tiled_db(16), tiled(16)),
      lambda: min(gain(tiled_db(t, 1024), tiled(t, N=1024)) for t in (16, 32)),
      lambda: max(gain(tiled_db(t, 1024), tiled(t, N=1024)) for t in (16, 32))),
    C("06", "under a fifth of cuBLAS ({} GFLOP/s)", cublas),
    C("06", "it streams {} GB/s, {}% of the datasheet bandwidth, and uses under {}% of the FP32",
      lambda: gbps("saxpy", 2 ** 28),
      lambda: 100 * gbps("saxpy", 2 ** 28) * 1e9 / H200.dram_bandwidth,
      lambda: 100 * SAXPY_FLOPS() / H200.fp32_flops, cmp=("=", "=", "<")),
    C("06", "On the H200: +{}% at TILE = 32", lambda: gain(tiled_db(32), tiled(32))),
    C("06", "At {} TB/s shared by 132 SMs", lambda: H200.dram_bandwidth / 1e12),
    C("06", "# {} GB/s", lambda: gbps("saxpy", 2 ** 28)),
    # -- lesson 07
    C("07", "It still reaches only {}% of cuBLAS on the H200", lambda: step_pct("tiled")),
    C("07", "The datasheet's {} TFLOP/s over {} SMs", lambda: H200.fp32_flops / 1e12,
      lambda: H200.sms),
    C("07", "The kernel runs at {} TFLOP/s, and cuBLAS at {}:", lambda: T(step("tiled")),
      lambda: T(ladder_cublas())),
    C("07", "it stops at {} registers and spills {} bytes per thread",
      lambda: ptxas("regtile2d", BM=128, BN=128, BK=8, TM=16, TN=16)["registers"],
      lambda: ptxas("regtile2d", BM=128, BN=128, BK=8, TM=16, TN=16)["spill_store_bytes"]),
    C("07", "**{} registers per thread** (the table above)",
      lambda: ptxas("regtile2d", BM=128, BN=128, BK=8, TM=8, TN=8)["registers"]),
    # -- lesson 08
    C("08", "On the H200 that kernel runs at {}% of cuBLAS", lambda: step_pct("regtile2d")),
    C("08", "the three steps that take it past {}%", lambda: step_pct("warptile_db"), cmp=">"),
    C("08", "runs at {} GFLOP/s against {} for lesson 07's: **+{}%**", lambda: step("vec4"),
      lambda: step("regtile2d"), lambda: gain(step("vec4"), step("regtile2d"))),
    C("08", "it runs at {} GFLOP/s, +{}% over the float4 kernel", lambda: step("warptile"),
      lambda: gain(step("warptile"), step("vec4"))),
    C("08", "ptxas gives it {} registers per thread", lambda: regs("warptile_db")),
    C("08", "256 threads × {} registers is", lambda: regs("warptile_db")),
    C("08", "make up for it: {} GFLOP/s on the H200, +{}% over the plain warp-tiled kernel",
      lambda: step("warptile_db"), lambda: gain(step("warptile_db"), step("warptile"))),
    C("08", "from 8 to 4.5 to 1, and {} → {} → {} TFLOP/s",
      *[lambda s=s: T(step(s)) for s in ("tiled", "coarse", "regtile2d")]),
    C("08", "**float4 + transposed A** (+{}%)", lambda: gain(step("vec4"), step("regtile2d"))),
    C("08", "**Warp tiling** (+{}%)", lambda: gain(step("warptile"), step("vec4"))),
    C("08", "**Double buffering** (+{}%)", lambda: gain(step("warptile_db"), step("warptile"))),
    C("08", "The best kernel reaches **{}% of cuBLAS**", lambda: step_pct("warptile_db")),
    C("08", "and the best course kernel at {}%.", lambda: 100 * step("warptile_db") * 1e9
      / H200.fp32_flops),
    C("08", "in one run: {} (tiled) → {} → {} → {} → {} → **{} TFLOP/s**, {}% of cuBLAS's {}.",
      *[lambda s=s: T(step(s)) for s in ("tiled", "coarse", "regtile2d", "vec4", "warptile",
                                         "warptile_db")],
      lambda: step_pct("warptile_db"), lambda: T(ladder_cublas())),
    # -- assignments
    C("a3", "The H200 agrees: {} GFLOP/s at TILE = 32 against {} at 16 ({} at 8, {} at 4)",
      *[lambda t=t: tiled(t) for t in (32, 16, 8, 4)]),
    C("a3", "at least the chosen TILE and one other ({} vs {} GFLOP/s on the H200)",
      lambda: tiled(32), lambda: tiled(16)),
    C("a3", "yet on the H200 it is only about {}× faster", lambda: tiled(32) / naive()),
    C("a4", "runs at about {} of cuBLAS's {} TFLOP/s at N = 4096", lambda: T(step("tiled")),
      lambda: T(ladder_cublas())),
    # -- README and docs
    C("README", "SAXPY has no reuse ({}% of the H200's bandwidth)",
      lambda: 100 * gbps("saxpy", 2 ** 28) * 1e9 / H200.dram_bandwidth),
    C("README", "when it costs {}% (the tiled kernel)", lambda: 100 * (1 - tiled(32, 1) / tiled(32))),
    C("README", "(the best kernel at {}% of cuBLAS)", lambda: step_pct("warptile_db")),
    C("docs/emulator.md", "5/8 of the emulator's count ({} vs {} at N=1024)",
      lambda: metric("sgemm_tiled", LD, tile=32, pad=0),
      lambda: metric("sgemm_tiled", LD, tile=32, pad=1)),
]


EXEMPT = [
    # lesson 01
    E("01", r"datasheets count an FMA as 2 FLOPs", reason="a definition"),
    E("01", r"32 times the bound", "32", reason="TILE = 32's intensity over the naive one, derived"),
    E("01", r"not 32 times", "32", reason="the ratio of requested bytes, derived"),
    # lesson 02
    E("02", r"request and 1 sector", reason="counts derived in section 10"),
    E("02", r"against 4, exercise 1", reason="sectors per step, derived in exercise 1"),
    E("02", r"64 times the work", "64", reason="(4096 / 1024)^3, derived"),
    # lesson 03
    E("03", r"32 times fewer bytes|not 32 times", "32", reason="TILE, derived"),
    # lesson 04
    E("04", r"occupancy|Occupancy", reason="the occupancy calculator's result, derived in the text"),
    E("04", r"72 registers|73,728 registers|65,536|2,304 registers", reason="a made-up register "
      "count of the exercise, and what follows from it"),
    E("04", r"resident warps / 64", reason="the SM's warp slots, a limit"),
    # lesson 05
    E("05", r"32 wavefronts", "32", reason="the bank model's prediction, derived"),
    E("05", r"exactly 5/8 of it", "5", reason="the fraction 5/8, derived"),
    E("05", r"counts at .N = 1024.", reason="the sizes profiled"),
    E("05", r"16 consecutive bytes starting at a multiple of 16", reason="four floats, derived"),
    E("05", r"where sections 2 and 4 found none", "4", reason="a section's number"),
    # lesson 06
    E("06", r"occupancy at 100%", reason="the occupancy calculator's result (lesson 04)"),
    # lesson 07
    E("07", r"1,980 MHz top clock", "1,980", reason="nvidia-smi's reading on the H200 "
      "(docs/gpu-runs.md), the clock_hz of the cell below"),
    E("07", r"lesson 03 counted 5/8", reason="the ratio lesson 03 derives from the counters"),
    E("07", r"about 13 TFLOP/s", "13", reason="the ceiling the cell above computes"),
    E("07", r"64 registers each", "64", reason="65,536 / 1,024, derived"),
    E("07", r"its 65,536 registers", reason="the SM's register file, a limit"),
    E("07", r"128 registers per thread|TM·TN \+ TM \+ TN \+ 30", reason="the exercise's budget "
      "and the course's estimate"),
    E("07", r"which no longer fits a thread's 255 registers", reason="bytes per FMA at P, "
      "derived; 255 is the per-thread limit"),
    E("07", r"6 blocks per SM instead of 25", reason="the occupancy calculator, derived"),
    E("07", r"with the formulas \(0.0625", reason="the formulas' values"),
    # lesson 08
    E("08", r"4 wavefronts is the floor|2 when each half", reason="the bank model for float4"),
    E("08", r"Same bytes per FMA \(2,|37% of the wavefronts", reason="counted by the emulator "
      "in the cell above (3,072 / 8,192), derived"),
    E("08", r"once per tile, against TM / 4", reason="loads per k, derived"),
    E("08", r"fastest of the sweep, section 6\) it runs at", "0.0625", reason="the formula's "
      "value"),
    E("08", r"56,576 of the SM's 65,536|12.5% occupancy", "56,576", "65,536", "12.5",
      reason="the register arithmetic, derived from the 221 registers claimed beside it"),
    E("08", r"median of 20", "20", reason="the timing method"),
    E("08", r"Every kernel of lessons 07 and 08", "08", reason="a lesson's number"),
    E("README", r"the race searches of lessons 03 and 06", "03", "06", reason="lessons' numbers"),
    E("08", r"498 timed shapes", reason="the sweep's size (bench/ladder_sweep.py)"),
    E("08", r"86 tiles of 12|lower the figure by 0.8%", reason="K = 1024 in tiles of 12, derived"),
    E("08", r"from 8 to 4.5 to 1", reason="the formulas' bytes per FMA"),
    E("08", r"100 of the H200's 132 SMs", reason="132 - 32 blocks, derived"),
    E("08", r"132 on the H200 at one block per SM", reason="the H200's SM count (device data)"),
    E("08", r"Per FMA \(2 FLOPs\)", reason="a definition"),
    E("08", r"1,024² / \(BM·BN\)|\(256 of them", reason="block counts, derived"),
    E("08", r"The 1,024 problem", reason="the size N"),
    # assignments: points of the rubrics, parameters of the task
    E("a3", r"Points|points|\(2\)|100% occupancy|occupancy stays 100%", reason="rubric points "
      "and the occupancy calculator's result"),
    E("a3", r"32× fewer bytes", reason="TILE, derived"),
    E("a3", r"shared memory per block, 10 blocks per SM", reason="the rubric's points"),
    E("a3", r"against 8,069 at 16", "16", "8", "4", reason="the TILE of each figure"),
    E("a4", r"COARSE = 8 and 32", reason="parameters of the task"),
    # README
    E("README", r"181 kernels|171 of the 177", reason="the conformance corpus "
      "(docs/conformance.md, bench/results), not a measurement of the course's kernels"),
]

#: Documents whose figures are records of particular runs, not the course's data, with why.
EXEMPT_FILES = {
    "docs/gpu-runs.md": "a dated log of every GPU run: each figure is what that run printed "
                        "(the files are in bench/results); the course's figures are "
                        "tilinglib/data/reference_h200.json",
    "docs/h200-measurements.md": "the first H200 measurements of 2026-11-29, before "
                                 "tilinglib/data existed, kept as they were measured",
    "docs/emulator.md": "the emulator's own engineering figures: its agreement with Nsight "
                        "Compute (bench/results/ncu_vs_emulator*.md) and its speed "
                        "(bench/emulator_speed.py); its figures of the reference data are "
                        "claims above",
    "docs/frontend.md": "the front end's engineering figures (compile times, corpus counts; "
                        "bench/results)",
    "docs/conformance.md": "the conformance corpus's counts and results (bench/results)",
    "docs/architecture.md": "the architecture's limits and counting rules, no measurement",
}
