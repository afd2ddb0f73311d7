"""Exercises of lessons 01-03: each starter says "not done yet", each reference answer is
accepted, and plausible wrong answers are rejected with a message in the course's terms.

The cells are read from the committed notebooks (tests/exercise_harness.py) and run as a
student would run them; the wrong answers below are whole replacement cells.
"""

from __future__ import annotations

import pytest

import tilinglib as tl
from exercise_harness import exercise_cells, run_cell

LESSONS = {"01": "01_reuse_argument", "02": "02_naive_kernel", "03": "03_tiled_kernel"}

A_LOAD = "As[ty][tx] = A[row * N + (t * TILE + tx)];"
B_LOAD = "Bs[ty][tx] = B[(t * TILE + ty) * N + col];"

# exercise id -> [(replacement cell, phrase the message must contain)]
WRONG = {
    "01.1": [
        ('tl.exercises.check("01.1", (lambda N: N, lambda N: 8 * N))',
         "counts the multiplies only"),
        ('tl.exercises.check("01.1", (lambda N: 2 * N, lambda N: 2 * N))',
         "each float is 4 bytes"),
        ('tl.exercises.check("01.1", (lambda N: 2 * N, lambda N: 4 * N))',
         "also reads a column of B"),
        ('tl.exercises.check("01.1", (lambda N: 2 * N, lambda N: 8 * N + 4))',
         "4-byte store of C"),
        ('tl.exercises.check("01.1", (64, 256))', "must be a function of N"),
        ('tl.exercises.check("01.1", (lambda N: 64, lambda N: 256))', "at N = 1000"),
    ],
    "01.2": [
        ('tl.exercises.check("01.2", (lambda N, TILE: 8 * N / TILE**2, lambda TILE: TILE / 4))',
         "divides by TILE twice"),
        ('tl.exercises.check("01.2", (lambda N, TILE: 8 * N, lambda TILE: TILE / 4))',
         "naive kernel's count"),
        ('tl.exercises.check("01.2", (lambda N, TILE: 8 * N / TILE, lambda TILE: TILE / 8))',
         "An FMA is 2 FLOPs"),
        ('tl.exercises.check("01.2", (lambda N, TILE: 8 * N / TILE, lambda TILE: 0.25))',
         "naive kernel's"),
    ],
    "01.3": [
        ('tl.exercises.check("01.3", (0.25, 32))', "an FP64 element is 8 bytes"),
        ('tl.exercises.check("01.3", (0.125, 32))', "gives 4 FLOP/B in FP64"),
    ],
    "01.4": [
        ('tl.exercises.check("01.4", 83)', "13.83 FLOP/B, not above the ridge 13.96"),
        ('tl.exercises.check("01.4", 14)', "the ideal intensity is N / 6"),
        ('tl.exercises.check("01.4", 90)', "find the smallest"),
    ],
    "02.1": [
        ('tl.exercises.check("02.1", ("k * N + row", "k * N + col"))',
         "your A index walks down a column of A"),
        ('tl.exercises.check("02.1", ("row * N + k", "col * N + k"))',
         "your B index walks along a row of B"),
        ('tl.exercises.check("02.1", ("k * N + col", "row * N + k"))', "swapped"),
        # A fault: the message is the emulator's, with the CUDA line quoted.
        ('tl.exercises.check("02.1", ("row * N + k + 1", "k * N + col"))',
         "12 |             sum += A[row * N + k + 1] * B[k * N + col];"),
        ('tl.exercises.check("02.1", ("row * N + k)", "k * N + col"))', "does not compile"),
        ('tl.exercises.check("02.1", ("A[row * N + k]", "B[k * N + col]"))',
         "give only what goes inside the brackets"),
        # N written as a number: right at N = 20, the first size the check runs, only.
        ('tl.exercises.check("02.1", ("row * N + k", "k * 20 + col"))',
         "your index works for N = 20 only (at N = 24 C is wrong): write it with N, not "
         "numbers"),
        ('tl.exercises.check("02.1", ("row * 24 + k", "k * N + col"))',
         "your index works for N = 24 only"),
        ('tl.exercises.check("02.1", ["row * N + k"])', "give two index expressions"),
    ],
    "02.2": [
        ('tl.exercises.check("02.2", (100 // 32, 100 // 8), N=100, block=(32, 8, 1))',
         "784 elements were never written"),
        ('tl.exercises.check("02.2", (13, 4), N=100, block=(32, 8, 1))', "x and y are swapped"),
        ('tl.exercises.check("02.2", (100, 100), N=100, block=(32, 8, 1))',
         "round N / block up, not further"),
        ('tl.exercises.check("02.2", (100 / 32, 100 / 8), N=100, block=(32, 8, 1))',
         "holds fractions"),
        # np.ceil's floats hold the right values: the advice is to make them ints, not //.
        ('tl.exercises.check("02.2", (np.ceil(100 / 32), np.ceil(100 / 8)), N=100, '
         'block=(32, 8, 1))',
         "the grid (4.0, 13.0) holds floats, with the right values; a launch takes ints: "
         "convert to int (int(np.ceil(...))) or use (N + b - 1) // b"),
    ],
    "02.3": [
        ('tl.exercises.check("02.3", 4096**3 / 22.782e-3 / 1e9, N=4096, median_ms=22.782)',
         "count 2 FLOPs per multiply-add"),
        ('tl.exercises.check("02.3", 2 * 4096**3 / 22.782 / 1e9, N=4096, median_ms=22.782)',
         "1,000 times too small"),
        # TFLOP/s: the same number as a time left in ms; the message names both.
        ('tl.exercises.check("02.3", 2 * 4096**3 / 22.782e-3 * 1e-12, N=4096, median_ms=22.782)',
         "1,000 times too small: that is TFLOP/s (× 1e-12)"),
        ('tl.exercises.check("02.3", 2 * 4096**3 / 22.782e-3 * 1e-12, N=4096, median_ms=22.782)',
         "GFLOP/s is FLOPs / (median_ms × 1e-3 s) × 1e-9"),
        # FLOP/s: no × 1e-9.
        ('tl.exercises.check("02.3", 2 * 4096**3 / 22.782e-3, N=4096, median_ms=22.782)',
         "1e9 times too big: that is FLOP/s"),
        ('tl.exercises.check("02.3", 2 * 4096**3 / 22.782e-3 / 1e9 * 1.1, N=4096, '
         'median_ms=22.782)', "not it"),
        ('tl.exercises.check("02.3", "6033")', "gflops (GFLOP/s) should be a number, not str"),
    ],
    "02.4": [
        ('tl.exercises.check("02.4", (16384, 40960))', "that is the 32 × 32 count"),
        ('tl.exercises.check("02.4", (16384, 49152))', "both half warps read the same 16"),
        ('tl.exercises.check("02.4", (8192, 32768))', "requests: not 8,192"),
        ('tl.exercises.check("02.4", (32768, 16384))',
         "the two numbers are swapped: 16,384 is the requests and 32,768 the sectors"),
        ('tl.exercises.check("02.4", (16384, 32768.5))', "32768.5 has a fraction"),
    ],
    "02.5": [
        ('tl.exercises.check("02.5", 28)', "overhang of one row"),
        ('tl.exercises.check("02.5", 0)', "count the threads launched"),
        ('tl.exercises.check("02.5", 6384.5)', "idle_threads is a whole number, and 6384.5 "
                                                "has a fraction"),
        ('tl.exercises.check("02.5", "6384")', "should be a number, not str"),
    ],
    "03.1": [
        (f'tl.exercises.check("03.1", ("As[ty][tx] = A[row * N + (t * TILE + ty)];", "{B_LOAD}"))',
         "at step t = 0, As[0][1] of block (0, 0, 0) holds A[0][0]; it should hold "
         "A[row][t·TILE + tx]"),
        (f'tl.exercises.check("03.1", ("{A_LOAD}", "Bs[ty][tx] = B[(t * TILE + tx) * N + col];"))',
         "Bs[0][1] of block (0, 0, 0) holds B[1][1]"),
        (f'tl.exercises.check("03.1", ("As[ty][tx] = A[row * N + tx];", "{B_LOAD}"))',
         "at step t = 1, As[0][0] of block (0, 0, 0) holds A[0][0]"),
        (f'tl.exercises.check("03.1", ("As[ty][tx] = A[row * N + (t * TILE + tx) + 1];", "{B_LOAD}"))',
         "27 |         As[ty][tx] = A[row * N + (t * TILE + tx) + 1];"),
        (f'tl.exercises.check("03.1", ("As[ty][tx] = A[row * N + (t * TILE + tx)]", "{B_LOAD}"))',
         "is a ';' missing at the end of line 27?"),
        (f'tl.exercises.check("03.1", ("A[row * N + (t * TILE + tx)]", "{B_LOAD}"))',
         "keep the left-hand sides"),
        # N and TILE written as numbers: right at N = 16, TILE = 4 only.
        (f'tl.exercises.check("03.1", ("As[ty][tx] = A[row * 16 + (t * 4 + tx)];", "{B_LOAD}"))',
         "your index works for N = 16, TILE = 4 only (at N = 32, TILE = 8 C is wrong): "
         "write it with N and TILE, not numbers"),
        (f'tl.exercises.check("03.1", ("{A_LOAD}", "Bs[ty][tx] = B[(t * 8 + ty) * N + col];"))',
         "your index works for N = 32, TILE = 8 only"),
    ],
    "03.2": [
        ('tl.exercises.check("03.2", "sum += A[row * N + t * TILE + k] * B[(t * TILE + k) * N + col];")',
         "your kernel still requests 10 bytes per FMA (2 with the tiles, at TILE = 4)"),
        # Which of the two operands is wrong, in the student's own terms (the right line
        # itself is left to the answer cell).
        ('tl.exercises.check("03.2", "sum += As[k][ty] * Bs[tx][k];")',
         "Both operands read the wrong element: As[k][ty] of the A tile and Bs[tx][k] of "
         "the B tile"),
        ('tl.exercises.check("03.2", "sum += As[k][ty] * Bs[k][tx];")',
         "Your B operand, Bs[k][tx], is right; your A operand, As[k][ty], reads the wrong "
         "element of the A tile"),
        ('tl.exercises.check("03.2", "sum += As[ty][k] * Bs[tx][k];")',
         "Your A operand, As[ty][k], is right; your B operand, Bs[tx][k], reads the wrong "
         "element of the B tile"),
        ('tl.exercises.check("03.2", "sum += Bs[tx][k] * As[ty][k];")',
         "Your A operand, As[ty][k], is right; your B operand, Bs[tx][k]"),
        ('tl.exercises.check("03.2", "sum += As[k][ty] * Bs[k][tx];")',
         "for each k it needs the k-th element of row ty of the A tile"),
        ('tl.exercises.check("03.2", "sum += As[ty][k] + Bs[k][tx];")',
         "Your line adds As[ty][k] + Bs[k][tx]: it should add one product"),
        # A loop that never ends: stopped at the check's limits, with the loop's line.
        ('tl.exercises.check("03.2", "sum += As[ty][k] * Bs[k][tx]; k--;")',
         "a loop that never ends? (look at the loop at kernel.cu:32: "
         "for (int k = 0; k < TILE; ++k) {)"),
        ('tl.exercises.check("03.2", "sum += As[ty][k] * Bs[k][tx]")',
         "is a ';' missing at the end of line 33?"),
        ('tl.exercises.check("03.2", "sum = As[ty][k] * Bs[k][tx];")', "keep the form sum +="),
    ],
    "03.3": [
        ('tl.exercises.check("03.3", ((16, 16, 1), (64, 64)), N=64, TILE=16)',
         "the first block past N / TILE = 4 faults"),
        ('tl.exercises.check("03.3", ((16, 8, 1), (4, 4)), N=64, TILE=16)',
         "one thread per element of a 16 × 16 tile"),
        ('tl.exercises.check("03.3", ((64, 64, 1), (1, 1)), N=64, TILE=16)',
         "a block may hold 1,024"),
        ('tl.exercises.check("03.3", ((16, 16, 1), (2, 2)), N=64, TILE=16)',
         "so N / TILE = 4 blocks each way"),
        ('tl.exercises.check("03.3", ((16, 16, 1), (64 / 16, 64 / 16)), N=64, TILE=16)',
         "the grid (4.0, 4.0) holds floats, with the right values"),
        ('tl.exercises.check("03.3", [(16, 16, 1)])', "give (block, grid); got 1 items"),
    ],
    "03.4": [
        ('tl.exercises.check("03.4", (29,))', "Race (write-after-read) on As[0][0]"),
        ('tl.exercises.check("03.4", (29,))', "kernel.cu:27: As[ty][tx] = A[row * N + (t * TILE + tx)];"),
        ('tl.exercises.check("03.4", (35,))', "Race (read-after-write) on As[0][0]"),
        # the wrong answer the race gives under the adversarial schedule, and its order
        ('tl.exercises.check("03.4", (35,))',
         "With the warps in another order a GPU may produce (schedule='adversarial', seed=0, "
         "warp 0 held back until warp 1 reached a barrier in barrier interval 0), C["),
        ('tl.exercises.check("03.4", (29,))', "before warp 0 read it at kernel.cu:33."),
        ('tl.exercises.check("03.4", (29, 37))', "before the next loads"),
        ('tl.exercises.check("03.4", (29, 33))',
         "the barrier after line 33 is inside the k loop (lines 32–34), so it runs TILE = 8 "
         "times per step"),
        ('tl.exercises.check("03.4", (29, 32, 35))',
         "the barrier after line 32 is inside the k loop"),
        # One barrier too many, none in the k loop.
        ('tl.exercises.check("03.4", (25, 29, 35))',
         "one barrier more than needed. Keep the one between the loads and the multiply"),
        ('tl.exercises.check("03.4", (29, 35.5))', "a line number is a whole number"),
        ('tl.exercises.check("03.4", (29, 40))', "outside the kernel's work"),
    ],
    "03.5": [
        ('tl.exercises.check("03.5", 2 * 64**3 // (32 * 4))', "assumes full warps of 32"),
        ('tl.exercises.check("03.5", 16384)', "a block never shares one"),
        ('tl.exercises.check("03.5", 8192.5)', "requests is a whole number, and 8192.5 has"),
    ],
    "03.6": [
        ('tl.exercises.check("03.6", (64, 16))', "TILE is how many FMAs each loaded value"),
        ('tl.exercises.check("03.6", (1, 4))', "reads the whole row of A"),
        ('tl.exercises.check("03.6", (64, 1))', "Which blocks load"),
        ('tl.exercises.check("03.6", (4, 64))', "the two numbers are swapped: give (naive, tiled)"),
    ],
}

# Right answers in the other forms the one rule of tilinglib.exercises.common accepts: a list
# for a tuple, a whole-valued float (what / and np.ceil give) for a whole number.
RIGHT = {
    "01.3": 'tl.exercises.check("01.3", [0.125, 64.0])',
    "01.4": 'tl.exercises.check("01.4", 84.0)',
    "02.1": 'tl.exercises.check("02.1", ["row * N + k", "k * N + col"])',
    "02.4": 'tl.exercises.check("02.4", [2 * 64**3 / 32, 4 * 64**3 / 32])',
    "02.5": 'tl.exercises.check("02.5", 4 * 4 * 1024 - 100.0 * 100)',
    "03.1": f'tl.exercises.check("03.1", ["{A_LOAD}", "{B_LOAD}"])',
    "03.3": 'tl.exercises.check("03.3", [[16, 16, 1], [64 // 16, 64 // 16]], N=64, TILE=16)',
    "03.4": 'tl.exercises.check("03.4", [29, 35.0])',
    "03.5": 'tl.exercises.check("03.5", 2 * (64 / 4) ** 3)',
    "03.6": 'tl.exercises.check("03.6", [64.0, 64 / 16])',
}


def _all_cells():
    return {ex_id: cell for lesson in LESSONS.values()
            for ex_id, cell in exercise_cells(lesson).items()}


CELLS = _all_cells()


def test_every_registered_exercise_of_lessons_01_to_03_is_in_its_notebook():
    registered = [e for e in tl.exercises.exercise_ids() if e[:2] in LESSONS]
    assert len(registered) >= 2 * len(LESSONS)
    for lesson, name in LESSONS.items():
        ids = set(exercise_cells(name))
        mine = {e for e in registered if e.startswith(lesson + ".")}
        assert len(mine) >= 2, f"lesson {lesson} has fewer than two exercises"
        assert mine == ids, f"{name}: registered {sorted(mine)}, in the notebook {sorted(ids)}"
    assert set(WRONG) == set(registered), "every exercise needs wrong answers in this test"


def test_exercises_sit_inside_the_lesson_not_only_at_the_end():
    import nbformat

    from exercise_harness import NOTEBOOKS

    for name in LESSONS.values():
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        end = next(i for i, c in enumerate(nb.cells) if c.source.startswith("## Summary"))
        inside = [i for i, c in enumerate(nb.cells[:end])
                  if "exercise" in c.metadata.get("tags", [])]
        assert len(inside) >= 2, f"{name}: {len(inside)} exercises before the summary"


@pytest.mark.parametrize("ex_id", sorted(CELLS))
def test_starter_is_not_done_yet(ex_id):
    fb = run_cell(CELLS[ex_id].starter)
    assert (fb.exercise, fb.status) == (ex_id, "todo"), fb


@pytest.mark.parametrize("ex_id", sorted(CELLS))
def test_reference_answer_is_correct(ex_id):
    fb = run_cell(CELLS[ex_id].reference)
    assert (fb.exercise, fb.status) == (ex_id, "correct"), fb
    assert "..." not in CELLS[ex_id].reference


@pytest.mark.parametrize("ex_id,code,phrase",
                         [(e, c, p) for e, cases in sorted(WRONG.items()) for c, p in cases])
def test_wrong_answer_is_explained(ex_id, code, phrase):
    fb = run_cell(code)
    assert (fb.exercise, fb.status) == (ex_id, "wrong"), fb
    assert phrase in fb.message, fb.message
    assert len(fb.message.splitlines()) <= 12, fb.message     # one screen, no traceback
    assert "Traceback" not in fb.message


@pytest.mark.parametrize("ex_id", sorted(RIGHT))
def test_right_answer_in_another_form_is_accepted(ex_id):
    fb = run_cell(RIGHT[ex_id])
    assert (fb.exercise, fb.status) == (ex_id, "correct"), fb
    assert ".0 " not in fb.message, fb.message          # quoted back as whole numbers


def test_correct_messages_carry_the_emulators_counts():
    # The counts quoted back to the student are the emulator's, not restated formulas.
    from tilinglib.sgemm import count_naive, count_tiled

    r32, _ = count_naive(32, block=(16, 16, 1))
    fb = run_cell(CELLS["01.1"].reference)
    assert f"{r32.global_load_bytes_requested / 32**2:g} bytes per output" in fb.message
    r, _ = count_tiled(16, 4)
    fb = run_cell(CELLS["03.1"].reference)
    assert f"{r.global_load_bytes_requested / (r.flops / 2):g} bytes requested per FMA" in fb.message
    assert r.global_load_bytes_requested / (r.flops / 2) == 8 / 4


@pytest.fixture
def ipython():
    """An IPython shell for this test only (so `check` sees IPython, as in Jupyter)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("import tilinglib as tl", store_history=True)
    yield shell
    InteractiveShell.clear_instance()


@pytest.mark.parametrize("code,printed", [
    ('tl.exercises.check("02.5", 6384)', ""),                      # the lessons' convention
    ('tl.exercises.check("02.5", 6384);', ""),                     # ; after it
    ('tl.exercises.check("02.5", 6384)\nprint("done")', "done\n"),  # a statement after it
    ('fb = tl.exercises.check("02.5", 6384)', ""),
])
def test_check_displays_its_feedback_once_whatever_follows_it(ipython, code, printed):
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        ipython.run_cell(code, store_history=True)
    assert len(cap.outputs) == 1, cap.outputs                       # shown once, not twice
    data = cap.outputs[0].data
    assert data["text/plain"].startswith("✔ Exercise 02.5, correct: 16,384 threads launched")
    assert "✔ Exercise 02.5, correct" in data["text/html"]
    # The cell's value, when check is last, adds nothing (the shell's "Out[n]: " prompt aside).
    assert cap.stdout.replace(f"Out[{ipython.execution_count - 1}]: ", "") == printed


def test_a_feedback_shown_again_from_another_cell_appears(ipython):
    from IPython.utils.capture import capture_output

    ipython.run_cell('fb = tl.exercises.check("02.5", 28)', store_history=True)
    with capture_output() as cap:
        ipython.run_cell("fb", store_history=True)
    assert len(cap.outputs) == 1
    assert cap.outputs[0].data["text/plain"].startswith("✘ Exercise 02.5, not yet right")
