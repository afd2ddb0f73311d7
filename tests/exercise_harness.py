"""Runs a lesson's exercise cells outside Jupyter, for the tests of each lesson's exercises.

A lesson's exercise cell (cell tag ``exercise``) is self-contained: it needs only
``import numpy as np`` and ``import tilinglib as tl`` (the lesson's first cell) and ends with
an expression, ``tl.exercises.check(...)``, whose value is a `Feedback`. (In Jupyter, `check`
displays that Feedback itself, once; here, outside IPython, it only returns it.) The markdown cell
after it (cell tag ``answer``) holds the reference answer as a fenced ```python block inside
``<details>``: the whole cell, as the student would write it.

    cells = exercise_cells("03_tiled_kernel")      # {exercise id: ExerciseCell}
    fb = run_cell(cells["03.1"].starter)           # Feedback, status "todo"
    fb = run_cell(cells["03.1"].reference)         # status "correct"
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
_CHECK_ID = re.compile(r"""tl\.exercises\.check\(\s*["']([^"']+)["']""")
_FENCE = re.compile(r"```python\n(.*?)```", re.S)


@dataclass(frozen=True)
class ExerciseCell:
    id: str
    starter: str        # the exercise cell's code, as committed
    reference: str      # the reference answer's code, from the answer cell


def exercise_cells(lesson: str) -> dict[str, ExerciseCell]:
    """The exercise cells of notebooks/<lesson>.ipynb, by exercise id."""
    nb = nbformat.read(NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
    found: dict[str, ExerciseCell] = {}
    cells = nb.cells
    for i, cell in enumerate(cells):
        if "exercise" not in cell.metadata.get("tags", []):
            continue
        assert cell.cell_type == "code", f"{lesson} cell {i}: an exercise cell must be code"
        ids = _CHECK_ID.findall(cell.source)
        assert len(ids) == 1, f"{lesson} cell {i}: one tl.exercises.check(...) per cell"
        nxt = cells[i + 1] if i + 1 < len(cells) else None
        assert nxt is not None and "answer" in nxt.metadata.get("tags", []), (
            f"{lesson} cell {i}: the cell after an exercise must be its answer (tag 'answer')")
        assert "<details>" in nxt.source, f"{lesson} cell {i + 1}: answer not in <details>"
        code = _FENCE.findall(nxt.source)
        assert len(code) == 1, f"{lesson} cell {i + 1}: one ```python block in the answer"
        assert ids[0] not in found, f"{lesson}: exercise {ids[0]} appears twice"
        found[ids[0]] = ExerciseCell(ids[0], cell.source, code[0])
    return found


def run_cell(code: str, namespace: dict | None = None):
    """Execute `code` as Jupyter would and return the value of its last expression."""
    import numpy as np

    import tilinglib as tl

    ns = {"np": np, "tl": tl} if namespace is None else namespace
    tree = ast.parse(code)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<exercise cell>", "exec"), ns)
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), "<exercise cell>", "eval"), ns)
