"""tilinglib.grading: the SGEMM autograder against a corpus of submissions.

tests/submissions/ holds CUDA C files, each with a header the tests read:
``// expect: <fragment>`` (one or more; every fragment must appear in the report's failure
messages, or ``full marks``), ``// score: <n>`` (the exact score), and optionally
``// grader: block=(x, y, z)`` (the block to grade with). ``bad_*.cu`` are the classic
mistakes, one each; ``good_*.cu`` are correct kernels in different styles.
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


def header(path):
    text = path.read_text()
    expect = re.findall(r"^// expect: (.*)$", text, re.M)
    score = re.search(r"^// score: (\S+)$", text, re.M)
    block = re.search(r"^// grader: block=\((.*?)\)$", text, re.M)
    kwargs = {"block": tuple(int(x) for x in block.group(1).split(","))} if block else {}
    return text, expect, (float(score.group(1)) if score else None), kwargs


def grade(path, gpu=False):
    """The CPU grader's report (what CI and a grader without a GPU give): the scores in the
    headers are the emulator's. `gpu=True` adds the GPU pass (see the gpu tests below)."""
    text, _, _, kwargs = header(path)
    return check_sgemm(text, "sgemm", gpu=gpu, **kwargs)


def test_the_corpus_is_big_enough():
    assert len(BAD) >= 12 and len(GOOD) >= 3


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
    assert report.score == sum(c.points for c in report.checks)
    assert "FAIL" in str(report) and "synchronisation" in str(report)
    html = report._repr_html_()
    assert "<table>" in html and "write-after-read" in html
    assert "score=85" in repr(report)


def test_cases_cover_the_edges_for_every_tile():
    for tile in (1, 2, 8, 16, 32):
        shapes = [s for case in sgemm_cases(tile) for s in case.shapes]
        assert (1, 1, 1) in shapes
        assert any(M != N != K != M for M, N, K in shapes)
        assert any(K % tile and K > tile for _, _, K in shapes) or tile == 1
        assert sum(c.points for c in sgemm_cases(tile)) == 55


def test_non_str_source_is_a_type_error():
    with pytest.raises(TypeError, match="as a str"):
        check_sgemm(b"bytes", "sgemm")
