"""Registers per thread and spills of the ladder's kernels, from ptxas, without a GPU.

    python bench/ptxas_registers.py [--arch sm_90] [--out tilinglib/data/ptxas_sm90.json]

Compiles every tile shape of `SHAPES` (lesson 07's grid, the shapes bench/gpu_regtile.py
times, and the tuned kernel's shapes that `tilinglib.tile_choice`'s wave model weighs) the way PyCUDA's SourceModule does on an H200 (the source inside ``extern "C" {}``,
``nvcc --cubin -arch sm_90`` plus the step's ``-D`` options), with ``-Xptxas -v``, and reads
ptxas's report: registers per thread, spill stores and loads (bytes), stack frame, static
shared memory. These are the numbers PyCUDA's ``Function.num_regs`` and
``local_size_bytes`` give for the same toolkit; they need the CUDA toolkit, not a GPU.
Writes the JSON that `tilinglib.ladder.ptxas_registers` reads (format below) and prints a
table.

Format: ``{"format": "tilinglib-ptxas", "arch", "nvcc" (its --version line), "date",
"command", "shapes": [{"step", "kernel", "params", "registers", "spill_store_bytes",
"spill_load_bytes", "stack_frame_bytes", "shared_bytes"}]}``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

_USED = re.compile(r"Used (\d+) registers")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_SMEM = re.compile(r"(\d+) bytes smem")


def shapes():
    """(step, kernel, params) of every shape to compile: gpu_regtile's grid and the
    lesson's own tables (each once)."""
    from gpu_regtile import SHAPES

    from tilinglib import ladder

    out = [(s, k, dict(p)) for s, k, p in SHAPES]
    extra = [("tiled", {"TILE": t}) for t in (8, 16)]
    extra += [("coarse", {"BM": 32, "BN": 32, "BK": 8, "TM": t}) for t in (1, 4)]
    extra += [("regtile2d", {"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 8}),
              ("regtile2d", {"BM": 64, "BN": 64, "BK": 8, "TM": 8, "TN": 4}),
              ("regtile2d", {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 16}),
              ("regtile2d", {"BM": 128, "BN": 128, "BK": 8, "TM": 16, "TN": 16})]
    for name, p in extra:
        step = ladder.get(name)
        out.append((name, step.kernel, step.resolve(p)))
    # lesson 08, section 8: the tuned kernel where the wave model chooses among its shapes
    from tilinglib import tile_choice

    out += [(name, ladder.get(name).kernel, ladder.get(name).resolve(p))
            for name, p in tile_choice.candidates() if name == "tuned"]
    out.append(("tuned", "sgemm_tuned", ladder.TUNED.resolve()))
    seen, unique = set(), []
    for s, k, p in out:
        key = (s, tuple(sorted(p.items())))
        if key not in seen:
            seen.add(key)
            unique.append((s, k, p))
    return unique


def compile_one(kernel: str, params: dict, arch: str, workdir: Path) -> dict:
    from tilinglib import kernels

    src = workdir / f"{kernel}.cu"
    src.write_text('extern "C" {\n#line 1\n' + kernels.load(kernel) + "\n}\n")
    cmd = ["nvcc", "--cubin", f"-arch={arch}", "-Xptxas", "-v", "-o", str(workdir / "k.cubin"),
           *[f"-D{k}={v}" for k, v in params.items()], str(src)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"nvcc failed for {kernel} {params}:\n{p.stderr}")
    text = p.stderr + p.stdout
    used, spill, smem = _USED.search(text), _SPILL.search(text), _SMEM.search(text)
    return {"registers": int(used.group(1)), "stack_frame_bytes": int(spill.group(1)),
            "spill_store_bytes": int(spill.group(2)), "spill_load_bytes": int(spill.group(3)),
            "shared_bytes": int(smem.group(1)) if smem else 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", type=Path, default=ROOT / "tilinglib" / "data" / "ptxas_sm90.json")
    args = ap.parse_args()
    from tilinglib import ladder

    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for step, kernel, params in shapes():
            r = compile_one(kernel, params, args.arch, Path(tmp))
            est = ladder.get(step).registers_estimate(params)
            rows.append({"step": step, "kernel": kernel, "params": params, **r})
            shape = ", ".join(f"{k}={v}" for k, v in params.items())
            print(f"{step:<10} {shape:<36} {ladder.get(step).threads(params):>5} threads  "
                  f"{r['registers']:>3} registers (estimate {est:>3})  spills "
                  f"{r['spill_store_bytes']}/{r['spill_load_bytes']} B  smem {r['shared_bytes']:,}")
    data = {"format": "tilinglib-ptxas", "arch": args.arch,
            "nvcc": next((ln.strip() for ln in version.splitlines() if "release" in ln),
                         version.strip()),
            "date": datetime.date.today().isoformat(),
            "command": "python bench/ptxas_registers.py (nvcc --cubin -Xptxas -v, the source "
                       "inside extern \"C\" as PyCUDA compiles it)", "shapes": rows}
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
