"""What a student reads fits and reads as meant: lesson 08's tables do not wrap in
JupyterLab at 1,400 px with the file browser open, the assignments' markdown shows no
escape characters, and the menu named is JupyterLab 4's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Characters of monospace output that fit without wrapping: at 1,400 px with the file browser
#: open, JupyterLab's output area is about 1,000 px wide, at 7.8 px per character of its 13 px
#: code font about 128; 100 leaves room for a narrower window.
MAX_TABLE_WIDTH = 100


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_lesson_08s_checked_tables_fit_without_wrapping():
    too_wide = []
    for i, cell in enumerate(_cells(ROOT / "notebooks" / "08_to_cublas.ipynb")):
        if cell["cell_type"] != "code" or "# NBVAL_CHECK_OUTPUT" not in "".join(cell["source"]):
            continue
        for out in cell.get("outputs", []):
            for line in "".join(out.get("text", "")).splitlines():
                if len(line) > MAX_TABLE_WIDTH:
                    too_wide.append(f"cell {i}: {len(line)} characters: {line[:70]}...")
    assert not too_wide, "\n".join(too_wide)


def test_the_ladder_tables_abbreviations_are_explained_above_them():
    cells = _cells(ROOT / "notebooks" / "08_to_cublas.ipynb")
    for i, cell in enumerate(cells):
        src = "".join(cell["source"])
        if cell["cell_type"] == "code" and "'form.'" in src:
            above = "".join(cells[i - 1]["source"])
            assert all(w in above for w in ("**form.**", "**emu**", "**ncu**")), above
        if cell["cell_type"] == "code" and "'regs'" in src:
            above = "".join(cells[i - 1]["source"])
            words = (("**regs**",) + (("**step**",) if "'step'" in src else ())
                     + (("**cuBLAS**",) if "'cuBLAS'" in src else ()))
            assert all(w in above for w in words), above


ASSIGNMENTS = sorted((ROOT / "notebooks" / "assignments").glob("*/*.ipynb"))


@pytest.mark.parametrize("path", ASSIGNMENTS, ids=lambda p: p.stem)
def test_assignment_markdown_shows_no_escapes_and_names_jupyterlab_4s_menu(path):
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] != "markdown":
            continue
        text = " ".join("".join(cell["source"]).split())
        assert '\\"' not in text, f"cell {i} shows a backslash before a quote: {text[:80]}"
        assert "Restart & Run All" not in text, f"cell {i}: not JupyterLab 4's wording"
        if "run all cells" in text.lower():
            assert "Restart Kernel and Run All Cells" in text, f"cell {i}"
