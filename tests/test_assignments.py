"""The instructor's flow with nbgrader, on the assignments in notebooks/assignments/.

Each assignment is ``notebooks/assignments/<name>/<name>.ipynb``, an nbgrader *source*
notebook. In a temporary course directory (never in the repository) these tests run what an
instructor runs: ``nbgrader generate_assignment`` (solutions and hidden tests stripped),
``nbgrader validate`` on the source (it must pass) and ``--invert`` on the release (every
test must fail), and ``nbgrader autograde`` on submissions made from the release: correct
ones get full marks, faulty ones the score their mistakes are worth.

nbgrader comes with the ``instructor`` extra (``pip install -e ".[instructor]"``); without
it these tests are skipped. ``.ci/run`` installs it, so CI runs them.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

nbgrader = pytest.importorskip(
    "nbgrader", reason="nbgrader is not installed: it comes with the instructor extra "
                       "(pip install -e '.[instructor]'); .ci/run installs it")
import nbformat  # noqa: E402  (after the skip: only needed with nbgrader)

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = ROOT / "notebooks" / "assignments"
NAMES = ["a1_tiled_sgemm", "a2_fix_the_kernel", "a3_choose_tile"]
SUBMISSIONS = ROOT / "tests" / "submissions"


def nbgrader_cli(course: Path, *args) -> str:
    """Run ``nbgrader <args>`` in `course`; return stdout and stderr together."""
    env = dict(os.environ)
    # nbgrader calls the `alembic` command (its database migrations): find this venv's.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args,
                             f"--CourseDirectory.root={course}"],
                            cwd=course, env=env, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=600)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    return out


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course directory with the three assignments in source/ and generated in release/."""
    root = tmp_path_factory.mktemp("course")
    (root / "nbgrader_config.py").write_text(
        'c = get_config()\nc.CourseDirectory.course_id = "tiling"\n')
    for name in NAMES:
        shutil.copytree(ASSIGNMENTS / name, root / "source" / name)
        nbgrader_cli(root, "generate_assignment", name, "--force")
    return root


def cells(nb, grade_id=None):
    return [c for c in nb.cells
            if grade_id is None or c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]


def solution_of(name: str, grade_id: str) -> str:
    """The instructor's solution in cell `grade_id` of the source notebook, markers removed."""
    nb = nbformat.read(ASSIGNMENTS / name / f"{name}.ipynb", as_version=4)
    (cell,) = cells(nb, grade_id)
    return "\n".join(line for line in cell.source.splitlines()
                     if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)


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


def kernel_cell(path: Path) -> str:
    return 'KERNEL = r"""\n' + path.read_text() + '\n"""'


def test_every_assignment_is_here():
    assert sorted(p.name for p in ASSIGNMENTS.iterdir() if p.is_dir()) == NAMES
    for name in NAMES:
        nb = nbformat.read(ASSIGNMENTS / name / f"{name}.ipynb", as_version=4)
        text = "\n".join(c.source for c in nb.cells)
        assert nb.cells[0].source.startswith("# Assignment"), name
        assert "### BEGIN SOLUTION" in text and "### BEGIN HIDDEN TESTS" in text, name
        assert sum(c.metadata["nbgrader"].get("points", 0) for c in nb.cells) == 100, name


@pytest.mark.parametrize("name", NAMES)
def test_release_has_no_solutions_or_hidden_tests(course, name):
    release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
    source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
    text = "\n".join(c.source for c in release.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert "raise NotImplementedError()" in text
    assert len(release.cells) == len(source.cells)
    for cell in cells(source):
        if "### BEGIN SOLUTION" in cell.source:
            body = solution_of(name, cell.metadata["nbgrader"]["grade_id"]).strip()
            assert body.splitlines()[0] not in text


@pytest.mark.parametrize("name", NAMES)
def test_source_notebook_validates(course, name):
    out = nbgrader_cli(course, "validate", str(course / "source" / name / f"{name}.ipynb"))
    assert "Success! Your notebook passes all the tests." in out, out


@pytest.mark.parametrize("name", NAMES)
def test_released_notebook_fails_its_tests(course, name):
    out = nbgrader_cli(course, "validate", "--invert",
                       str(course / "release" / name / f"{name}.ipynb"))
    assert "Success! The notebook does not pass any tests." in out, out


def test_autograde_assignment_1(course):
    name = "a1_tiled_sgemm"
    submit(course, name, "alice", {"a1-kernel": kernel_cell(SUBMISSIONS / "good_if_else.cu")})
    submit(course, name, "bob", {"a1-kernel": kernel_cell(SUBMISSIONS / "bad_int32_index.cu")})
    submit(course, name, "carol",
           {"a1-kernel": kernel_cell(SUBMISSIONS / "bad_missing_second_barrier.cu")})
    submit(course, name, "dave", {})        # handed in the release untouched
    nbgrader_cli(course, "autograde", name, "--create", "--force")
    # bob: visible tests pass (10) + 90% of 90 (the 32-bit index check costs 10 of 100);
    # carol: the visible tests raise the race (0) + 85% of 90.
    assert scores(course, name) == {"alice": 100, "bob": 91, "carol": 76.5, "dave": 0}
    graded = (course / "autograded" / "carol" / name / f"{name}.ipynb").read_text()
    assert "write-after-read" in graded


def test_autograde_assignment_2(course):
    name = "a2_fix_the_kernel"
    submit(course, name, "alice", {"a2-lines-answer": solution_of(name, "a2-lines-answer"),
                                   "a2-fix-answer": solution_of(name, "a2-fix-answer")})
    # erin found the lines and the barrier, but not the boundary bug
    submit(course, name, "erin", {
        "a2-lines-answer": "BOUNDARY_BUG_LINE = 13\nBARRIER_MISSING_AFTER_LINE = 17",
        "a2-fix-answer": 'FIXED_KERNEL = BUGGY_KERNEL.replace(\n'
                         '    "            sum += As[ty][k] * Bs[k][tx];\\n    }",\n'
                         '    "            sum += As[ty][k] * Bs[k][tx];\\n'
                         '        __syncthreads();\\n    }")'})
    nbgrader_cli(course, "autograde", name, "--create", "--force")
    got = scores(course, name)
    assert got["alice"] == 100
    # erin: lines 10; visible tests hit the out-of-bounds read of B (0); in the grader every
    # case with N not a multiple of 16 reads past B (1x1x1, TILE+-1, primes, tall and wide,
    # long K: -45), so the race and shared-memory checks cannot finish (-25): 30 of 100,
    # 24 of 80.
    assert got["erin"] == 10 + 24


def test_autograde_assignment_3(course):
    name = "a3_choose_tile"
    answers = {gid: solution_of(name, gid)
               for gid in ("a3-part1-answer", "a3-part2-answer", "a3-part3-answer")}
    submit(course, name, "alice", answers)
    wrong = dict(answers)
    wrong["a3-part3-answer"] = answers["a3-part3-answer"].replace(
        "CHOSEN_TILE = max(GFLOPS, key=GFLOPS.get)", "CHOSEN_TILE = 16")
    submit(course, name, "frank", wrong)
    nbgrader_cli(course, "autograde", name, "--create", "--force")
    assert scores(course, name) == {"alice": 100, "frank": 50}
