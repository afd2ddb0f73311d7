"""No answer is in sight before the student has tried: not in a cell above the exercise (its
source or its output), not in the prose, not in a course kernel file the lesson points to.

For every exercise cell of a lesson (tag ``exercise``), its reference answer is read from
the answer cell after it (tag ``answer``): the strings of CUDA C it assigns, and for a line
``x = y;`` or ``x += y;`` the expression ``y`` on its own. None of them may appear (spaces
ignored) in any cell before the exercise, nor in the exercise cell's own source. An exercise
whose answer is a line of a course kernel (`tilinglib.exercises.blanks`) must not have that
kernel loaded (`kernels.load("...")`) or its file named before it: the lesson shows the
kernel through `tl.exercises.kernel_with_blanks` until the student has answered.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import tilinglib.exercises as ex

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
ex.exercise_ids()          # every lesson's checks, and with them their kernel blanks, loaded
CHECK = re.compile(r"""tl\.exercises\.check\(\s*["'](\d\d\.\d)["']""")


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _cell_text(cell, outputs: bool = True) -> str:
    text = "".join(cell["source"])
    if outputs:
        for out in cell.get("outputs", []):
            text += "".join(out.get("text", ""))
            for value in out.get("data", {}).values():
                text += "".join(value) if isinstance(value, list) else str(value)
    return text


def _answer_pieces(answer_md: str) -> list[str]:
    """The strings of code the reference answer assigns (`x = "..."`, or in a tuple
    assigned), and the right-hand sides of the CUDA C lines among them. Not the keys of a
    dict: those are the question's (05.2's expressions to predict)."""
    pieces = []
    for block in re.findall(r"```python\n(.*?)```", answer_md, flags=re.S):
        for node in ast.walk(ast.parse(block)):
            if not isinstance(node, ast.Assign):
                continue
            values = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) \
                else [node.value]
            for v in values:
                if not (isinstance(v, ast.Constant) and isinstance(v.value, str)):
                    continue
                s = v.value.strip()
                if len(s) < 6 or not re.search(r"[\[\]()*+%]|threadIdx", s):
                    continue
                pieces.append(s)
                m = re.match(r"^[^=]*?(?:\+=|=)\s*(.+?);?$", s)
                if m and len(m.group(1)) >= 6:
                    pieces.append(m.group(1).strip().rstrip(";"))
    return pieces


def _exercises(path: Path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for i, cell in enumerate(cells):
        if "exercise" not in cell.get("metadata", {}).get("tags", []):
            continue
        ids = CHECK.findall("".join(cell["source"]))
        answer = next((c for c in cells[i + 1:] if "answer" in c.get("metadata", {})
                       .get("tags", [])), None)
        for exercise_id in ids:
            yield exercise_id, i, cells, "".join(answer["source"]) if answer else ""


CASES = [(p.name, eid, i) for p in LESSONS for eid, i, _, _ in _exercises(p)]


def _leaks(path: Path, exercise_id: str) -> list[str]:
    problems = []
    for eid, i, cells, answer in _exercises(path):
        if eid != exercise_id:
            continue
        # What the student wrote in an earlier exercise is theirs already (07.2's A load is
        # the A operand of 07.1's line): not a leak.
        earlier = _flat("".join("".join(c["source"]) for c in cells[:i]
                                if "answer" in c.get("metadata", {}).get("tags", [])))
        pieces = [p for p in _answer_pieces(answer) if _flat(p) not in earlier]
        for j, cell in enumerate(cells[:i + 1]):
            text = _flat(_cell_text(cell, outputs=j < i))
            for piece in pieces:
                if _flat(piece) in text:
                    problems.append(f"{path.name} cell {j} shows {piece!r}, the answer of "
                                    f"{exercise_id} (cell {i})")
        blank = ex._BLANKS.get(exercise_id)
        if blank:
            kernel = blank[0]
            for j, cell in enumerate(cells[:i]):
                source = "".join(cell["source"])
                if f'kernels.load("{kernel}")' in source or f"{kernel}.cu" in source:
                    problems.append(f"{path.name} cell {j} opens or names {kernel}.cu, which "
                                    f"holds the answer of {exercise_id} (cell {i}): show "
                                    f"tl.exercises.kernel_with_blanks({exercise_id!r}) instead")
    return problems


@pytest.mark.parametrize("lesson, exercise_id, cell", CASES)
def test_the_answer_is_nowhere_before_the_exercise(lesson, exercise_id, cell):
    problems = _leaks(ROOT / "notebooks" / lesson, exercise_id)
    assert not problems, "\n".join(problems)


def test_the_kernel_exercises_are_all_found_and_their_answers_read():
    """The test looks at what it should: the exercises whose answers are kernel lines are
    in the lessons, and their answers are read from the answer cells."""
    ex.exercise_ids()
    found = {eid: (p, i) for p, eid, i in CASES}
    for eid in ("03.1", "03.2", "05.7", "07.1", "07.2", "08.1"):
        assert eid in found, eid
        lesson = ROOT / "notebooks" / found[eid][0]
        answer = next(a for e, _, _, a in _exercises(lesson) if e == eid)
        assert _answer_pieces(answer), eid
    assert {"03.1", "03.2", "07.1", "07.2", "08.1"} <= set(ex._BLANKS)


def test_kernel_with_blanks_hides_exactly_the_answer_lines():
    from tilinglib import kernels

    for eid, (kernel, pieces) in ex._BLANKS.items():
        shown = ex.kernel_with_blanks(eid)
        full = kernels.load(kernel)
        assert shown.count("\n") == full.count("\n")       # same line numbers
        for text, blank in pieces:
            assert text in full and text not in shown and blank in shown


def test_the_leaks_the_student_trial_found_would_be_caught(tmp_path):
    """The checker on the lessons as they were before the fix (the answer in the source of
    the cell above 03.1, 03.2, 07.1, 07.2; 05.7 in the prose; the kernel file named before
    08.1): every one is reported."""
    lesson03 = json.loads((ROOT / "notebooks" / "03_tiled_kernel.ipynb").read_text())
    i = next(k for k, c in enumerate(lesson03["cells"]) if "kernel_with_blanks" in
             "".join(c["source"]))
    lesson03["cells"][i]["source"] = [
        'source = tl.kernels.load("sgemm_tiled")\n',
        'print(source.replace("A[row * N + (t * TILE + tx)]", "A[ ? ]")\n',
        '            .replace("sum += As[ty][k] * Bs[k][tx];", "sum += ?;"))']
    path = tmp_path / "03_tiled_kernel.ipynb"
    path.write_text(json.dumps(lesson03))
    assert any("A[row * N + (t * TILE + tx)]" in p for p in _leaks(path, "03.1"))
    assert any("sum += As[ty][k] * Bs[k][tx];" in p for p in _leaks(path, "03.2"))
    lesson05 = json.loads((ROOT / "notebooks" / "05_bank_conflicts_and_padding.ipynb")
                          .read_text())
    lesson05["cells"][2]["source"].append(
        "read with `T[threadIdx.x][(threadIdx.y + threadIdx.x) % 32]`")
    path = tmp_path / "05_bank_conflicts_and_padding.ipynb"
    path.write_text(json.dumps(lesson05))
    assert _leaks(path, "05.7")
    lesson08 = json.loads((ROOT / "notebooks" / "08_to_cublas.ipynb").read_text())
    lesson08["cells"][3]["source"].append("Here is that helper of `sgemm_vec4.cu`:")
    path = tmp_path / "08_to_cublas.ipynb"
    path.write_text(json.dumps(lesson08))
    assert any("sgemm_vec4.cu" in p for p in _leaks(path, "08.1"))
