"""Shared-memory wavefronts and bank conflicts of 4-, 8- and 16-byte accesses, read by ncu.

Standalone (PyCUDA + NumPy, no tilinglib): on a GPU machine with the CUDA toolkit and `ncu`,

    python3 bench/gpu_shared_widths.py --out DIR

compiles one module (nvcc through PyCUDA, sm_90 by default), dumps its SASS
(`cuobjdump -sass`) so that each access's instruction width can be checked (LDS/LDS.64/
LDS.128, STS/STS.64/STS.128), then profiles every launch once under
``ncu --clock-control none`` with the six shared-memory metrics below and writes
DIR/shared_widths.json (cases, lane patterns, readings, SASS opcodes per kernel) and
DIR/sass.txt.

The cases. `acc4`, `acc8` and `acc16` run one warp (32 threads, one block): each active
lane stores one element (float, float2, float4) at `st[lane]`, a barrier, then loads the
element at `ld[lane]` and uses every component, so nvcc keeps the width. The patterns are
element indices per lane (a stride of s elements is s * width / 4 words): strides,
broadcast, phase-structured patterns, partial masks and random permutations/draws (seeded).
`issue_*` are the issue's kernel (256 threads, 8 warps, a conflict-free float4 and float2
store, then loads of the same elements) with every component used and with only some used.
The tests (tests/test_shared_widths.py) rebuild the same patterns with `cases()` and keep
the readings. Without a GPU (tilinglib importable):

    python bench/gpu_shared_widths.py --emulate bench/results/shared_widths_h200.json --out E.json
    python bench/gpu_shared_widths.py --table READINGS.json BEFORE.json AFTER.json --out T.md

run the emulator on every case and write the table of ncu against two emulator versions
(bench/results/shared_widths_h200.md, ran on the H200 on 2026-12-01 in 13 s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ncu_counters import parse_ncu_csv  # noqa: E402  (ncu's --csv output, one reader)

METRICS = [
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
]

SOURCE = r"""
extern "C" {
__global__ void acc4(const int* ld, const int* st, unsigned mask, float* out)
{
    __shared__ float s[2048];
    int l = threadIdx.x;
    bool on = (mask >> l) & 1u;
    if (on) s[st[l]] = (float)l;
    __syncthreads();
    float r = 0.0f;
    if (on) r = s[ld[l]];
    out[l] = r;
}

__global__ void acc8(const int* ld, const int* st, unsigned mask, float* out)
{
    __shared__ float2 s[1024];
    int l = threadIdx.x;
    bool on = (mask >> l) & 1u;
    if (on) s[st[l]] = make_float2((float)l, (float)(2 * l));
    __syncthreads();
    float r = 0.0f;
    if (on) { float2 v = s[ld[l]]; r = v.x + 3.0f * v.y; }
    out[l] = r;
}

__global__ void acc16(const int* ld, const int* st, unsigned mask, float* out)
{
    __shared__ float4 s[1024];
    int l = threadIdx.x;
    bool on = (mask >> l) & 1u;
    if (on) s[st[l]] = make_float4((float)l, (float)(2 * l), (float)(3 * l), (float)(4 * l));
    __syncthreads();
    float r = 0.0f;
    if (on) { float4 v = s[ld[l]]; r = v.x + 3.0f * v.y + 5.0f * v.z + 7.0f * v.w; }
    out[l] = r;
}

// The issue's kernel: 256 threads, a conflict-free float4 and float2 store per thread,
// then a load of the same elements (through idx[t] = t, so nothing is forwarded).
#define ISSUE(NAME, USE) \
__global__ void NAME(const int* idx, float* out) \
{ \
    __shared__ float4 a[256]; \
    __shared__ float2 b[256]; \
    int t = threadIdx.x; \
    a[t] = make_float4((float)t, (float)(t + 1), (float)(t + 2), (float)(t + 3)); \
    b[t] = make_float2((float)t, (float)(-t)); \
    __syncthreads(); \
    float4 x = a[idx[t]]; \
    float2 y = b[idx[t]]; \
    out[t] = USE; \
}
ISSUE(issue_all, x.x + x.y + x.z + x.w + y.x + y.y)
ISSUE(issue_xw, x.x + x.w + y.x + y.y)
ISSUE(issue_xyz, x.x + x.y + x.z + y.x + y.y)
ISSUE(issue_xy_x, x.x + x.y + y.x)
}
"""

FULL = 0xFFFFFFFF


def cases() -> list[dict]:
    """Every launch, in launch order: kernel, width, name, stride, mask, ld/st element indices."""
    out = []
    rng = np.random.default_rng(20261201)
    lane = np.arange(32)
    for width, kernel in ((4, "acc4"), (8, "acc8"), (16, "acc16")):
        per = 32 // (width // 4)                   # lanes per 128 bytes
        pats = []
        for s in (1, 2, 3, 4, 8, 16, 32):
            pats.append((f"stride {s}", s, FULL, lane * s))
        pats.append(("broadcast", None, FULL, np.full(32, 5)))
        pats.append(("reversed", -1, FULL, 31 - lane))
        pats.append(("lane % 16", None, FULL, lane % 16))
        pats.append(("lane % 8", None, FULL, lane % 8))
        pats.append(("lane % 4", None, FULL, lane % 4))
        pats.append(("lane // 2", None, FULL, lane // 2))
        pats.append(("lane // 4", None, FULL, lane // 4))
        pats.append(("phase interleave", None, FULL, (lane % per) * (32 // per) + lane // per))
        pats.append(("phase same banks", None, FULL, (lane % per) + (lane // per) * (256 // width)))
        pats.append(("xor swap halves", None, FULL, lane ^ 16))
        pats.append(("xor swap 8", None, FULL, lane ^ 8))
        pats.append(("xor swap 4", None, FULL, lane ^ 4))
        for m, label in ((0x0000FFFF, "lanes 0-15"), (0xFFFF0000, "lanes 16-31"),
                         (0x55555555, "even lanes"), (0x000000FF, "lanes 0-7"),
                         (0x00000001, "lane 0"), (0x80000001, "lanes 0 and 31"),
                         (0x01010101, "lanes 0,8,16,24")):
            pats.append((f"stride 1, {label}", 1, m, lane * 1))
            pats.append((f"stride 2, {label}", 2, m, lane * 2))
        for k in range(6):
            pats.append((f"permutation of 32 #{k}", None, FULL, rng.permutation(32)))
        for k in range(6):
            pats.append((f"32 distinct of 64 #{k}", None, FULL, rng.permutation(64)[:32]))
        for k in range(6):
            pats.append((f"draws from 64 #{k}", None, FULL, rng.integers(0, 64, 32)))
        for k in range(4):
            pats.append((f"draws from 8 #{k}", None, FULL, rng.integers(0, 8, 32)))
        for k in range(4):
            pats.append((f"draws from 1024 #{k}", None, FULL, rng.integers(0, 1024, 32)))
        for k in range(4):
            pats.append((f"permutation of 32, random mask #{k}", None,
                         int(rng.integers(1, 2**32, dtype=np.int64)), rng.permutation(32)))
        for name, stride, mask, idx in pats:
            idx = np.asarray(idx, dtype=np.int64)
            out.append({"kernel": kernel, "width": width, "name": name, "stride": stride,
                        "mask": int(mask), "ld": [int(v) for v in idx],
                        "st": [int(v) for v in idx], "threads": 32})
    for kernel in ("issue_all", "issue_xw", "issue_xyz", "issue_xy_x"):
        out.append({"kernel": kernel, "width": None, "name": kernel, "stride": 1,
                    "mask": None, "ld": None, "st": None, "threads": 256})
    return out


def child(cubin_path: str) -> int:
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as drv
    mod = drv.module_from_file(cubin_path)
    for c in cases():
        f = mod.get_function(c["kernel"])
        out = np.zeros(c["threads"], dtype=np.float32)
        if c["kernel"].startswith("issue"):
            f(drv.In(np.arange(256, dtype=np.int32)), drv.Out(out), block=(256, 1, 1), grid=(1, 1))
        else:
            f(drv.In(np.array(c["ld"], dtype=np.int32)), drv.In(np.array(c["st"], dtype=np.int32)),
              np.uint32(c["mask"]), drv.Out(out), block=(32, 1, 1), grid=(1, 1))
    drv.Context.synchronize()
    return 0


def sass_opcodes(sass: str) -> dict:
    """{kernel: [shared-memory opcodes in order]} from cuobjdump -sass output."""
    found: dict = {}
    current = None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            current = m.group(1)
            found[current] = []
            continue
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?((LDS|STS|LDSM|ATOMS)(\.[\w.]+)?)\s", line)
        if m and current:
            found[current].append(((m.group(1) or "").strip() + " " + m.group(2)).strip())
    return found


def emulate(case: dict) -> dict:
    """The emulator's six counters for one case (tilinglib imported here, not on the GPU)."""
    from tilinglib import emulator as E
    global _EMU_MODULE
    if "_EMU_MODULE" not in globals():
        _EMU_MODULE = E.SourceModule(SOURCE, no_extern_c=True)
    f = _EMU_MODULE.get_function(case["kernel"])
    out = np.zeros(case["threads"], dtype=np.float32)
    if case["kernel"].startswith("issue"):
        f(E.In(np.arange(256, dtype=np.int32)), E.Out(out), block=(256, 1, 1), grid=(1, 1),
          hazards="ignore")
    else:
        f(E.In(np.array(case["ld"], dtype=np.int32)), E.In(np.array(case["st"], dtype=np.int32)),
          np.uint32(case["mask"]), E.Out(out), block=(32, 1, 1), grid=(1, 1),
          hazards="ignore")
    r = f.last_report
    ld_conf = getattr(r, "shared_load_bank_conflicts", r.shared_load_wavefronts - r.shared_load_instructions)
    st_conf = getattr(r, "shared_store_bank_conflicts", r.shared_store_wavefronts - r.shared_store_instructions)
    return dict(zip(METRICS, (r.shared_load_instructions, r.shared_store_instructions,
                              r.shared_load_wavefronts, r.shared_store_wavefronts,
                              ld_conf, st_conf)))


def table(readings: dict, before: dict, after: dict) -> str:
    """Markdown: per case and load/store, ncu's instructions/wavefronts/conflicts, the
    emulator before and after (the same three)."""
    sass = readings["sass"]
    rows = ["| kernel | access | width (SASS) | stride (elements) | mask | ncu inst/wavef/confl "
            "| emulator before | emulator after | after = ncu |", "|---|---|---|---|---|---|---|---|---|"]
    equal = total = 0
    for c in readings["cases"]:
        key = f"{c['kernel']}/{c['name']}"
        for op, (i, w, k) in (("load", (0, 2, 4)), ("store", (1, 3, 5))):
            trip = lambda m: "/".join(f"{int(m[METRICS[j]])}" for j in (i, w, k))
            ops = [o for o in sass.get(c["kernel"], []) if (o.split()[-1].startswith("LDS") if op == "load" else o.split()[-1].startswith("STS"))]
            width = " + ".join(o.split()[-1] for o in ops)
            same = trip(after[key]) == trip(c["ncu"])
            equal += same
            total += 1
            mask = "all" if c["mask"] in (None, 0xFFFFFFFF) else f"0x{c['mask']:08x}"
            rows.append(f"| {c['kernel']} | {op} {c['name']} | {width} | {c['stride']} | {mask} | "
                        f"{trip(c['ncu'])} | {trip(before[key])} | {trip(after[key])} | "
                        f"{'yes' if same else 'no'} |")
    head = (f"Shared-memory counters by access width, {readings['meta']['device']} "
            f"({readings['meta']['date']}, {readings['meta']['nvcc']}, ncu "
            f"{readings['meta']['ncu']}), against the emulator before and after the wavefront "
            f"rule of `memory.shared_wavefronts`: after = ncu in {equal} of {total}. Before: "
            f"`--emulate` with the tilinglib of main at 2dc1885 (conflicts = wavefronts - "
            f"instructions); width (SASS): the kernel's shared instructions of that kind.\n\n")
    return head + "\n".join(rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--emulate", default=None, metavar="READINGS_JSON",
                    help="no GPU: run the emulator (tilinglib importable) on every case of "
                         "READINGS_JSON and write its counters to --out (a JSON file)")
    ap.add_argument("--table", nargs=3, default=None, metavar=("READINGS", "BEFORE", "AFTER"),
                    help="no GPU: write the markdown table of ncu against two --emulate "
                         "outputs to --out")
    a = ap.parse_args()
    if a.child:
        return child(a.child)
    if a.emulate:
        readings = json.loads(Path(a.emulate).read_text())
        res = {f"{c['kernel']}/{c['name']}": emulate(c) for c in readings["cases"]}
        Path(a.out).write_text(json.dumps(res, indent=1))
        return 0
    if a.table:
        r, b, f = (json.loads(Path(p).read_text()) for p in a.table)
        Path(a.out).write_text(table(r, b, f))
        return 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    from pycuda.compiler import compile as nvcc_compile
    t0 = time.time()
    cubin = nvcc_compile(SOURCE, arch=a.arch, no_extern_c=True)
    cubin_path = out / "shared_widths.cubin"
    cubin_path.write_bytes(cubin)
    sass = subprocess.run(["cuobjdump", "-sass", str(cubin_path)], capture_output=True,
                          text=True).stdout
    (out / "sass.txt").write_text(sass)
    ops = sass_opcodes(sass)
    print(f"compiled in {time.time() - t0:.1f} s; shared opcodes:", json.dumps(ops, indent=1))
    nvcc_v = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    ncu_v = subprocess.run(["ncu", "--version"], capture_output=True, text=True).stdout
    log = out / "ncu.csv"
    cmd = ["ncu", "--clock-control", "none", "--csv", "--print-units", "base",
           "--log-file", str(log), "--metrics", ",".join(METRICS),
           sys.executable, str(Path(__file__).resolve()), "--child", str(cubin_path)]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(f"ncu ran in {time.time() - t0:.1f} s, rc {r.returncode}")
    print(r.stdout[-3000:], r.stderr[-3000:])
    launches = parse_ncu_csv(log.read_text(errors="replace") if log.exists() else "")
    cs = cases()
    if len(launches) != len(cs):
        print(f"WARNING: {len(launches)} ncu launches for {len(cs)} cases")
    for c, (kname, metrics) in zip(cs, launches):
        if kname != c["kernel"]:
            print("WARNING: launch order mismatch", kname, c["kernel"])
        c["ncu_kernel"] = kname
        c["ncu"] = metrics
    import pycuda.driver as drv
    drv.init()
    dev = drv.Device(0)
    meta = {"date": time.strftime("%Y-%m-%d"), "device": dev.name(),
            "driver": drv.get_driver_version(), "arch": a.arch,
            "nvcc": nvcc_v.strip().splitlines()[-1] if nvcc_v else "",
            "ncu": ncu_v.strip().splitlines()[-1] if ncu_v else "", "metrics": METRICS,
            "command": "ncu --clock-control none --metrics ... (one launch each)"}
    (out / "shared_widths.json").write_text(json.dumps({"meta": meta, "sass": ops, "cases": cs},
                                                       indent=1))
    for c in cs:
        m = c.get("ncu", {})
        vals = [m.get(k) for k in METRICS]
        print(f"{c['kernel']:<10} {c['name']:<40} " + " ".join(
            f"{v:>5.0f}" if isinstance(v, float) else "    ?" for v in vals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
