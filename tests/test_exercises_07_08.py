"""The exercises of lesson 07: every starter is "todo", every reference answer "correct",
and the usual wrong answers are "wrong" with a message that says why, in the course's terms.
(Lesson 08's are in tests/test_exercises_08.py.)
"""

from __future__ import annotations

import pytest

from exercise_harness import exercise_cells, run_cell

import tilinglib as tl

LESSON = "07_register_tiling"

_SHAPES = "shapes = [(32, 32, 8, 4, 4), (64, 32, 4, 8, 2), (32, 64, 8, 2, 8), (64, 64, 16, 8, 4)]\n"
_CHECK_073 = ("tl.exercises.check('07.3', {(kind, s): f(*s) for s in shapes for kind, f in "
              "(('global', global_bytes), ('shared', shared_bytes))})")


def _formulas(global_expr: str, shared_expr: str) -> str:
    return (f"def global_bytes(BM, BN, BK, TM, TN):\n    return {global_expr}\n"
            f"def shared_bytes(BM, BN, BK, TM, TN):\n    return {shared_expr}\n"
            + _SHAPES + _CHECK_073)


_RIGHT_G, _RIGHT_S = "4 * (BM + BN) / (BM * BN)", "4 * (TM + TN) / (TM * TN)"

# Wrong answers: {exercise id: [(cell code, phrase the message must contain), ...]}
WRONG = {
    "07.1": [
        ("tl.exercises.check('07.1', 'acc[m] += As[row0 + m][k] * Bs[k][col];')",
         "your line reads shared memory that is already in a register"),
        ("tl.exercises.check('07.1', 'acc[m] += As[m][k] * b;')",
         "C does not match NumPy at BM = 32, BN = 32, BK = 8, TM = 4"),
        ("tl.exercises.check('07.1', 'acc[m] += As[row0 + m][k] * Bs[k][m];')",
         "Row row0 + m of the A tile"),
        ("tl.exercises.check('07.1', 'sum += As[row0 + m][k] * b;')", "keep the form acc[m] +="),
        ("tl.exercises.check('07.1', 'acc[m] += As[row0 + m][k] * b')",   # no ';'
         "your kernel does not compile"),
    ],
    "07.2": [
        ("tl.exercises.check('07.2', ('a[m] = As[row0 + m][k0 + k];', 'b[n] = Bs[k][col0 + n];'))",
         "just past the end of the __shared__ array 'As'"),
        ("tl.exercises.check('07.2', ('a[m] = As[row0 + m][k];', 'b[n] = Bs[n][col0 + k];'))",
         "C does not match NumPy"),
        ("tl.exercises.check('07.2', ('a[m] = As[row0 + m][k];', 'b[n] = Bs[k][col0 * TN + n];'))",
         "MemoryAccessError"),
        ("tl.exercises.check('07.2', ('b[n] = Bs[k][col0 + n];', 'a[m] = As[row0 + m][k];'))",
         "keep the left-hand sides"),
    ],
    "07.3": [
        (_formulas("4 * (BM + BN) / (BM * BN * BK)", _RIGHT_S), "BK cancels"),
        (_formulas("8 / BM", _RIGHT_S), "right only when BM = BN"),
        (_formulas("(BM + BN) / (BM * BN)", _RIGHT_S), "floats, not bytes"),
        (_formulas(_RIGHT_G, "8 / (TM * TN)"), "it loads TM values of A and TN of B"),
        (_formulas(_RIGHT_G, "8.0"), "the tiled kernel's two loads per FMA"),
        (_formulas(_RIGHT_G, "4 * (TM + TN) / (TM * TN * BK)"), "the emulator counts 2 shared"),
        # operator precedence: "/ TM * TN" multiplies by TN (a student's first try, 2026-12-01)
        (_formulas(_RIGHT_G, "4 * (TM + TN) / TM * TN"),
         "Check the parentheses: 4 * (TM + TN) / TM * TN divides by TM"),
        (_formulas("4 * (BM + BN) / BM * BN", _RIGHT_S),
         "Check the parentheses: 4 * (BM + BN) / BM * BN divides by BM"),
        ("tl.exercises.check('07.3', (lambda *a: 1, lambda *a: 1))", "the dict the cell builds"),
    ],
    "07.4": [
        ("tl.exercises.check('07.4', (16, 16))", "about 318 registers per thread"),
        ("tl.exercises.check('07.4', (16, 8))", "over the budget of 128"),
        ("tl.exercises.check('07.4', (16, 4))", "TM + TN is smallest when TM = TN"),
        ("tl.exercises.check('07.4', (4, 4))", "a larger TM x TN) still fit the budget"),
        ("tl.exercises.check('07.4', (3, 8))", "TM=3 does not divide BM=128"),
    ],
    "07.5": [
        ("tl.exercises.check('07.5', (8, 100.0))", "registers bind first"),
        ("tl.exercises.check('07.5', (2, 0.25))", "is a fraction; give a percentage"),
        ("tl.exercises.check('07.5', (4, 50.0))", "tl.occupancy gives 2"),
        ("tl.exercises.check('07.5', (2, 50.0))", "16 of the SM's 64 warps"),
    ],
}

# Right answers in the other forms the one rule accepts: a list for a tuple, a whole-valued
# float for a whole number; a formula written differently.
RIGHT = {
    "07.1": "tl.exercises.check('07.1', '  acc[m] += b * As[row0 + m][k];  ')",
    "07.4": "tl.exercises.check('07.4', [8.0, 8])",
    "07.5": "tl.exercises.check('07.5', [2.0, 25])",
    "07.3": _formulas("4 / BM + 4 / BN", "4 / TN + 4 / TM"),
}


@pytest.fixture(scope="module")
def cells():
    return exercise_cells(LESSON)


def _ids():
    return [i for i in tl.exercises.exercise_ids() if i.startswith("07.")]


def test_every_registered_exercise_is_in_the_notebook(cells):
    assert len(_ids()) >= 4
    assert sorted(cells) == _ids()


def test_every_exercise_has_wrong_answers_here(cells):
    for exercise_id in cells:
        assert len(WRONG.get(exercise_id, ())) >= 2, f"{exercise_id} needs two wrong answers"


def test_starters_are_todo_and_references_correct(cells):
    for exercise_id, cell in cells.items():
        assert "..." in cell.starter, exercise_id
        todo = run_cell(cell.starter)
        assert (todo.exercise, todo.status) == (exercise_id, "todo"), (exercise_id, todo)
        assert "not done yet" in str(todo)
        right = run_cell(cell.reference)
        assert (right.exercise, right.status) == (exercise_id, "correct"), (exercise_id, right)


def test_reference_messages_carry_the_counted_figures(cells):
    assert "5 shared bytes per FMA at TM = 4" in run_cell(cells["07.1"].reference).message
    assert "2.5 shared bytes per FMA" in run_cell(cells["07.2"].reference).message
    assert "25% occupancy" in run_cell(cells["07.5"].reference).message


@pytest.mark.parametrize("exercise_id", sorted(RIGHT))
def test_right_answer_in_another_form_is_accepted(exercise_id):
    fb = run_cell(RIGHT[exercise_id])
    assert (fb.exercise, fb.status) == (exercise_id, "correct"), fb


@pytest.mark.parametrize("exercise_id, code, phrase",
                         [(i, c, p) for i, cases in sorted(WRONG.items()) for c, p in cases],
                         ids=[f"{i}-wrong{k}" for i, cases in sorted(WRONG.items())
                              for k in range(len(cases))])
def test_wrong_answers_are_explained(exercise_id, code, phrase):
    fb = run_cell(code)
    assert (fb.exercise, fb.status) == (exercise_id, "wrong"), fb
    assert phrase in fb.message, fb.message
    assert len(fb.message.splitlines()) <= 12
