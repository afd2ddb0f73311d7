"""The instructor's flow with nbgrader, on the assignments in notebooks/assignments/.

Each assignment is ``notebooks/assignments/<name>/<name>.ipynb``, an nbgrader *source*
notebook. In a temporary course directory (never in the repository), with the course
configuration ``notebooks/assignments/nbgrader_config.py``, these tests run what an
instructor runs: ``nbgrader generate_assignment`` (solutions stripped, the starters left),
``nbgrader validate`` on the source (it must pass) and ``--invert`` on the release (every
test must fail), the release executed top to bottom as a student first meets it (no cell
may fail), and ``nbgrader autograde`` on submissions made from the release: correct ones get
full marks, faulty ones the score their mistakes are worth, and every test cell gives what
`tilinglib.grading.assignments` gives for the answers read statically from the submitted
cells (what ``python -m tilinglib.grading`` grades).

nbgrader comes with the ``instructor`` extra (``pip install -e ".[instructor]"``); without
it these tests are skipped. ``.ci/run`` installs it, so CI runs them.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

nbgrader = pytest.importorskip(
    "nbgrader", reason="nbgrader is not installed: it comes with the instructor extra "
                       "(pip install -e '.[instructor]'); .ci/run installs it")
import nbformat  # noqa: E402  (after the skip: only needed with nbgrader)

from tilinglib.grading.assignments import (A2_BUGGY_KERNEL, ASSIGNMENTS,  # noqa: E402
                                           grade, grade_part, literal_answers)

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS_DIR = ROOT / "notebooks" / "assignments"
NAMES = ["a1_tiled_sgemm", "a2_fix_the_kernel", "a3_choose_tile", "a4_coarsen"]
SUBMISSIONS = ROOT / "tests" / "submissions"


def env_for_nbgrader() -> dict:
    env = dict(os.environ)
    # nbgrader calls the `alembic` command (its database migrations): find this venv's.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["TILINGLIB_BACKEND"] = "emulator"
    return env


def nbgrader_cli(course: Path, *args) -> str:
    """Run ``nbgrader <args>`` in `course`; return stdout and stderr together."""
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args,
                             f"--CourseDirectory.root={course}"],
                            cwd=course, env=env_for_nbgrader(), capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=600)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    return out


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course directory with the assignments in source/ and generated in release/."""
    root = tmp_path_factory.mktemp("course")
    shutil.copy(ASSIGNMENTS_DIR / "nbgrader_config.py", root / "nbgrader_config.py")
    for name in NAMES:
        shutil.copytree(ASSIGNMENTS_DIR / name, root / "source" / name)
        nbgrader_cli(root, "generate_assignment", name, "--force")
    return root


def nbg(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def cells(nb, grade_id=None):
    return [c for c in nb.cells if grade_id is None or nbg(c).get("grade_id") == grade_id]


def source_nb(name):
    return nbformat.read(ASSIGNMENTS_DIR / name / f"{name}.ipynb", as_version=4)


def split_solution(text: str) -> tuple[str, str]:
    """(the starter: the text outside ### BEGIN/END SOLUTION, the solution region's text)."""
    outside, inside, in_region = [], [], False
    for line in text.splitlines():
        if "BEGIN SOLUTION" in line:
            in_region = True
        elif "END SOLUTION" in line:
            in_region = False
        else:
            (inside if in_region else outside).append(line)
    return "\n".join(outside), "\n".join(inside)


def solution_of(name: str, grade_id: str) -> str:
    """The cell the instructor's solution gives: starter and solution, markers removed (the
    solution's assignments come last, so they are the answers)."""
    (cell,) = cells(source_nb(name), grade_id)
    starter, solution = split_solution(cell.source)
    return starter + "\n" + solution


def submit(course: Path, name: str, student: str, answers: dict) -> None:
    """Write submitted/<student>/<name>/<name>.ipynb: the release with `answers` filled in
    (grade_id -> cell source), as a student would."""
    nb = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
    for grade_id, source in answers.items():
        (cell,) = cells(nb, grade_id)
        cell.source = source
    folder = course / "submitted" / student / name
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{name}.ipynb")


def scores(course: Path, name: str) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions(name)}


def cell_scores(course: Path, name: str, student: str) -> dict:
    """grade_id -> the points nbgrader's autograde gave that test cell."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        out = {}
        for part in ASSIGNMENTS[name].parts:
            g = gb.find_grade(part.cell, name, name, student)
            out[part.cell] = g.score
        return out


def static_answers(course: Path, name: str, student: str) -> dict:
    """The answers in the submitted notebook, read as the command reads them: the literals
    of each answer cell, without running anything."""
    nb = nbformat.read(course / "submitted" / student / name / f"{name}.ipynb", as_version=4)
    answers = {}
    for answer in ASSIGNMENTS[name].answers:
        (cell,) = cells(nb, answer.cell)
        found = literal_answers(cell.source)
        if answer.name in found:
            answers[answer.name] = found[answer.name]
    return answers


def assert_notebook_equals_command(course, name, students):
    """Every test cell's points from nbgrader equal grade_part's on the static answers, and
    their sum equals grade()'s score: the notebook and the command agree."""
    for student in students:
        answers = static_answers(course, name, student)
        got = cell_scores(course, name, student)
        for part in ASSIGNMENTS[name].parts:
            want = grade_part(name, part.cell, answers).score
            assert got[part.cell] == pytest.approx(want, abs=0.01), (student, part.cell)
        assert sum(got.values()) == pytest.approx(grade(name, answers).score, abs=0.01)


def kernel_cell(path: Path) -> str:
    return 'KERNEL = r"""\n' + path.read_text() + '\n"""'


# --------------------------------------------------------------------------- structure
def test_every_assignment_is_here():
    assert sorted(p.name for p in ASSIGNMENTS_DIR.iterdir() if p.is_dir()) == NAMES
    assert sorted(ASSIGNMENTS) == NAMES
    for name in NAMES:
        nb = source_nb(name)
        spec = ASSIGNMENTS[name]
        assert nb.cells[0].source.startswith("# Assignment"), name
        assert sum(nbg(c).get("points", 0) for c in nb.cells) == 100, name
        # every answer lives in a solution cell with a starter and a solution region
        for answer in spec.answers:
            (cell,) = cells(nb, answer.cell)
            assert nbg(cell)["solution"] and not nbg(cell)["grade"], answer
            starter, solution = split_solution(cell.source)
            assert answer.name in literal_answers(starter), (answer, "no starter")
            assert answer.name in literal_answers(solution), (answer, "no solution")
        # every autograded part is a test cell with the part's points, calling grade_part
        for part in spec.parts:
            (cell,) = cells(nb, part.cell)
            assert nbg(cell)["grade"] and not nbg(cell)["solution"], part.cell
            assert nbg(cell)["points"] == part.points, part.cell
            assert f'grade_part("{name}", "{part.cell}", globals())' in cell.source
        assert sum(p.points for p in spec.parts) == spec.max_score
        # the manually graded cells: markdown answers with points and a rubric
        manual = [c for c in nb.cells if nbg(c).get("grade") and nbg(c).get("solution")]
        assert [nbg(c)["grade_id"] for c in manual] == list(spec.manual)
        for c in manual:
            assert c.cell_type == "markdown" and "Rubric" in split_solution(c.source)[1]
        assert spec.max_score + sum(nbg(c)["points"] for c in manual) == 100


def test_a2_notebook_prints_the_kernel_the_grader_knows():
    (setup,) = cells(source_nb("a2_fix_the_kernel"), "a2-setup")
    assert f'BUGGY_KERNEL = r"""{A2_BUGGY_KERNEL}"""' in setup.source
    (fix,) = cells(source_nb("a2_fix_the_kernel"), "a2-fix-answer")
    assert literal_answers(split_solution(fix.source)[0])["FIXED_KERNEL"] == A2_BUGGY_KERNEL


@pytest.mark.parametrize("name", NAMES)
def test_release_has_no_solutions_and_keeps_the_starters(course, name):
    release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
    source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
    text = "\n".join(c.source for c in release.cells)
    assert "BEGIN SOLUTION" not in text and "raise NotImplementedError()" not in text
    assert len(release.cells) == len(source.cells)
    for cell in source.cells:
        if "BEGIN SOLUTION" not in cell.source:
            continue
        gid = nbg(cell)["grade_id"]
        (released,) = cells(release, gid)
        starter, solution = split_solution(cell.source)
        if cell.cell_type == "code":
            assert released.source.strip() == starter.strip(), gid
        only_in_solution = set(solution.splitlines()) - set(starter.splitlines()) - {""}
        assert not [line for line in only_in_solution if line in released.source], gid


@pytest.mark.parametrize("name", NAMES)
def test_source_notebook_validates(course, name):
    out = nbgrader_cli(course, "validate", str(course / "source" / name / f"{name}.ipynb"))
    assert "Success! Your notebook passes all the tests." in out, out


@pytest.mark.parametrize("name", NAMES)
def test_released_notebook_fails_its_tests(course, name):
    out = nbgrader_cli(course, "validate", "--invert",
                       str(course / "release" / name / f"{name}.ipynb"))
    assert "Success! The notebook does not pass any tests." in out, out


@pytest.mark.parametrize("name", NAMES)
def test_release_runs_top_to_bottom_and_says_what_is_missing(course, name, monkeypatch):
    """A student's first Restart & Run All: no cell fails (the starters run), and every
    test cell scores 0 with a message."""
    from nbclient import NotebookClient

    monkeypatch.setenv("TILINGLIB_BACKEND", "emulator")
    path = course / "release" / name / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for part in ASSIGNMENTS[name].parts:
        (cell,) = cells(nb, part.cell)
        results = [o for o in cell.outputs if o.output_type == "execute_result"]
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert results and float(results[0]["data"]["text/plain"]) == 0, part.cell
        assert "FAIL" in printed, part.cell
    if name == "a1_tiled_sgemm":
        (cell,) = cells(nb, "a1-test-grader")
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert "never written" in printed


# --------------------------------------------------------------------------- autograde
def test_autograde_assignment_1(course):
    name = "a1_tiled_sgemm"
    submit(course, name, "alice", {"a1-kernel": kernel_cell(SUBMISSIONS / "good_if_else.cu")})
    submit(course, name, "bob", {"a1-kernel": kernel_cell(SUBMISSIONS / "bad_int32_index.cu")})
    submit(course, name, "carol",
           {"a1-kernel": kernel_cell(SUBMISSIONS / "bad_missing_second_barrier.cu")})
    submit(course, name, "dave", {})        # handed in the release untouched: the skeleton
    submit(course, name, "erin", {"a1-kernel": kernel_cell(SUBMISSIONS / "bad_no_shared_memory.cu")})
    nbgrader_cli(course, "autograde", name, "--create", "--force")
    # bob: correct and tiled, 32-bit index products: 100 - 10; carol: the race costs the 20
    # of synchronisation, and the 22 correctness points of the cases it makes wrong when
    # the warps run in another order (8 of 30 left, so 50 x 8/30 of the rest); dave: the
    # skeleton never writes C, so 0 of 30 correctness points and nothing else counts;
    # erin: correct but naive, only the 30 correctness points.
    assert scores(course, name) == {"alice": 100, "bob": 90, "carol": 21.33, "dave": 0,
                                    "erin": 30}
    graded = (course / "autograded" / "carol" / name / f"{name}.ipynb").read_text()
    assert "write-after-read" in graded
    assert_notebook_equals_command(course, name, ["alice", "bob", "carol", "dave", "erin"])


def test_autograde_assignment_2(course):
    name = "a2_fix_the_kernel"
    solution = {gid: solution_of(name, gid)
                for gid in ("a2-boundary-answer", "a2-barrier-answer", "a2-fix-answer")}
    submit(course, name, "alice", solution)
    # erin found the boundary line, put the barrier after the loop's closing brace (line 17:
    # the race remains), and fixed only the barrier in her kernel
    only_barrier = A2_BUGGY_KERNEL.replace(
        "            sum += As[ty][k] * Bs[k][tx];\n    }",
        "            sum += As[ty][k] * Bs[k][tx];\n        __syncthreads();\n    }")
    submit(course, name, "erin", {
        "a2-boundary-answer": "BOUNDARY_BUG_LINE = 13",
        "a2-barrier-answer": "BARRIER_MISSING_AFTER_LINE = 17",
        "a2-fix-answer": f'FIXED_KERNEL = r"""{only_barrier}"""'})
    # frank put the barrier at the top of the loop body (after line 10: also race-free) and
    # named the A load (line 12) as the boundary bug; his kernel is the full fix
    submit(course, name, "frank", {
        "a2-boundary-answer": "BOUNDARY_BUG_LINE = 12",
        "a2-barrier-answer": "BARRIER_MISSING_AFTER_LINE = 10",
        "a2-fix-answer": solution["a2-fix-answer"]})
    submit(course, name, "gina", {})       # the release untouched: the buggy copy scores 0
    nbgrader_cli(course, "autograde", name, "--create", "--force")
    got = scores(course, name)
    # erin: 5 + 0 + 90% of her kernel's score. It still reads past B wherever N is not a
    # multiple of 16, so only the 2·TILE cube is right: 4 of 30 correctness points, and the
    # other 70 count 4/30: 4 + 70 * 4/30 = 13.33, of which 90% is 12.
    assert got == {"alice": 100, "erin": pytest.approx(5 + 12, abs=0.01), "frank": 95,
                   "gina": 0}
    assert_notebook_equals_command(course, name, ["alice", "erin", "frank", "gina"])


def test_autograde_assignment_3(course):
    name = "a3_choose_tile"
    answers = {gid: solution_of(name, gid)
               for gid in ("a3-part1-answer", "a3-part2-answer", "a3-part3-answer")}
    justification = split_solution(cells(source_nb(name), "a3-justification")[0].source)[1]
    submit(course, name, "alice", {**answers, "a3-justification": justification})
    wrong = dict(answers)
    wrong["a3-part3-answer"] = "CHOSEN_TILE = 16"
    submit(course, name, "frank", wrong)
    # grace counted one shared array instead of two (0 of 10 for SHARED_BYTES)
    grace = dict(answers)
    grace["a3-part1-answer"] = ("SHARED_BYTES = {4: 64, 8: 256, 16: 1024, 32: 4096}\n"
                                "BLOCKS_PER_SM = {4: 32, 8: 32, 16: 8, 32: 2}")
    submit(course, name, "grace", grace)
    # hana computed INTENSITY with code in the answer cell: the command reads no literal, so
    # it has no answer (0 of 30), and the notebook's test cell, reading IPython's input
    # history, agrees
    hana = dict(answers)
    hana["a3-part2-answer"] = "INTENSITY = {t: 0.25 * t for t in TILES}"
    submit(course, name, "hana", hana)
    nbgrader_cli(course, "autograde", name, "--create", "--force")
    # autograded points only (70); the justification (30) waits for the instructor
    assert scores(course, name) == {"alice": 70, "frank": 50, "grace": 60, "hana": 40}
    assert_notebook_equals_command(course, name, ["alice", "frank", "grace", "hana"])
    hana_nb = (course / "autograded" / "hana" / name / f"{name}.ipynb").read_text()
    assert "INTENSITY is computed by code, not written as a literal" in hana_nb
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        # alice wrote one: it waits for the instructor; frank left "YOUR ANSWER HERE": 0
        g = gb.find_grade("a3-justification", name, name, "alice")
        assert g.needs_manual_grade and g.max_score == 30 and g.auto_score is None
        g = gb.find_grade("a3-justification", name, name, "frank")
        assert not g.needs_manual_grade and g.auto_score == 0


def test_autograde_a4_coarsen(course):
    name = "a4_coarsen"
    a4 = SUBMISSIONS / "a4"
    submit(course, name, "alice", {"a4-kernel": solution_of(name, "a4-kernel")})
    submit(course, name, "bob", {"a4-kernel": kernel_cell(a4 / "bad_no_register_reuse.cu")})
    submit(course, name, "carol", {"a4-kernel": kernel_cell(a4 / "bad_untiled.cu")})
    submit(course, name, "dave", {})        # the release untouched: the skeleton
    submit(course, name, "erin", {"a4-kernel": kernel_cell(a4 / "bad_missing_barrier.cu")})
    nbgrader_cli(course, "autograde", name, "--create", "--force")
    # bob re-reads Bs[k][tx] for every output (8 B/FMA of shared loads, over 5): 100 - 25;
    # carol reads A and B from global memory: only the 30 correctness points; dave's
    # skeleton writes no C: 0; erin's missing second barrier costs the 15 of synchronisation
    assert scores(course, name) == {"alice": 100, "bob": 75, "carol": 30, "dave": 0,
                                    "erin": 85}
    graded = (course / "autograded" / "bob" / name / f"{name}.ipynb").read_text()
    assert "8 bytes of shared loads per FMA, over the target of 5" in graded
    assert_notebook_equals_command(course, name, ["alice", "bob", "carol", "dave", "erin"])
