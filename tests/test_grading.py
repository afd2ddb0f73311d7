"""tilinglib.grading: the SGEMM autograder against a corpus of submissions.

tests/submissions/ holds CUDA C files, each with a header the tests read:
``// expect: <fragment>`` (one or more; every fragment must appear in the report's failure
messages, or ``full marks``), ``// score: <n>`` (the exact score), ``// fails: a; b; ...``
(bad kernels: exactly the checks that fail, named as in the report without "correct: " and
without the parenthesis), and optionally ``// grader: block=(x, y, z)`` (the block to grade
with). ``bad_*.cu`` are the classic mistakes, one each; ``good_*.cu`` are correct kernels in
different styles.

Each bad kernel's score is derived here, by hand, from the checks it fails and the weights
the assignment states (`WEIGHTS`), not read back from the grader: correctness earns its
points; the other checks count only when tiling passed, each in proportion to the
correctness points earned.
"""

import re
import time
from pathlib import Path

import numpy as np
import pytest

from tilinglib.grading import Check, GradeReport, check_sgemm, sgemm_cases

SUBMISSIONS = Path(__file__).parent / "submissions"
GOOD = sorted(SUBMISSIONS.glob("good_*.cu"))
BAD = sorted(SUBMISSIONS.glob("bad_*.cu"))


# The weights a1 states (its notebook and check_sgemm's docstring): 30 for correctness, 70 for
# the rest, the rest only for a tiled kernel and in proportion to the correctness earned.
CORRECTNESS = {"1x1x1": 4, "square, multiple of TILE": 4, "TILE+1 and TILE-1": 5,
               "primes, M != N != K": 5, "tall and wide": 4, "long K": 4,
               "interior blocks, partial K tile": 4}
QUALITY = {"tiling": 25, "synchronisation": 20, "TILE declared is the TILE used": 5,
           "64-bit index arithmetic": 10, "accumulator initialised": 10}


def expected_score(fails: set) -> float:
    """The score the stated weights give a kernel failing exactly the checks in `fails`."""
    if "compiles and launches" in fails:
        return 0.0
    earned = sum(p for name, p in CORRECTNESS.items() if name not in fails)
    if "tiling" in fails:
        return float(earned)
    rest = sum(p for name, p in QUALITY.items() if name not in fails)
    return round(earned + rest * earned / 30, 2)


def short_name(check_name: str) -> str:
    return check_name.removeprefix("correct: ").split(" (")[0]


def header(path):
    text = path.read_text()
    expect = re.findall(r"^// expect: (.*)$", text, re.M)
    score = re.search(r"^// score: (\S+)$", text, re.M)
    block = re.search(r"^// grader: block=\((.*?)\)$", text, re.M)
    kwargs = {"block": tuple(int(x) for x in block.group(1).split(","))} if block else {}
    return text, expect, (float(score.group(1)) if score else None), kwargs


def stated_fails(path) -> set:
    found = re.search(r"^// fails: (.*)$", path.read_text(), re.M)
    return set(found.group(1).split("; ")) if found else set()


def grade(path, gpu=False):
    """The CPU grader's report (what CI and a grader without a GPU give): the scores in the
    headers are the emulator's. `gpu=True` adds the GPU pass (see the gpu tests below)."""
    text, _, _, kwargs = header(path)
    return check_sgemm(text, "sgemm", gpu=gpu, **kwargs)


def test_the_corpus_is_big_enough():
    assert len(BAD) >= 12 and len(GOOD) >= 3


def test_the_weights_are_the_assignments():
    assert sum(CORRECTNESS.values()) == 30 and sum(QUALITY.values()) == 70
    assert {c.name: c.points for c in sgemm_cases(16)} == CORRECTNESS


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_each_header_score_follows_from_the_weights(path):
    """The `// score:` in each header is the weights' arithmetic on its `// fails:` list
    (no grader involved): e.g. bad_guard_edge_blocks_only fails primes (5) and the interior
    case (4): 21 of 30, plus 70 x 21/30 = 49, so 70."""
    _, _, score, _ = header(path)
    fails = stated_fails(path)
    assert fails, f"{path.name} needs a '// fails:' line"
    assert fails <= set(CORRECTNESS) | set(QUALITY) | {"compiles and launches"}, fails
    assert score == expected_score(fails)


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_correct_submissions_get_full_marks(path):
    report = grade(path)
    assert report.passed, "\n".join(report.failures)
    assert report.score == report.max_score == 100
    assert report.failures == []


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_each_mistake_fails_with_its_message(path):
    _, expect, score, _ = header(path)
    assert expect and score is not None, f"{path.name} needs '// expect:' and '// score:' lines"
    report = grade(path)
    assert not report.passed
    assert report.score < report.max_score
    text = "\n".join(report.failures)
    for fragment in expect:
        assert fragment in text, f"{path.name}: {fragment!r} not in\n{text}"
    assert report.score == score, str(report)
    assert {short_name(c.name) for c in report.checks if not c.passed} == stated_fails(path)
    assert all(c.message != "ok" for c in report.checks if not c.passed)


@pytest.mark.gpu
@pytest.mark.parametrize("path", GOOD + BAD, ids=lambda p: p.stem)
def test_the_gpu_pass_never_scores_higher(path):
    """On a GPU the correctness cases also run there. A correct kernel keeps full marks; a
    faulty one can lose more (a race or an unset accumulator that the lockstep emulator
    forgives gives wrong answers on the GPU: seen on the H200 for the missing first barrier,
    the tile left stale and the uninitialised accumulator), never less."""
    cpu, gpu = grade(path), grade(path, gpu=True)
    assert gpu.score <= cpu.score
    if path.name.startswith("good_"):
        assert gpu.score == 100
    assert any("also run on the GPU" in note for note in gpu.notes) or gpu.score == 0


def test_grading_a_submission_is_quick():
    for path in [SUBMISSIONS / "good_if_else.cu", SUBMISSIONS / "bad_runaway_loop.cu"]:
        t0 = time.perf_counter()
        grade(path)
        assert time.perf_counter() - t0 < 20


def test_a_floor_grid_misses_the_edge_tiles():
    text = (SUBMISSIONS / "good_ternary.cu").read_text()
    report = check_sgemm(text, "sgemm", grid=lambda M, N, K, t: (max(N // t, 1), max(M // t, 1)))
    assert not report.passed
    msg = "\n".join(report.failures)
    assert "never written" in msg and "ceil(M/TILE)" in msg


def test_a_grid_with_zero_blocks_is_a_launch_failure():
    text = (SUBMISSIONS / "good_ternary.cu").read_text()
    report = check_sgemm(text, "sgemm", grid=lambda M, N, K, t: (N // t, M // t))
    assert "the launch itself fails" in "\n".join(report.failures)


def test_a_huge_launch_is_refused_with_a_message():
    text = (SUBMISSIONS / "good_ternary.cu").read_text()
    report = check_sgemm(text, "sgemm", grid=lambda M, N, K, t: (N * 64, M * 64))
    msg = "\n".join(report.failures)
    assert "over the grader's budget" in msg


def test_tile_from_options_overrides_the_default():
    text = (SUBMISSIONS / "good_ternary.cu").read_text()
    report = check_sgemm(text, "sgemm", options=["-DTILE=8"])
    assert report.tile == 8 and report.block == (8, 8, 1) and report.passed


def test_source_that_does_not_compile_scores_zero_with_the_line():
    report = check_sgemm("__global__ void sgemm(int M, int N, int K, const float* A,\n"
                         "  const float* B, float* C) { int x = ; }\n", "sgemm")
    assert report.score == 0 and not report.passed
    assert "does not compile" in report.failures[0] and "kernel.cu:2" in report.failures[0]


def test_missing_tile_and_wrong_name():
    text = (SUBMISSIONS / "good_ternary.cu").read_text()
    no_tile = re.sub(r"#ifndef TILE\n#define TILE 16\n#endif\n", "", text)
    report = check_sgemm(no_tile.replace("[TILE]", "[16]").replace("TILE", "16"), "sgemm")
    assert "TILE is not defined" in report.failures[0]
    report = check_sgemm(text, "matmul")
    assert "no __global__ function named 'matmul'" in report.failures[0]


def test_report_views_and_totals():
    report = grade(SUBMISSIONS / "bad_missing_second_barrier.cu")
    assert isinstance(report, GradeReport)
    assert all(isinstance(c, Check) for c in report.checks)
    assert report.max_score == 100
    assert report.score == round(sum(c.points for c in report.checks), 2)
    assert "FAIL" in str(report) and "synchronisation" in str(report)
    html = report._repr_html_()
    assert "<table>" in html and "write-after-read" in html
    assert "score=21.33" in repr(report)


def test_cases_cover_the_edges_for_every_tile():
    for tile in (1, 2, 8, 16, 32):
        shapes = [s for case in sgemm_cases(tile) for s in case.shapes]
        assert (1, 1, 1) in shapes
        assert any(M != N != K != M for M, N, K in shapes)
        assert any(K % tile and K > tile for _, _, K in shapes) or tile == 1
        # a 3 x 3 grid (or more) whose interior block (0, 0) meets a partial tile along K
        assert any(M > 2 * tile and N > 2 * tile and K % tile for M, N, K in shapes) or tile == 1
        assert sum(c.points for c in sgemm_cases(tile)) == 30


def grade_text(text, **kwargs):
    return check_sgemm(text, "sgemm", gpu=False, **kwargs)


def test_without_tiling_a_correct_kernel_keeps_only_its_correctness_points():
    """Correct, and every other check it can pass passed, yet 30: the tiling gate."""
    for name in ("bad_no_shared_memory.cu", "bad_naive_no_shared.cu", "bad_tile_one.cu",
                 "bad_tile_two.cu"):
        report = grade(SUBMISSIONS / name)
        assert all(c.passed for c in report.checks if c.name.startswith("correct: "))
        assert report.score == 30, str(report)
        gated = [c for c in report.checks if c.passed and not c.name.startswith("correct: ")
                 and c.max_points > 0]
        assert gated and all(c.points == 0 and "not counted" in c.message for c in gated)


def test_tile_four_is_the_smallest_tile_that_counts():
    text = (SUBMISSIONS / "good_ternary.cu").read_text()
    assert grade_text(text, options=["-DTILE=4"]).score == 100
    three = grade_text(text, options=["-DTILE=3"])
    assert three.score == 30 and "TILE = 3" in "\n".join(three.failures)


def test_the_other_checks_count_in_proportion_to_correctness():
    report = grade(SUBMISSIONS / "bad_guard_edge_blocks_only.cu")
    share = 21 / 30                     # primes (5) and the interior case (4) fail
    for c in report.checks:
        if c.name.startswith("correct: ") or c.max_points == 0:
            continue
        assert c.passed and c.points == pytest.approx(c.max_points * share, abs=1e-3), c
        assert "counted at 70%" in c.message
    assert "ok ~" in str(report) and "counted at 70%" in str(report)


def test_an_empty_kernel_and_one_that_never_writes_c_score_zero():
    for name in ("bad_empty_kernel.cu", "bad_never_writes_c.cu"):
        report = grade(SUBMISSIONS / name)
        assert report.score == 0 and "never written" in "\n".join(report.failures)
    # the no-write kernel passes every check after correctness, and they count for nothing
    report = grade(SUBMISSIONS / "bad_never_writes_c.cu")
    rest = [c for c in report.checks if not c.name.startswith("correct: ") and c.max_points]
    assert all(c.passed and c.points == 0 for c in rest)


def test_the_interior_case_catches_guards_only_in_edge_blocks():
    """Interior blocks are in neither the last block row nor column: with TILE = 16 the
    35 x 37 x 39 case has 3 x 3 blocks, and block (0, 0) reads B rows 32..47 of K = 39."""
    report = grade(SUBMISSIONS / "bad_guard_edge_blocks_only.cu")
    (check,) = [c for c in report.checks if c.name == "correct: interior blocks, partial K tile"]
    assert not check.passed and "M=35, N=37, K=39" in check.message
    assert "'B'" in check.message


def test_non_str_source_is_a_type_error():
    with pytest.raises(TypeError, match="as a str"):
        check_sgemm(b"bytes", "sgemm")


# --------------------------------------------------------------------------- assignments
from tilinglib.grading import assignments as asg  # noqa: E402


def test_a2_barrier_is_accepted_exactly_where_it_removes_the_race():
    """Inserting __syncthreads() after each line of the buggy kernel (boundary bug fixed)
    and running the race check: after line 10 or 11 it opens the loop body before the
    stores (the previous tile's reads are done), after 16 it closes the body after the
    inner loop. After 15 it becomes the inner loop's body ('k' undeclared on the next
    line); after 17, the loop's closing brace, it is outside the loop and the race stays;
    before line 10 it is outside the loop too; after line 12 or 13 it still lets one
    tile's store race with the other's reads."""
    accepted = {line for line in range(1, 21) if asg.barrier_fix_verdict(line) is None}
    assert accepted == {10, 11, 16}
    assert "write-after-read" in asg.barrier_fix_verdict(17)
    report = asg.grade_part("a2_fix_the_kernel", "a2-test-barrier",
                            {"BARRIER_MISSING_AFTER_LINE": 17})
    assert report.score == 0 and report.max_score == 5
    assert "line 17 ('}')" in report.failures[0]


def test_a2_boundary_line_is_the_line_the_emulator_names():
    from tilinglib.emulator import In, InOut, SourceModule
    from tilinglib.errors import MemoryAccessError

    lines = asg.A2_BUGGY_KERNEL.splitlines()
    fixed_barrier = "\n".join(lines[:16] + ["        __syncthreads();"] + lines[16:])
    f = SourceModule(fixed_barrier).get_function("sgemm")
    M, N, K = 20, 21, 40
    A = np.ones((M, K), np.float32)
    B = np.ones((K, N), np.float32)
    C = np.zeros((M, N), np.float32)
    with pytest.raises(MemoryAccessError, match=r"'B'[\s\S]*kernel\.cu:13"):
        f(np.int32(M), np.int32(N), np.int32(K), In(A), In(B), InOut(C),
          block=(16, 16, 1), grid=(2, 2))
    part = lambda v: asg.grade_part("a2_fix_the_kernel", "a2-test-boundary",  # noqa: E731
                                    {"BOUNDARY_BUG_LINE": v})
    assert part(13).score == 5
    assert part(12).score == 0 and "checks both row < M and ka < K" in part(12).failures[0]
    assert part(99).score == 0 and "lines 1 to 20" in part(99).failures[0]


def test_a2_an_unchanged_copy_of_the_buggy_kernel_scores_zero():
    report = asg.grade_part("a2_fix_the_kernel", "a2-test-grader",
                            {"FIXED_KERNEL": "  " + asg.A2_BUGGY_KERNEL + "\n"})
    assert report.score == 0 and report.max_score == 90
    assert "still BUGGY_KERNEL" in report.failures[0]


def test_a2_fixed_kernel_counts_ninety_percent_of_check_sgemm():
    fixed = (SUBMISSIONS / "bad_int32_index.cu").read_text()        # 90 of 100 in a1
    report = asg.grade_part("a2_fix_the_kernel", "a2-test-grader", {"FIXED_KERNEL": fixed})
    assert report.max_score == 90 and report.score == 81


def test_a3_numbers_are_the_lessons():
    """Two float arrays of TILE x TILE: 8·TILE² bytes. Blocks per SM on the H200 (lesson
    04's table, 32 registers per thread as nvcc gave sgemm_tiled): TILE 4 and 8 hit the 32
    block slots, 16 gives 2,048/256 = 8, 32 gives 2,048/1,024 = 2. Intensity 0.25·TILE.
    The H200's fastest launchable TILE at N = 4096 is 32 (8,997 GFLOP/s against 8,069)."""
    want = asg.a3_expected()
    assert want["SHARED_BYTES"] == {4: 128, 8: 512, 16: 2048, 32: 8192}
    assert want["BLOCKS_PER_SM"] == {4: 32, 8: 32, 16: 8, 32: 2}
    assert want["INTENSITY"] == {4: 1.0, 8: 2.0, 16: 4.0, 32: 8.0}
    assert want["REGISTERS"] == {4: 32, 8: 32, 16: 32, 32: 32}
    assert want["CHOSEN_TILE"] == 32
    assert round(want["GFLOPS"][32]) == 8997 and round(want["GFLOPS"][16]) == 8069


def test_a3_intensity_is_what_the_emulator_counts():
    """N = 64, TILE = 8: 2·64³ FLOPs; each of the 64 blocks loads (64/8) tiles of A and B,
    8·8 floats each: 64·8·2·64·4 bytes = 262,144; 524,288 / 262,144 = 2.0 = 0.25·8."""
    from tilinglib import kernels
    from tilinglib.emulator import In, Out, SourceModule

    n, t = 64, 8
    f = SourceModule(kernels.load("sgemm_tiled"), options=[f"-DTILE={t}"]).get_function(
        "sgemmTiled")
    A = np.ones((n, n), np.float32)
    C = np.empty((n, n), np.float32)
    f(np.int32(n), In(A), In(A), Out(C), block=(t, t, 1), grid=(n // t, n // t))
    r = f.last_report
    assert r.flops == 2 * n ** 3 and r.global_load_bytes_requested == 262_144
    assert r.flops / r.global_load_bytes_requested == asg.a3_expected()["INTENSITY"][t]


def test_a3_grades_numbers_per_tile_with_the_reason():
    report = asg.grade("a3_choose_tile", {
        "SHARED_BYTES": {4: 64, 8: 512, 16: 1024, 32: 8192},
        "BLOCKS_PER_SM": {4: 128, 8: 32, 16: 8, 32: 2},   # 2,048 threads / 16
        "INTENSITY": {4: 0.25, 8: 2.0, 16: 4.004, 32: 8},
        "CHOSEN_TILE": 64})
    by = {c.name.split(" (")[-1].rstrip(")"): c for c in report.checks}
    assert by["SHARED_BYTES"].points == 5 and "one array" in by["SHARED_BYTES"].message
    assert by["BLOCKS_PER_SM"].points == 7.5 and "32 blocks" in by["BLOCKS_PER_SM"].message
    assert by["INTENSITY"].points == 22.5 and "naive kernel" in by["INTENSITY"].message
    assert by["CHOSEN_TILE"].points == 0 and "4,096 threads" in by["CHOSEN_TILE"].message
    assert report.score == 35 and report.max_score == 70


@pytest.mark.parametrize("answers", [
    {}, {"KERNEL": 5, "FIXED_KERNEL": b"x", "BOUNDARY_BUG_LINE": True, "CHOSEN_TILE": 32.0},
    {"SHARED_BYTES": "128", "BLOCKS_PER_SM": [32], "INTENSITY": {4: float("nan"), 8: None}},
    {"KERNEL": "", "FIXED_KERNEL": "not CUDA at all {", "BARRIER_MISSING_AFTER_LINE": -3},
], ids=["none", "wrong-types", "odd-values", "bad-sources"])
def test_grade_raises_nothing_and_keeps_max_score(answers):
    for name, spec in asg.ASSIGNMENTS.items():
        report = asg.grade(name, answers)
        assert report.max_score == spec.max_score
        assert report.score < spec.max_score and report.failures
        total = sum(asg.grade_part(name, p.cell, answers).score for p in spec.parts)
        assert total == pytest.approx(report.score, abs=0.01)


def test_a_misbehaving_mapping_gives_no_answers():
    class Hostile(dict):
        def get(self, *a):
            raise RuntimeError("boom")

        def __contains__(self, key):
            raise RuntimeError("boom")

    assert asg.grade("a3_choose_tile", Hostile()).score == 0
    assert asg.grade_part("a3_choose_tile", "a3-test-choice", Hostile()).score == 0


def test_literal_answers_reads_a_cell_without_running_it():
    cell = ('KERNEL = r"""skeleton"""\nX = 1\nKERNEL = r"""final"""\n'
            'Y = {t: t for t in (4, 8)}\nZ = {4: 128}\nZ = make()\nprint("never run")')
    assert asg.literal_answers(cell) == {"KERNEL": "final", "X": 1}
    assert asg.literal_answers("KERNEL = r'''unclosed") == {}


def test_unknown_assignment_or_cell_names_the_known_ones():
    with pytest.raises(KeyError, match="a1_tiled_sgemm"):
        asg.grade("a4", {})
    with pytest.raises(KeyError, match="a2-test-barrier"):
        asg.grade_part("a2_fix_the_kernel", "a2-test-lines", {})


def test_in_a_notebook_a_computed_answer_counts_as_none_as_for_the_command():
    """`globals()` in a notebook has IPython's input history `In`: an answer whose latest
    top-level binding is not a literal is what the command cannot read, so it is absent."""
    right = {4: 128, 8: 512, 16: 2048, 32: 8192}
    ns = {"_ih": ["", "SHARED_BYTES = {t: 8 * t * t for t in (4, 8, 16, 32)}", "x = 1"],
          "SHARED_BYTES": right}
    report = asg.grade_part("a3_choose_tile", "a3-test-shared", ns)
    assert report.score == 0 and "computed by code" in report.notes[0]
    ns["_ih"].append("SHARED_BYTES = {4: 128, 8: 512, 16: 2048, 32: 8192}")
    assert asg.grade_part("a3_choose_tile", "a3-test-shared", ns).score == 10
    assert asg.grade_part("a3_choose_tile", "a3-test-shared", {"SHARED_BYTES": right}).score == 10


def test_a3_a_whole_float_tile_counts_and_strings_are_named_as_strings():
    choice = lambda v: asg.grade_part("a3_choose_tile", "a3-test-choice",  # noqa: E731
                                      {"CHOSEN_TILE": v})
    assert choice(32.0).score == 20 and choice(32).score == 20
    report = choice("32")
    assert report.score == 0
    assert report.failures[0].endswith("CHOSEN_TILE = '32': write a number, not a string: "
                                       "CHOSEN_TILE = 32 (one of [4, 8, 16, 32])")
    assert choice(16.5).score == 0 and "whole number" in choice(16.5).failures[0]
    assert "no answer" in choice(None).failures[0]


def test_a3_string_keys_and_values_are_named_as_strings():
    report = asg.grade_part("a3_choose_tile", "a3-test-shared",
                            {"SHARED_BYTES": {"4": 128, 8: "512", 16: 2048.0, 32: 8192}})
    assert report.score == 5            # 16 (a whole float) and 32 count; the strings do not
    text = report.failures[0]
    assert "TILE=4: given under the string key '4' (write numbers, not strings: {4: 128, ...})" \
        in text
    assert "TILE=8: '512' (write numbers, not strings: {8: 512, ...})" in text
    assert "None (missing)" not in text
    blocks = asg.grade_part("a3_choose_tile", "a3-test-blocks",
                            {"BLOCKS_PER_SM": {4: "32", 8: 32, 16: 8, 32: 2}})
    assert blocks.score == 7.5 and "occupancy(" not in blocks.failures[0]
    assert "write numbers, not strings: {4: 32, ...}" in blocks.failures[0]


def test_a2_line_numbers_as_whole_floats_count_and_strings_are_named():
    part = lambda v: asg.grade_part("a2_fix_the_kernel", "a2-test-boundary",  # noqa: E731
                                    {"BOUNDARY_BUG_LINE": v})
    assert part(13.0).score == 5
    assert part("13").score == 0
    assert part("13").failures[0].endswith("BOUNDARY_BUG_LINE = '13': write a number, not a "
                                           "string: BOUNDARY_BUG_LINE = 13")


def test_the_emulator_predefines_nvccs_device_macros():
    """nvcc compiling device code for the H200 (sm_90, nvcc 13.0) defines __CUDACC__,
    __NVCC__, __CUDA_ARCH__ = 900, __CUDACC_VER_MAJOR__ = 13 and __CUDACC_VER_MINOR__ = 0."""
    from tilinglib.emulator import Out, SourceModule

    src = ("__global__ void k(int* out) {\n"
           "#if defined(__CUDACC__) && defined(__NVCC__)\n"
           "  out[0] = __CUDA_ARCH__; out[1] = __CUDACC_VER_MAJOR__;\n"
           "  out[2] = __CUDACC_VER_MINOR__;\n"
           "#endif\n}\n")
    out = np.zeros(3, np.int32)
    SourceModule(src).get_function("k")(Out(out), block=(1, 1, 1), grid=(1, 1))
    assert out.tolist() == [900, 13, 0]
    undone = src.replace("#endif", "#else\n  out[0] = out[1] = out[2] = -1;\n#endif")
    SourceModule(undone, options=["-U__CUDACC__"]).get_function("k")(
        Out(out), block=(1, 1, 1), grid=(1, 1))
    assert out.tolist() == [-1, -1, -1]      # -U undoes one, as with nvcc


@pytest.mark.parametrize("name", ["good_if_else.cu", "bad_tiled_on_one_shape_only.cu",
                                  "bad_missing_second_barrier.cu"])
def test_grading_twice_gives_the_same_report(name):
    """The data are seeded and the emulator is deterministic: a second run gives the same
    score and the same messages (pcpp's __DATE__ and __TIME__ differ only in a kernel that
    uses them)."""
    first, second = grade(SUBMISSIONS / name), grade(SUBMISSIONS / name)
    assert [(c.name, c.points, c.message) for c in first.checks] == \
        [(c.name, c.points, c.message) for c in second.checks]
