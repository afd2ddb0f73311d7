"""Lesson 08, section 8's cells that read the H200's sizes data (bench/ladder_sizes.py), run
here on a stand-in data file: until the H200 run exists the committed outputs show the wave
model's path only, so the data path is exercised here. The figures in the stand-in are made
up; what is checked is that each cell reads the file as the bench writes it and shows what
it should (the choice per size from the data, the techniques at N = 4096, the table per
size and step)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import nbformat
import numpy as np
import pytest

import tilinglib as tl
from tilinglib import ladder, reference, tile_choice

ROOT = Path(__file__).resolve().parent.parent
MARKERS = ("sizes_data = tile_choice.load_sizes()", '("tuned, its defaults", {})',
           "for step in (\"vec4\", \"warptile\", \"warptile_db\", \"tuned\"):")


def _stand_in(tmp_path) -> Path:
    rows, cublas = [], []
    for M, N, K in tile_choice.SIZES:
        cublas.append(dict(M=M, N=N, K=K, gflops=50000.0, median_ms=1.0, when="before"))
        for i, (step, p) in enumerate(tile_choice.sweep_configurations()):
            rows.append(dict(step=step, kernel=ladder.get(step).kernel, params=p, M=M, N=N, K=K,
                             registers=200, spill_stores=0, spill_loads=0, correct=True,
                             gflops=float(30000 + 10 * i + (5000 if p.get("SPLITK", 1) > 1
                                                            and N == 1024 else 0))))
    path = tmp_path / tile_choice.DATA_FILE
    path.write_text(json.dumps({
        "format": "tilinglib-ladder-sizes", "format_version": 1,
        "device": {"name": "NVIDIA H200", "sms": 132, "compute_capability": "9.0"},
        "software": {}, "settings": {}, "date": "2030-01-01",
        "command": "python3 bench/ladder_sizes.py", "sizes": [list(s) for s in tile_choice.SIZES],
        "cublas": cublas, "rows": rows}))
    return path


def test_the_data_cells_read_the_benchs_file(tmp_path, monkeypatch):
    data = tile_choice.load_sizes(_stand_in(tmp_path))
    monkeypatch.setattr(tile_choice, "load_sizes", lambda path=None: data)
    nb = nbformat.read(ROOT / "notebooks" / "08_to_cublas.ipynb", as_version=4)
    cells = {m: next(c.source for c in nb.cells if c.cell_type == "code" and m in c.source)
             for m in MARKERS}
    env = {"np": np, "tl": tl, "ladder": ladder, "ref": reference.load("h200"),
           "tile_choice": tile_choice}
    out = {}
    for m, src in cells.items():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(src, "<lesson 08>", "exec"), env)
        out[m] = buf.getvalue()
    choice = out[MARKERS[0]]
    assert choice.startswith("measured on an NVIDIA H200 (132 SMs), 2030-01-01")
    # at N = 1024 the stand-in makes a split-K configuration fastest; elsewhere the last listed
    lines = choice.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("1024 x 1024 x 1024"))
    assert " H200 " in lines[at] and "split-K" in lines[at + 1]
    assert all(len(line) <= 100 for line in lines)
    techniques = out[MARKERS[1]]
    assert "tuned, its defaults" in techniques and "warptile_db (none of them)" in techniques
    assert "% of cuBLAS, 200 registers" in techniques
    table = out[MARKERS[2]]
    assert all(len(line) <= 100 for line in table.splitlines())
    assert table.count("cuBLAS 50,000 GFLOP/s") == len(tile_choice.SIZES)
    assert "  tuned" in table and "  vec4" in table


def test_without_data_the_cells_say_not_measured_yet(monkeypatch):
    monkeypatch.setattr(tile_choice, "load_sizes", lambda path=None: None)
    nb = nbformat.read(ROOT / "notebooks" / "08_to_cublas.ipynb", as_version=4)
    env = {"np": np, "tl": tl, "ladder": ladder, "ref": reference.load("h200"),
           "tile_choice": tile_choice}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        for m in MARKERS:
            src = next(c.source for c in nb.cells if c.cell_type == "code" and m in c.source)
            exec(compile(src, "<lesson 08>", "exec"), env)
    text = buf.getvalue()
    assert "the wave model chooses" in text
    assert text.count("Not measured yet: python3 bench/ladder_sizes.py") == 2
