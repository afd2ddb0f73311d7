"""Assignment 4's grader, `tilinglib.grading.coarse.check_coarsened`, and its assignment entry.

- The targets are the hand derivation (8/TILE global, 4 + 4/COARSE shared bytes per FMA), and
  the reference kernel's counters equal them exactly at every COARSE, and equal the closed
  forms of a guarded kernel's traffic on an edge shape.
- Correct coarsened kernels (1-D at every COARSE, 2-D register tiling) get 100; each faulty
  kernel of tests/submissions/a4/ gets the score its mistakes are worth, with the message that
  says why.
- A student gaming it fails: hard-coded outputs, kernels cheap only on the measured shape,
  one thread (or a few lanes) doing the block's work, skipped K-steps, an ``#ifdef
  __CUDA_ARCH__`` branch, reading past the inputs, a notebook cell that patches the grader.
- The command (``python -m tilinglib.grading --assignment a4_coarsen``) and nbgrader's
  gradebook give the same scores as the grader in this process.
"""

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

from tilinglib.emulator import In, InOut, SourceModule
from tilinglib.grading import check_coarsened
from tilinglib.grading.assignments import ASSIGNMENTS, grade, grade_part
from tilinglib.grading.coarse import (ACCUMULATOR, GLOBAL, INDEX, SHARED, _seed_of,
                                      coarse_targets, declared_coarse)
from tilinglib.grading.sgemm import _SYNC, _inputs

ROOT = Path(__file__).resolve().parent.parent
A4 = ROOT / "tests" / "submissions" / "a4"
NAME = "a4_coarsen"
GOOD = (A4 / "good_coarse4.cu").read_text()


def with_coarse(source: str, coarse: int) -> str:
    out = source.replace("#define COARSE 4 ", f"#define COARSE {coarse} ", 1)
    assert declared_coarse(out) == coarse
    return out


def by_name(report) -> dict:
    return {c.name: c for c in report.checks}


def launch(source, M, N, K, seed=0):
    """Run sgemmCoarse with the assignment's launch; return (C, A @ B, f)."""
    coarse = declared_coarse(source)
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = np.full((M, N), np.nan, dtype=np.float32)
    f = SourceModule(source).get_function("sgemmCoarse")
    f(np.int32(M), np.int32(N), np.int32(K), In(A), In(B), InOut(C),
      block=(32, 32 // coarse, 1), grid=(-(-N // 32), -(-M // 32)))
    return C, A.astype(np.float64) @ B.astype(np.float64), f


# --------------------------------------------------------------------------- the targets
@pytest.mark.parametrize("coarse", [2, 4, 8, 16, 32])
def test_targets_are_the_derivation(coarse):
    # global: 2 tiles of 32 x 32 floats per step along K for 32^3 FMAs; shared: one B value
    # and `coarse` A values (4 bytes each) per `coarse` FMAs
    t = coarse_targets(coarse)
    assert t["global"] == pytest.approx(2 * 32 * 32 * 4 / 32 ** 3) == 0.25
    assert t["shared"] == pytest.approx((4 + 4 * coarse) / coarse)
    with pytest.raises(ValueError, match="at least 1"):
        coarse_targets(0)


@pytest.mark.parametrize("coarse", [2, 4, 8, 32])
def test_reference_counts_equal_the_targets_at_64_cubed(coarse):
    source = with_coarse(GOOD, coarse)
    C, ref, f = launch(source, 64, 64, 64)
    assert np.allclose(C, ref, rtol=1e-4, atol=1e-4)
    fmas = 64 ** 3
    assert f.last_report.global_load_bytes_requested / fmas == coarse_targets(coarse)["global"]
    assert f.last_counters.shared_load_bytes / fmas == coarse_targets(coarse)["shared"]
    # every shared load is a full warp's 4-byte load: 128 bytes per request
    assert f.last_counters.shared_load_bytes == 128 * f.last_counters.shared_load_instructions


def test_reference_counts_on_an_edge_shape_are_the_closed_forms():
    # M, N, K = 67, 69, 71: a 3 x 3 grid, 3 steps along K. A guarded kernel loads each
    # element of A once per block column (3) and each of B once per block row (3); every
    # thread makes 32 * (1 + COARSE) shared loads per step, guarded or not.
    M, N, K, coarse = 67, 69, 71, 4
    C, ref, f = launch(GOOD, M, N, K)
    assert np.allclose(C, ref, rtol=1e-4, atol=1e-4)
    assert f.last_report.global_load_bytes_requested == 4 * (M * K * 3 + K * N * 3)
    threads = 9 * 32 * 32 // coarse
    assert f.last_counters.shared_load_bytes == 4 * 32 * (1 + coarse) * threads * 3


# --------------------------------------------------------------------------- correct kernels
@pytest.mark.parametrize("coarse", [2, 8, 32])
def test_the_reference_gets_full_marks_at_every_coarse(coarse):
    report = check_coarsened(with_coarse(GOOD, coarse))
    assert (report.score, report.max_score, report.failures) == (100, 100, [])
    assert report.block == (32, 32 // coarse, 1) and report.tile == 32
    shared = 4 + 4 / coarse
    assert any(f"shared loads {shared:.4g} B/FMA (target <= {shared:g}" in n
               for n in report.notes), report.notes


def test_two_d_register_tiling_passes_with_fewer_shared_bytes():
    report = check_coarsened((A4 / "good_register_2x2.cu").read_text())
    assert report.score == 100, report.failures
    assert any("shared loads 4 B/FMA (target <= 5" in n for n in report.notes)


def test_the_weights_add_up_to_100():
    checks = check_coarsened(GOOD).checks
    points = {c.name: c.max_points for c in checks}
    assert sum(v for k, v in points.items() if k.startswith("correct: ")) == 30
    assert (points[GLOBAL], points[SHARED], points[_SYNC], points[INDEX],
            points[ACCUMULATOR]) == (20, 25, 15, 5, 5)


# --------------------------------------------------------------------------- faulty kernels
@pytest.mark.parametrize("name, score, failed, says", [
    # correct but not tiled: only the 30 correctness points
    ("bad_untiled", 30, {GLOBAL, SHARED},
     "5 bytes of global loads per FMA, over the target of 0.25"),
    # tiled and coarsened, Bs[k][tx] re-read for every output: the shared target's 25 lost
    ("bad_no_register_reuse", 75, {SHARED},
     "8 bytes of shared loads per FMA, over the target of 5 (4 + 4/COARSE at COARSE = 4). "
     "8 B/FMA is the tiled kernel's count"),
    ("bad_missing_barrier", 85, {_SYNC}, "write-after-read"),
    ("bad_int32_index", 95, {INDEX}, "line 20: arow * K"),
    # acc[COARSE] never zeroed: the emulator starts it at 0, a GPU does not
    ("bad_uninitialised_accumulators", 95, {ACCUMULATOR}, "'acc[0]' is read at line 25 before"),
])
def test_faulty_kernels_lose_what_their_mistake_is_worth(name, score, failed, says):
    report = check_coarsened((A4 / f"{name}.cu").read_text())
    assert report.score == pytest.approx(score, abs=0.01)
    assert {c.name for c in report.checks if not c.passed} == failed
    assert says in " ".join(report.failures)


def test_dropping_the_partial_k_tile_keeps_a_share_of_the_rest():
    report = check_coarsened((A4 / "bad_floor_tiles.cu").read_text())
    checks = by_name(report)
    # right only on 64^3 (4 of 30): 4 + 70 * 4/30
    assert [n for n, c in checks.items() if n.startswith("correct: ") and c.passed] == \
        ["correct: square, multiple of TILE"]
    assert report.score == pytest.approx(4 + 70 * 4 / 30, abs=0.01)
    assert "the tile loop stops before the last, partial tile" in " ".join(report.failures)


@pytest.mark.parametrize("edit, says", [
    (("#define TILE 32", "#define TILE 16"), "this assignment fixes TILE = 32"),
    (("#define COARSE 4 ", "#define COARSE 1 "), "COARSE = 1 is the tiled kernel itself"),
    (("#define COARSE 4 ", "#define COARSE 3 "), "COARSE = 3 is not a coarsening factor"),
    (("#define COARSE 4 ", "#define COARSEN 4 "), "'COARSE' is not declared"),
    (("int M, int N, int K", "int M, int N, long K"), "the assignment asks for sgemmCoarse(int M"),
    (("sgemmCoarse(", "sgemm("), "sgemmCoarse"),
    (("__shared__ float As", "__shared__ floa As"), "the source does not compile"),
])
def test_what_cannot_be_graded_scores_zero_with_the_reason(edit, says):
    source = GOOD.replace(*edit)
    assert source != GOOD
    report = check_coarsened(source)
    assert report.score == 0 and report.max_score == 100
    assert says in report.checks[0].message, report.checks[0].message


def test_it_raises_only_for_arguments_of_the_wrong_type():
    with pytest.raises(TypeError, match="source must be"):
        check_coarsened(b"__global__ void sgemmCoarse() {}")
    with pytest.raises(TypeError, match="kernel_name must be a str"):
        check_coarsened(GOOD, 3)
    runaway = GOOD.replace("for (int t = 0; t < tiles; ++t) {", "for (int t = 0; t < tiles; ) {")
    report = check_coarsened(runaway, time_limit=20)
    assert report.score == 0
    assert "did not finish within the grader's step budget" in report.failures[0]


SIG = "__global__ void sgemmCoarse(int M, int N, int K, const float* A, const float* B, float* C)"
HEAD = "#define TILE 32\n#define COARSE 4\n"


@pytest.mark.parametrize("name, source", [
    ("include a host file", '#include "/etc/passwd"\n' + GOOD),
    ("macro bomb", HEAD + "#define X0 1\n" + "".join(f"#define X{i} X{i-1}+X{i-1}\n"
                                                    for i in range(1, 21))
     + SIG + "\n{ C[0] = X20; }\n"),
    ("deep parentheses", HEAD + SIG + "\n{ C[0] = " + "(" * 400 + "1" + ")" * 400 + "; }\n"),
    ("huge shared array", HEAD + SIG + "\n{ __shared__ float big[1 << 28]; big[threadIdx.x] = 1; "
     "C[0] = big[0]; }\n"),
    ("endless device loop", HEAD + "__device__ int spin(int x) { for (;;) { x = x + 1; } "
     "return x; }\n" + SIG + "\n{ C[0] = spin(M); }\n"),
    ("printf in the inner loop", GOOD.replace(
        "acc[c] += As[ty * COARSE + c][k] * b;",
        '{ acc[c] += As[ty * COARSE + c][k] * b; printf("%d %f\\n", k, b); }')),
])
def test_hostile_sources_end_in_a_report_never_an_exception(name, source, capsys):
    report = check_coarsened(source, time_limit=15)
    capsys.readouterr()
    assert report.max_score == 100
    if name == "printf in the inner loop":      # correct, and its flood is cut at 1 MB
        assert report.score == 100
    else:
        assert report.score == 0 and report.failures, report
        assert "root:" not in str(report)


# --------------------------------------------------------------------------- gaming
def test_a_hard_coded_answer_fails_because_the_data_depend_on_the_source():
    # The grader's 1x1x1 data with seed 0, hard-coded: right with that seed, wrong with the
    # seed the grader takes from the source (which the source cannot know).
    A, B = _inputs(1, 1, 1, 0)
    value = float(A[0, 0]) * float(B[0, 0])
    cheat = GOOD.replace("    __shared__ float As[TILE][TILE];\n",
                         "    if (M == 1 && N == 1 && K == 1) {\n"
                         f"        C[0] = {value!r}f;\n        return;\n    }}\n"
                         "    __shared__ float As[TILE][TILE];\n", 1)
    assert cheat != GOOD
    # With seed 0 its C is right, but no multiply-add made it and it read neither A nor B:
    # the case fails, and so does the gate (evidence of the work on every right run), so it
    # keeps the other 26 correctness points only.
    at_zero = check_coarsened(cheat, seed=0)
    assert at_zero.score == 26
    checks = by_name(at_zero)
    assert "executed 0 floating-point operations" in checks["correct: 1x1x1"].message
    assert checks[GLOBAL].message.startswith("M=1, N=1, K=1: the kernel loads 0 bytes from "
                                             "global memory, fewer than A and B hold (8)")
    honest = by_name(check_coarsened(cheat))
    assert not honest["correct: 1x1x1"].passed
    assert _seed_of(cheat, []) != _seed_of(GOOD, []) and _seed_of(GOOD, []) == _seed_of(GOOD, [])
    assert check_coarsened(GOOD).score == check_coarsened(GOOD, seed=_seed_of(GOOD, [])).score


def test_being_cheap_only_on_the_measured_shape_fails():
    report = check_coarsened((A4 / "gaming_shape_detect.cu").read_text())
    assert report.score == 30                       # its correctness points only
    msg = by_name(report)[GLOBAL].message
    assert msg.startswith("M=33, N=31, K=33: the kernel asks for 270,072 bytes of global loads")
    assert "every correctness shape is checked" in msg


def test_one_thread_doing_the_blocks_work_fails():
    report = check_coarsened((A4 / "gaming_one_thread.cu").read_text())
    assert report.score == 0
    assert "did not finish within the grader's step budget" in report.failures[0]


def test_a_few_lanes_doing_the_warps_work_fail_the_shared_check():
    # Its traffic is under both targets (2 B/FMA of shared loads), but its shared loads
    # carry 32 bytes per warp-request: 8 of 32 lanes work.
    report = check_coarsened((A4 / "gaming_few_lanes.cu").read_text())
    assert report.score == 75
    assert [c.name for c in report.checks if not c.passed] == [SHARED]
    assert "32 bytes per request on average, 8 of 32 lanes" in by_name(report)[SHARED].message
    assert any("shared loads 2 B/FMA" in n for n in report.notes)


def test_skipping_k_steps_earns_no_traffic_points():
    report = check_coarsened((A4 / "gaming_skip_k.cu").read_text())
    checks = by_name(report)
    # right only where K <= 16 (1x1x1, and 1000x3x5 / 3x1000x7): 8 of 30 points
    assert report.score == 8
    assert checks[GLOBAL].points == checks[SHARED].points == 0
    assert "the traffic of a wrong answer says nothing" in checks[GLOBAL].message


def test_the_cuda_arch_branch_graded_is_the_one_the_gpu_runs():
    cheat = (A4 / "gaming_cuda_arch.cu").read_text()
    report = check_coarsened(cheat)
    assert report.score == 30 and not by_name(report)[GLOBAL].passed
    # the same branches the other way round: the GPU runs the coarsened one, so it is graded
    fair = cheat.replace("#ifdef __CUDA_ARCH__", "#if !defined(__CUDA_ARCH__)")
    assert check_coarsened(fair).score == 100


def test_reading_past_the_inputs_is_an_out_of_bounds_fault():
    report = check_coarsened((A4 / "gaming_reads_past_inputs.cu").read_text())
    assert report.score == 0
    assert "just past the end of the array 'A'" in report.failures[0]


# --------------------------------------------------------------------------- the assignment
def test_the_assignment_grades_KERNEL_with_check_coarsened():
    spec = ASSIGNMENTS[NAME]
    assert spec.max_score == 100 and [p.cell for p in spec.parts] == ["a4-test-grader"]
    bad = (A4 / "bad_no_register_reuse.cu").read_text()
    assert grade(NAME, {"KERNEL": bad}).score == check_coarsened(bad).score == 75
    part = grade_part(NAME, "a4-test-grader", {"KERNEL": GOOD, "other": 1})
    assert part.score == 100 and any("B/FMA" in n for n in part.notes)
    missing = grade(NAME, {})
    assert missing.score == 0 and "no kernel: set KERNEL" in missing.failures[0]
    assert grade(NAME, {"KERNEL": 42}).score == 0


def _submit(root: Path, student: str, cell: str) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook()
    c = nbformat.v4.new_code_cell(cell)
    c.metadata["nbgrader"] = {"grade_id": "a4-kernel", "solution": True, "grade": False,
                              "locked": False, "schema_version": 3}
    nb.cells.append(c)
    folder = root / student / NAME
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{NAME}.ipynb")
    return folder / f"{NAME}.ipynb"


def test_the_command_grades_a4_and_fills_the_gradebook(tmp_path, capsys, monkeypatch):
    """``python -m tilinglib.grading DIR --assignment a4_coarsen --gradebook``: the scores are
    the grader's here; a cell that patches the grader is never run."""
    pytest.importorskip("nbgrader", reason="nbgrader comes with the instructor extra")
    from nbgrader.api import Gradebook

    from tilinglib.grading.cli import main

    test_assignments = pytest.importorskip("test_assignments")
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "notebooks" / "assignments" / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "notebooks" / "assignments" / NAME, course / "source" / NAME)
    test_assignments.nbgrader_cli(course, "generate_assignment", NAME, "--force")
    submitted = course / "submitted"
    marker = tmp_path / "the_cell_ran"
    patch = (f"open({str(marker)!r}, 'w').write('ran')\n"
             "import tilinglib.grading.coarse as g\n"
             "g.check_coarsened = lambda *a, **k: None\n")
    untiled = (A4 / "bad_untiled.cu").read_text()
    kernels = {"alice": GOOD, "bob": untiled, "mallory": untiled}
    for student, kernel in kernels.items():
        _submit(submitted, student, (patch if student == "mallory" else "")
                + 'KERNEL = r"""\n' + kernel + '\n"""\n')
    monkeypatch.chdir(tmp_path)
    assert main([str(submitted), "--assignment", NAME, "--out", "g.csv", "--feedback-dir",
                 "fb", "--results", "g.json", "--gradebook", str(course / "gradebook.db"),
                 "--jobs", "2", "--quiet"]) == 0
    capsys.readouterr()
    assert not marker.exists()
    with open(tmp_path / "g.csv", newline="") as fh:
        rows = {r["student"]: r for r in csv.DictReader(fh)}
    want = {s: grade(NAME, {"KERNEL": "\n" + k + "\n"}).score for s, k in kernels.items()}
    assert want == {"alice": 100, "bob": 30, "mallory": 30}
    assert {s: float(r["score"]) for s, r in rows.items()} == want
    assert all(r["status"] == "graded" and r["max_score"] == "100" for r in rows.values())
    feedback = (tmp_path / "fb" / "bob" / f"{NAME}.txt").read_text()
    assert "5 bytes of global loads per FMA" in feedback
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        got = {s.student.id: s.score for s in gb.assignment_submissions(NAME)}
    assert got == want
