"""The exercises of lessons 04-06: every starter is "todo", every reference answer "correct",
and the usual wrong answers are "wrong" with a message that says why, in the course's terms.

The wrong answers are whole cells, as a student would type them; their key phrases are what
the check should say (the emulator's counters, the resource that binds, the line to change).
"""

from __future__ import annotations

import pytest

from exercise_harness import exercise_cells, run_cell

import tilinglib as tl

LESSONS = {"04": "04_choosing_tile_size", "05": "05_bank_conflicts_and_padding",
           "06": "06_what_tiling_does_not_fix"}


@pytest.fixture(scope="module", params=sorted(LESSONS))
def lesson_cells(request):
    return request.param, exercise_cells(LESSONS[request.param])


# Wrong answers: {exercise id: [(cell code, phrase the message must contain), ...]}
WRONG = {
    "04.1": [
        ("def shared_bytes(tile, pad):\n    return tile * (tile + pad) * 4\n"
         "tl.exercises.check('04.1', {(t, p): shared_bytes(t, p) for t in (4, 8, 16, 32) for p in (0, 1)})",
         "that is one array"),
        ("def shared_bytes(tile, pad):\n    return 2 * tile * (tile + pad)\n"
         "tl.exercises.check('04.1', {(t, p): shared_bytes(t, p) for t in (4, 8, 16, 32) for p in (0, 1)})",
         "A float is 4 bytes"),
        ("def shared_bytes(tile, pad):\n    return 2 * tile * tile * 4\n"
         "tl.exercises.check('04.1', {(t, p): shared_bytes(t, p) for t in (4, 8, 16, 32) for p in (0, 1)})",
         "PAD is missing"),
        ("def shared_bytes(tile, pad):\n    return 2 * (tile * tile + pad) * 4\n"
         "tl.exercises.check('04.1', {(t, p): shared_bytes(t, p) for t in (4, 8, 16, 32) for p in (0, 1)})",
         "every one of the TILE rows"),
    ],
    "04.2": [
        ("tl.exercises.check('04.2', (64, (64, 64, 1)))", "4,096 threads in a block"),
        ("tl.exercises.check('04.2', (16, (16, 16, 1)))", "not the largest"),
        ("tl.exercises.check('04.2', (32, (1024, 1, 1)))", "the launch with block=(1024, 1, 1) fails"),
        ("tl.exercises.check('04.2', (32, (1024, 1, 1)))", "For TILE = 32: block=(32, 32, 1)."),
        ("tl.exercises.check('04.2', (32, (..., ..., 1)))", "fill in the block too"),
        ("tl.exercises.check('04.2', (32, (16, 64, 1)))", "the block is (TILE, TILE, 1)"),
        # The one rule of tilinglib.exercises.common: a launch takes ints, even whole floats.
        ("tl.exercises.check('04.2', (32, (32.0, 32.0, 1)))",
         "the block (32.0, 32.0, 1.0) holds floats, with the right values"),
        ("tl.exercises.check('04.2', (32.5, (32, 32, 1)))", "largest_tile is a whole number"),
    ],
    "04.3": [
        ("lim = tl.launch.DeviceLimits()\n"
         "tl.exercises.check('04.3', (8, 8, lim.max_shared_per_sm // 2048, 32, 8))",
         "1,024 B the driver reserves"),
        ("tl.exercises.check('04.3', (8, 65536 // 32, 76, 32, 8))",
         "a block needs 256 threads x 32 registers"),
        ("tl.exercises.check('04.3', (8, 8, 76, 32, 32))", "smallest of the four caps"),
    ],
    "04.4": [
        ("lim89 = tl.launch.DeviceLimits(max_shared_per_sm=100 * 1024, max_threads_per_sm=1536, "
         "max_blocks_per_sm=24)\ntl.exercises.check('04.4', (lim89, (4,)))",
         "TILE=32: 1 block x 32 warps = 32/48"),
        ("lim89 = tl.launch.DeviceLimits(max_shared_per_sm=100 * 1024, max_threads_per_sm=2048, "
         "max_blocks_per_sm=24)\ntl.exercises.check('04.4', (lim89, (4, 32)))",
         "lim89.max_threads_per_sm is 2,048"),
    ],
    "04.5": [
        ("tl.exercises.check('04.5', (50.0, 0))", "72 x 32 = 2,304 per warp"),
        ("tl.exercises.check('04.5', (37.5, 50.0))", "73,728 registers"),
    ],
    "04.6": [
        ("tl.exercises.check('04.6', (2 * 32 * 32 * 4, 25))", "That is one buffer"),
        ("tl.exercises.check('04.6', (16384, 233472 // 16384))", "Add the 1,024 B reserved"),
    ],
    "04.7": [
        ("tl.exercises.check('04.7', ((16, 32, 64, 100, 132, 164, 196, 228), 64))",
         "16 KiB holds only 5 blocks of 3,072 B"),
        ("tl.exercises.check('04.7', ((32, 64, 100, 132, 164, 196, 228), 32))",
         "launch__shared_mem_config_size"),
        ("tl.exercises.check('04.7', ((32, 64), 64))", "100 KiB is missing"),
    ],
    "05.1": [
        ("def bank(row, col, row_words):\n    return row * row_words + col\n"
         "tl.exercises.check('05.1', {(r, c, n): bank(r, c, n) for r in (0, 1, 2, 31) "
         "for c in (0, 5, 31) for n in (16, 17, 32, 33)})",
         "There are 32 banks"),
        ("def bank(row, col, row_words):\n    return col % 32\n"
         "tl.exercises.check('05.1', {(r, c, n): bank(r, c, n) for r in (0, 1, 2, 31) "
         "for c in (0, 5, 31) for n in (16, 17, 32, 33)})",
         "The row matters"),
        ("def bank(row, col, row_words):\n    return 4 * (row * row_words + col) % 32\n"
         "tl.exercises.check('05.1', {(r, c, n): bank(r, c, n) for r in (0, 1, 2, 31) "
         "for c in (0, 5, 31) for n in (16, 17, 32, 33)})",
         "count words, not bytes"),
    ],
    "05.2": [
        ("tl.exercises.check('05.2', {'2 * threadIdx.x': 1, 'threadIdx.x / 2': 1, "
         "'16 * threadIdx.x': 16, '32 * (threadIdx.x % 8)': 8})",
         "the emulator counts 2 wavefronts for the warp: bank 0 holds 2 distinct words (0, 32)"),
        ("tl.exercises.check('05.2', {'2 * threadIdx.x': 2, 'threadIdx.x / 2': 2, "
         "'16 * threadIdx.x': 16, '32 * (threadIdx.x % 8)': 8})",
         "s[threadIdx.x / 2]: you predicted 2; the emulator counts 1 wavefront"),
        ("tl.exercises.check('05.2', {'2 * threadIdx.x': 2, 'threadIdx.x / 2': 1, "
         "'16 * threadIdx.x': 16, '32 * (threadIdx.x % 8)': 32})",
         "bank 0 holds 8 distinct words"),
    ],
    "05.3": [
        ("tl.exercises.check('05.3', '__shared__ float T[32][32];')",
         "still takes 32 wavefronts per request (4,096 for 128 warp loads)"),
        ("tl.exercises.check('05.3', '__shared__ float T[33][32];')",
         "still takes 32 wavefronts per request"),
        ("tl.exercises.check('05.3', '__shared__ float T[32][34];')",
         "still takes 2 wavefronts per request"),
        ("tl.exercises.check('05.3', '__shared__ float T[32][31];')",
         "MemoryAccessError"),
    ],
    "05.4": [
        ("tl.exercises.check('05.4', {0: (48, 16), 15: (63, 31), 16: (64, 0), 31: (79, 15)})",
         "ty does not appear in Bs[k][tx]"),
        ("tl.exercises.check('05.4', {0: (48, 0), 15: (63, 15), 16: (48, 0), 31: (63, 15)})",
         "is in bank 16, not 0"),
    ],
    "05.5": [
        ("predicted = 1\ntl.exercises.check('05.5', predicted)", "lanes i and i + 16 share a bank"),
        ("predicted = 32\ntl.exercises.check('05.5', predicted)",
         "the emulator counts 2 wavefronts per column read"),
    ],
    "05.6": [
        ("pad = 1\ntl.exercises.check('05.6', pad)", "2 wavefronts per store"),
        ("pad = 16\ntl.exercises.check('05.6', pad)", "rows of 32 words"),
        ("pad = 0.5\ntl.exercises.check('05.6', pad)", "pad is a whole number, and 0.5 has a "
                                                       "fraction"),
    ],
    "05.7": [
        ("read_column = 'threadIdx.y'\ntl.exercises.check('05.7', read_column)",
         "is not the transpose"),
        ("read_column = '(threadIdx.x + threadIdx.y)'\ntl.exercises.check('05.7', read_column)",
         "past the end of the __shared__ array 'T'"),
    ],
    "06.1": [
        ("tl.exercises.check('06.1', (2, 8))", "the kernel also writes y[i]"),
        ("tl.exercises.check('06.1', (1, 12))", "a multiply and an add"),
    ],
    "06.2": [
        ("h200 = tl.roofline.GPUS['H200 SXM']\n"
         "def attainable_gflops(intensity):\n    return intensity * h200.dram_bandwidth / 1e9\n"
         "tl.exercises.check('06.2', {i: attainable_gflops(i) for i in (1 / 6, 0.25, 1.0, 4.0, 8.0, 32.0, 128.0)})",
         "Past the ridge"),
        ("h200 = tl.roofline.GPUS['H200 SXM']\n"
         "def attainable_gflops(intensity):\n    return max(h200.fp32_flops, intensity * h200.dram_bandwidth) / 1e9\n"
         "tl.exercises.check('06.2', {i: attainable_gflops(i) for i in (1 / 6, 0.25, 1.0, 4.0, 8.0, 32.0, 128.0)})",
         "the smaller of the two roofs, not the larger"),
        ("h200 = tl.roofline.GPUS['H200 SXM']\n"
         "def attainable_gflops(intensity):\n    return min(h200.fp32_flops, intensity * h200.dram_bandwidth) / 1e12\n"
         "tl.exercises.check('06.2', {i: attainable_gflops(i) for i in (1 / 6, 0.25, 1.0, 4.0, 8.0, 32.0, 128.0)})",
         "1,000 times too small"),
    ],
    "06.3": [
        ("cur = '0'\ntl.exercises.check('06.3', cur)", "no race, but C is wrong"),
        ("cur = '(t + 1) & 1'\ntl.exercises.check('06.3', cur)",
         "Uninitialized __shared__ read of As[1][0][0]"),
        ("cur = 't'\ntl.exercises.check('06.3', cur)", "cur must be 0 or 1"),
    ],
    "06.4": [
        ("tl.exercises.check('06.4', (2 / 8, 2 / 8))", "z[i] is written (4 B)"),
        ("tl.exercises.check('06.4', (2 / 12, 2 / 12))", "the sum stays in a register"),
    ],
    "06.5": [
        ("tl.exercises.check('06.5', 0.948)", "that is the 32-bit time"),
        # a time in seconds or microseconds: said so, with the factor
        ("gbps = 3397.2\ntl.exercises.check('06.5', 6 * 2**28 / (gbps * 1e9))",
         "is a time in seconds (and the right bytes): time_ms is in milliseconds, so multiply "
         "by 1e3"),
        ("gbps = 3397.2\ntl.exercises.check('06.5', 12 * 2**28 / (gbps * 1e9))",
         "is a time in seconds: time_ms is in milliseconds"),
        ("gbps = 3397.2\ntl.exercises.check('06.5', 6 * 2**28 / (gbps * 1e9) * 1e6)",
         "is a time in microseconds (and the right bytes): time_ms is in milliseconds, so "
         "divide by 1e3"),
        ("gbps = 3397.2\ntl.exercises.check('06.5', 8 * 2**28 / (gbps * 1e9) * 1e3)",
         "y is written in 16 bits too"),
    ],
    "06.6": [
        ("def plain_barriers(N, tile):\n    return 2 * (N // tile)\n"
         "def db_barriers(N, tile):\n    return (N // tile) ** 2 * (N // tile + 1)\n"
         "tl.exercises.check('06.6', {(k, N, t): f(N, t) for N, t in ((64, 16), (64, 8), (4096, 32))\n"
         "                            for k, f in (('plain', plain_barriers), ('db', db_barriers))})",
         "the emulator counts 1,024 block barriers: 64 blocks x 8 steps x 2 barriers per step. "
         "That is one block's"),
        ("def plain_barriers(N, tile):\n    return (N // tile) ** 3 * 2\n"
         "def db_barriers(N, tile):\n    return (N // tile) ** 3\n"
         "tl.exercises.check('06.6', {(k, N, t): f(N, t) for N, t in ((64, 16), (64, 8), (4096, 32))\n"
         "                            for k, f in (('plain', plain_barriers), ('db', db_barriers))})",
         "the barrier after the prologue"),
    ],
    "06.7": [
        ("tl.exercises.check('06.7', (32 * 32 * 4, 32768, 4.5e-7))", "a tile of A and a tile of B"),
        ("tl.exercises.check('06.7', (8192, 32, 4.5e-7))", "one thread's share"),
        ("tl.exercises.check('06.7', (8192, 32768, 8192 / 4.8e12))", "all 264 resident blocks"),
    ],
}

# Right answers in the other forms the one rule accepts: a list for a tuple, a whole-valued
# float for a whole number.
RIGHT = {
    "04.2": "tl.exercises.check('04.2', [32.0, [32, 32, 1]])",
    "04.6": "tl.exercises.check('04.6', [2 * 2 * 32 * 32 * 4, 233472 // (16384 + 1024)])",
    "05.6": "tl.exercises.check('05.6', 0.0)",
    "06.1": "tl.exercises.check('06.1', [2, 12])",
}


@pytest.mark.parametrize("exercise_id", sorted(RIGHT))
def test_right_answer_in_another_form_is_accepted(exercise_id):
    fb = run_cell(RIGHT[exercise_id])
    assert (fb.exercise, fb.status) == (exercise_id, "correct"), fb


def _ids(lesson):
    return [i for i in tl.exercises.exercise_ids() if i.startswith(lesson + ".")]


def test_every_registered_exercise_is_in_its_notebook(lesson_cells):
    lesson, cells = lesson_cells
    registered = _ids(lesson)
    assert len(registered) >= 2
    assert sorted(cells) == registered


def test_every_exercise_has_wrong_answers_here(lesson_cells):
    lesson, cells = lesson_cells
    for exercise_id in cells:
        assert len(WRONG.get(exercise_id, ())) >= 2, f"{exercise_id} needs two wrong answers"


def test_starters_are_todo_and_references_correct(lesson_cells):
    _, cells = lesson_cells
    for exercise_id, cell in cells.items():
        assert "..." in cell.starter, exercise_id
        todo = run_cell(cell.starter)
        assert (todo.exercise, todo.status) == (exercise_id, "todo"), (exercise_id, todo)
        assert "not done yet" in str(todo)
        right = run_cell(cell.reference)
        assert (right.exercise, right.status) == (exercise_id, "correct"), (exercise_id, right)


@pytest.mark.parametrize("exercise_id, code, phrase",
                         [(i, c, p) for i, cases in sorted(WRONG.items()) for c, p in cases],
                         ids=[f"{i}-wrong{k}" for i, cases in sorted(WRONG.items())
                              for k in range(len(cases))])
def test_wrong_answers_are_explained(exercise_id, code, phrase):
    fb = run_cell(code)
    assert (fb.exercise, fb.status) == (exercise_id, "wrong"), fb
    assert phrase in fb.message, fb.message
    assert len(fb.message.splitlines()) <= 12


def test_a_compile_error_in_the_student_line_is_wrong_not_a_traceback():
    fb = run_cell("tl.exercises.check('05.3', '__shared__ float T[32][33]')")   # no ';'
    assert fb.status == "wrong" and "your declaration is line 26" in fb.message
    assert "';' missing at the end of line 26" in fb.message


@pytest.mark.parametrize("block", [(1024, 1, 1), (16, 64, 1), (32, 1, 1), (64, 16, 1)])
def test_04_2_shows_no_emulator_warning_of_its_own_and_never_advises_a_wrong_block(block):
    """The check explains the block itself; the emulator's BlockShapeWarning (which once
    advised block=(32, 1, 1) for (1024, 1, 1)) is not shown under the exercise cell."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fb = run_cell(f"tl.exercises.check('04.2', (32, {block}))")
    assert fb.status == "wrong" and "(32, 1, 1)" not in fb.message.replace(str(block), "")
    assert not [str(w.message) for w in caught]
