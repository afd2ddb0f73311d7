"""The instructor's secret and the inputs drawn from it (`tilinglib.grading.secret`), the
counters' evidence of the work (`tilinglib.grading.evidence`), and the attacks both answer.

- The secret: made once (mode 0600) beside the graded folder, reused, refused inside it,
  never sent to a grading process, absent from nbgrader's student copy; grades.json records
  its id and each submission's seed and shapes, never its key.
- The draws: deterministic for the same secret and answers, different for other answers or
  another secret; every draw reaches each edge (partial tiles in M, N and K, interior blocks
  meeting a partial K tile, more than 4,096 blocks, more than 65,535 along x where the
  emulator runs it in about two seconds).
- The attacks of ``bench/grading_attacks.py``, graded by the command (status and score), with
  the scores they had before (in each test's docstring): a lookup table of C, a kernel tiled
  only on the public shapes, a kernel wrong on every grid of more than 4,096 blocks.
- Honest kernels: every good kernel of tests/submissions/ and every notebook solution keeps
  full marks on drawn inputs.
"""

import importlib.util
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tilinglib.errors import GradingError
from tilinglib.grading import check_coarsened, check_sgemm, sgemm_cases
from tilinglib.grading import sandbox as sandbox_module
from tilinglib.grading.assignments import ASSIGNMENTS, grade
from tilinglib.grading.cli import Submission, grade_submission, main
from tilinglib.grading.extract import extract_from_notebook
from tilinglib.grading.sandbox import Limits
from tilinglib.grading.secret import (BIG_GRID_BLOCKS, SECRET_FILE_NAME, WIDE_GRID_BLOCKS_X,
                                      WIDE_GRID_WORK, Draw, default_secret_path, draw_for,
                                      draw_for_file,
                                      drawing, drawn_shapes, load_or_create_secret)

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "tests" / "submissions"
NOTEBOOKS = ROOT / "notebooks" / "assignments"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


attacks = _load("grading_attacks")


def solution(assignment: str) -> dict:
    nb = nbformat.read(NOTEBOOKS / assignment / f"{assignment}.ipynb", as_version=4)
    return extract_from_notebook(nb, ASSIGNMENTS[assignment]).values


A1, A2, A4 = "a1_tiled_sgemm", "a2_fix_the_kernel", "a4_coarsen"
A1_SOLUTION = solution(A1)["KERNEL"]
A2_SOLUTION = solution(A2)
A4_SOLUTION = solution(A4)["KERNEL"]


def write_notebook(folder: Path, assignment: str, answers: dict) -> Path:
    """The source notebook with each answer cell holding `answers[name]` as its literal."""
    nb = nbformat.read(NOTEBOOKS / assignment / f"{assignment}.ipynb", as_version=4)
    by_cell = {a.cell: a for a in ASSIGNMENTS[assignment].answers}
    for cell in nb.cells:
        answer = by_cell.get(cell.metadata.get("nbgrader", {}).get("grade_id"))
        if answer is not None and answer.name in answers:
            cell.source = f"{answer.name} = {answers[answer.name]!r}\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{assignment}.ipynb"
    nbformat.write(nb, path)
    return path


# --------------------------------------------------------------------------- the secret
def test_the_secret_is_made_once_private_and_reused(tmp_path):
    path = tmp_path / SECRET_FILE_NAME
    first = load_or_create_secret(path)
    assert first.created and len(first.key) == 32
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = load_or_create_secret(path)
    assert not again.created and again.key == first.key and again.id == first.id
    assert first.key.hex() not in repr(first)              # never printed by accident
    other = load_or_create_secret(tmp_path / "other.secret")
    assert other.key != first.key and other.id != first.id


def test_the_secret_is_refused_where_students_files_are_or_when_not_one(tmp_path):
    submitted = tmp_path / "submitted"
    (submitted / "alice").mkdir(parents=True)
    with pytest.raises(GradingError, match="inside .*submitted.*where the students' files"):
        load_or_create_secret(submitted / "alice" / "x.secret", not_inside=[submitted])
    assert not (submitted / "alice" / "x.secret").exists()
    (tmp_path / "notes.txt").write_text("my notes\n")
    with pytest.raises(GradingError, match="is not a grading secret this command wrote"):
        load_or_create_secret(tmp_path / "notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "my notes\n"      # left as it was
    os.symlink(tmp_path / "notes.txt", tmp_path / "link.secret")
    with pytest.raises(GradingError, match="symbolic link"):
        load_or_create_secret(tmp_path / "link.secret")
    assert default_secret_path(submitted) == tmp_path / SECRET_FILE_NAME


def test_draws_are_deterministic_and_keyed_to_secret_and_answers(tmp_path):
    s1 = load_or_create_secret(tmp_path / "one.secret")
    s2 = load_or_create_secret(tmp_path / "two.secret")
    notebook = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    d = draw_for(s1, A1, notebook)
    assert d == draw_for(s1, A1, bytes(notebook)) and 0 <= d.seed < 2 ** 63
    assert d != draw_for(s2, A1, notebook)                      # another secret
    assert d != draw_for(s1, A1, notebook + b"\n")              # another submission
    assert d != draw_for(s1, A4, notebook)                      # another assignment
    path = tmp_path / "nb.ipynb"
    path.write_bytes(notebook * 100_000)                        # 6 MB: read in pieces
    fd = os.open(path, os.O_RDONLY)
    try:
        assert draw_for_file(s1, A1, fd) == draw_for(s1, A1, notebook * 100_000)
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0                # the offset left alone
    finally:
        os.close(fd)
    assert drawn_shapes(d.seed, 16) == drawn_shapes(d.seed, 16)
    assert drawn_shapes(d.seed, 16) != drawn_shapes(d.seed + 1, 16)


@pytest.mark.parametrize("tile", [1, 2, 4, 8, 16, 32])
def test_every_draw_reaches_every_edge(tile):
    """For 200 seeds: each drawn length of an edge case leaves a partial tile; the interior
    case has a grid of at least 3 x 3 blocks and a partial K tile; there is always a grid of
    more than 4,096 blocks, and one of more than 65,535 along x exactly where its work fits
    WIDE_GRID_WORK (TILE <= 8 with TILE² threads)."""
    names = {c.name for c in sgemm_cases(tile)}
    for seed in range(200):
        shapes = drawn_shapes(seed, tile)
        assert set(shapes) <= names
        partial = lambda n: tile == 1 or n % tile != 0             # noqa: E731
        for name in ("TILE+1 and TILE-1", "primes, M != N != K", "long K",
                     "interior blocks, partial K tile"):
            for M, N, K in shapes[name]:
                assert partial(M) and partial(N) and partial(K), (seed, name, (M, N, K))
        (p,) = shapes["primes, M != N != K"]
        assert len(set(p)) == 3
        ((M, N, K),) = shapes["interior blocks, partial K tile"]
        assert -(-M // tile) >= 3 and -(-N // tile) >= 3 and K > tile
        ((M, N, K),) = shapes["long K"]
        assert K > 4 * tile
        *_, (M, N, K) = shapes["tall and wide"]
        blocks_x = -(-N // tile)
        assert blocks_x * -(-M // tile) > BIG_GRID_BLOCKS and M < max(tile, 2)
        wide = (WIDE_GRID_BLOCKS_X + 256) * tile ** 3 <= WIDE_GRID_WORK
        assert (blocks_x > WIDE_GRID_BLOCKS_X) == wide, (seed, blocks_x)
        assert blocks_x * tile ** 3 <= max(WIDE_GRID_WORK, (BIG_GRID_BLOCKS + 256) * tile ** 3)
    assert ((WIDE_GRID_BLOCKS_X + 256) * 8 ** 3 <= WIDE_GRID_WORK
            < (WIDE_GRID_BLOCKS_X + 1) * 16 ** 3)


def test_outside_a_drawing_block_only_the_public_inputs_are_graded():
    with drawing(Draw(7)) as record:
        drawn = check_sgemm(A1_SOLUTION, "sgemm", gpu=False)
    shapes = record["kernels"]["sgemm"]["shapes"]
    public = {c.name: [list(s) for s in c.shapes] for c in sgemm_cases(16)}
    assert drawn.score == 100 and record["seed"] == 7
    for name, got in shapes.items():
        assert got[:len(public[name])] == public[name]
    assert sum(map(len, shapes.values())) == sum(map(len, public.values())) + 7
    with drawing(Draw(7)) as record2:
        pass
    assert record2["kernels"] == {}


def test_the_figure_in_the_notebooks_is_the_rule():
    for name in (A1, A2, A4):
        text = (NOTEBOOKS / name / f"{name}.ipynb").read_text()
        assert f"more than {BIG_GRID_BLOCKS:,} blocks" in text, name


# --------------------------------------------------------------------------- the command
@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """A class of every attack and every honest solution, graded twice by the command with
    --jobs 2 (the secret made by the first run, reused by the second)."""
    base = tmp_path_factory.mktemp("course")
    submitted = base / "submitted"
    a1_32 = A1_SOLUTION.replace("#define TILE 16", "#define TILE 32")
    plan = {
        "lookup_a1": (A1, {"KERNEL": attacks.lookup_table(16)}),
        "lookup_a2": (A2, dict(A2_SOLUTION, FIXED_KERNEL=attacks.lookup_table(16))),
        "shape_detect_a1": (A1, {"KERNEL": attacks.shape_detecting(16)}),
        "shape_detect_a4": (A4, {"KERNEL": attacks.shape_detecting_coarse(A4_SOLUTION)}),
        "big_grid_a1": (A1, {"KERNEL": attacks.wrong_on_big_grids(A1_SOLUTION)}),
        "big_grid_a1_tile32": (A1, {"KERNEL": attacks.wrong_on_big_grids(a1_32)}),
        "big_grid_a2": (A2, dict(A2_SOLUTION, FIXED_KERNEL=attacks.wrong_on_big_grids(
            A2_SOLUTION["FIXED_KERNEL"]))),
        "big_grid_a4": (A4, {"KERNEL": attacks.wrong_on_big_grids(A4_SOLUTION,
                                                                  "sgemmCoarse")}),
        "solution_a1": (A1, {"KERNEL": A1_SOLUTION}),
        "solution_a1_tile32": (A1, {"KERNEL": a1_32}),
        "solution_a2": (A2, A2_SOLUTION),
        "solution_a4": (A4, {"KERNEL": A4_SOLUTION}),
    }
    for student, (assignment, answers) in plan.items():
        write_notebook(submitted / student / assignment, assignment, answers)
    runs = []
    for run in ("first", "second"):
        out = base / run
        rc = main([str(submitted), "--jobs", "2", "--quiet", "--out", str(out / "grades.csv"),
                   "--results", str(out / "grades.json"), "--feedback-dir",
                   str(out / "feedback")])
        assert rc == 0
        saved = json.loads((out / "grades.json").read_text())
        runs.append(saved)
    return base, plan, runs


def _by_student(saved) -> dict:
    return {(r["student"], r["assignment"]): r["outcome"] for r in saved["results"]
            if r["outcome"]["status"] != "missing_notebook"}


# The attacks: (student, assignment, status, score now, score before this grader, in-notebook
# score now). Before: the command graded the public shapes with seed-0 data only.
ATTACKS = [
    ("lookup_a1", A1, "graded", 0, 100, 4),
    ("lookup_a2", A2, "graded", 10, 100, 13.6),
    ("shape_detect_a1", A1, "graded", 30, 100, 100),
    ("shape_detect_a4", A4, "graded", 30, 100, 100),
    ("big_grid_a1", A1, "graded", 86.67, 100, 100),
    ("big_grid_a1_tile32", A1, "graded", 86.67, 100, 100),
    ("big_grid_a2", A2, "graded", 88, 100, 100),
    ("big_grid_a4", A4, "graded", 86.67, 100, 100),
]


@pytest.mark.parametrize("student, assignment, status, score, before, notebook", ATTACKS)
def test_each_attack_scores_what_its_honest_part_earns(graded_class, student, assignment,
                                                       status, score, before, notebook):
    """Lookup tables of C for the public shapes (seed 0) get 0 (a2: its two line answers,
    10): the command's data are drawn, and in the notebook the multiply-adds are counted
    (4: the 1x1x1 case, where the block's idle threads' dummy products reach the 1 FMA it
    needs). Tiled only on the public shapes: 30, a naive kernel's points. Wrong on every
    grid of more than 4,096 blocks: the 'tall and wide' case (4 of 30) lost, so 26 + 70 x
    26/30 = 86.67 (a2: 10 + 90% of it = 88), at TILE 16 and 32 and in a4."""
    _, plan, runs = graded_class
    outcome = _by_student(runs[0])[(student, assignment)]
    assert (outcome["status"], outcome["score"]) == (status, pytest.approx(score, abs=0.01))
    # what the notebook's own check gives (the public inputs)
    here = grade(assignment, {k: v for k, v in plan[student][1].items()}).score
    assert here == pytest.approx(notebook, abs=0.01)
    assert before == 100


def test_honest_solutions_keep_full_marks_on_drawn_inputs(graded_class):
    _, _, runs = graded_class
    got = _by_student(runs[0])
    for student in ("solution_a1", "solution_a1_tile32", "solution_a2", "solution_a4"):
        (outcome,) = [o for (s, _), o in got.items() if s == student]
        assert (outcome["status"], outcome["score"]) == ("graded", 100), student


def test_the_same_secret_and_submission_give_the_same_grade(graded_class):
    base, _, (first, second) = graded_class
    assert first["settings"]["secret"] == second["settings"]["secret"]
    assert first["settings"]["secret"]["id"] == load_or_create_secret(base / SECRET_FILE_NAME).id
    a, b = _by_student(first), _by_student(second)
    strip = lambda o: {k: v for k, v in o.items() if k not in ("seconds", "peak_memory_bytes")}   # noqa: E731
    assert {k: strip(v) for k, v in a.items()} == {k: strip(v) for k, v in b.items()}


def test_grades_json_records_the_draws_and_never_the_key(graded_class):
    base, _, (first, _) = graded_class
    secret = load_or_create_secret(base / SECRET_FILE_NAME)
    assert not secret.created
    assert first["settings"]["secret"]["id"] == secret.id
    text = (base / "first" / "grades.json").read_text()
    assert secret.key.hex() not in text
    for student in ("first", "second"):
        for path in (base / student / "feedback").rglob("*"):
            assert not path.is_file() or secret.key.hex() not in path.read_text()
    inputs = _by_student(first)[("solution_a1", A1)]["inputs"]
    shapes = inputs["kernels"]["sgemm"]["shapes"]
    drawn = drawn_shapes(inputs["seed"], 16)
    for name, extra in drawn.items():
        assert shapes[name][-len(extra):] == [list(s) for s in extra]
    # the seed is the draw of the notebook's bytes
    notebook = base / "submitted" / "solution_a1" / A1 / f"{A1}.ipynb"
    assert inputs["seed"] == draw_for(secret, A1, notebook.read_bytes()).seed


def test_the_grading_process_never_receives_the_secret(tmp_path, monkeypatch):
    sent = []
    real = subprocess.Popen

    class Recording(real):
        def communicate(self, input=None, timeout=None):
            sent.append(input)
            return super().communicate(input, timeout)

    monkeypatch.setattr(sandbox_module.subprocess, "Popen", Recording)
    secret = load_or_create_secret(tmp_path / "s.secret")
    path = write_notebook(tmp_path / "submitted" / "eve" / A1, A1, {"KERNEL": A1_SOLUTION})
    r = grade_submission(Submission("eve", A1, path), limits=Limits(wall_seconds=60,
                                                                    cpu_seconds=60),
                         secret=secret)
    assert (r.outcome.status, r.outcome.score) == ("graded", 100)
    (request,) = sent
    assert secret.key.hex().encode() not in request and secret.key not in request
    assert json.loads(request)["draw"] == {"seed": r.outcome.inputs["seed"]}


def test_the_secret_is_not_in_nbgraders_student_copy(tmp_path):
    """A grading run in the course folder makes the secret beside submitted/; nbgrader's
    generate_assignment afterwards puts nothing of it in release/."""
    pytest.importorskip("nbgrader")
    course = tmp_path / "course"
    (course / "source").mkdir(parents=True)
    import shutil
    shutil.copytree(NOTEBOOKS / A1, course / "source" / A1)
    shutil.copy(NOTEBOOKS / "nbgrader_config.py", course / "nbgrader_config.py")
    write_notebook(course / "submitted" / "alice" / A1, A1, {"KERNEL": A1_SOLUTION})
    assert main([str(course / "submitted"), "--quiet", "--jobs", "1", "--out",
                 str(course / "grades.csv"), "--results", str(course / "grades.json"),
                 "--feedback-dir", str(course / "feedback")]) == 0
    secret = load_or_create_secret(course / SECRET_FILE_NAME)
    assert not secret.created
    bindir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", A1,
                           "--force", f"--CourseDirectory.root={course}"], cwd=course, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    released = [p for p in (course / "release").rglob("*") if p.is_file()]
    assert released and not any(p.name == SECRET_FILE_NAME for p in released)
    for p in released:
        data = p.read_bytes()
        assert secret.key.hex().encode() not in data and secret.key not in data
    # and nothing in any student's folder
    assert not list((course / "submitted").rglob(SECRET_FILE_NAME))


# --------------------------------------------------------------------------- honest kernels
INTRINSICS = A1_SOLUTION.replace("sum += As[ty][k] * Bs[k][tx];",
                                 "sum = __fadd_rn(sum, __fmul_rn(As[ty][k], Bs[k][tx]));")


@pytest.mark.parametrize("path", sorted(SUBMISSIONS.glob("good_*.cu"))
                         + sorted((SUBMISSIONS / "a4").glob("good_*.cu")) + ["intrinsics"],
                         ids=lambda p: getattr(p, "stem", p))
def test_correct_kernels_keep_full_marks_on_drawn_inputs(path):
    """Every correct kernel of tests/submissions/ (each in its style: if/else guards, pointer
    walks, a rectangular block, a 2 x 2 register tile in a4), and the solution written with
    __fadd_rn / __fmul_rn (one FLOP each, like + and *), is right on every drawn shape and
    shows the work on each (with a time limit no loaded machine reaches: the TILE 32 kernels
    take 10 to 25 s here)."""
    if path == "intrinsics":
        assert INTRINSICS != A1_SOLUTION
        report = check_sgemm(INTRINSICS, "sgemm", gpu=False, draw=Draw(11), time_limit=600)
    elif path.parent.name == "a4":
        report = check_coarsened(path.read_text(), draw=Draw(11), time_limit=600)
    else:
        text = path.read_text()
        block = [int(x) for x in text.split("// grader: block=(")[1].split(")")[0].split(",")] \
            if "// grader: block=(" in text else None
        report = check_sgemm(text, "sgemm", gpu=False, block=block, draw=Draw(11),
                             time_limit=600)
    assert (report.score, report.failures) == (100, []), report
