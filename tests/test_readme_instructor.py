"""The README's instructor block runs exactly as written, from a copy of the repository.

The block is the fenced one after the line starting with ``<!-- instructor-block`` in
README.md (a subshell with ``set -euo pipefail``: it stops at its first failure). It is run
with ``bash -euo pipefail`` (or plain ``bash``, to check the block's own ``set -e``) in a copy of
the repository's files (no
``.git``, no ``course/`` left over) whose ``.venv`` is this test's own virtual environment
(a symbolic link: the README's install line has already been run there), with the venv's
``bin/`` taken off the PATH, so the block must activate the venv itself, as an instructor's
fresh shell would. It needs nbgrader (the ``instructor`` extra): skipped without it, except
under ``CI=true``, where it fails. Variants: the venv's commands called by path; a notebook
nbgrader's autograde refuses (a duplicated answer cell); a failing grading step; step 2 in
the README's bubblewrap sandbox (skipped where ``bwrap`` is missing or cannot run).
"""

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
A1 = "a1_tiled_sgemm"


def instructor_block(text: str) -> str:
    """The fenced block after the ``<!-- instructor-block`` line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("<!-- instructor-block"))
    open_ = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    close = next(i for i in range(open_ + 1, len(lines)) if lines[i].startswith("```"))
    return "\n".join(lines[open_ + 1:close]) + "\n"


def test_block_makes_its_config_activates_the_venv_and_grades_with_the_command():
    block = instructor_block(README.read_text())
    lines = block.splitlines()
    # a subshell that stops at the first failure, then the venv
    assert lines[0].startswith("(") and lines[1] == "set -euo pipefail" and lines[-1] == ")"
    assert lines[2].startswith("source .venv/bin/activate")
    assert "cp ../notebooks/assignments/nbgrader_config.py ." in block
    # autograde one student at a time, a refused notebook stopping only its own
    loop = next(i for i, line in enumerate(lines) if line.startswith("for dir in submitted/*/"))
    assert "--student \"$student\"" in lines[loop + 2] and lines[loop + 3].strip().startswith("||")
    # the trusted grade is computed before autograde runs any student code, and the
    # gradebook is filled afterwards from the saved results, not from submitted/
    lines = block.splitlines()
    grade = next(i for i, line in enumerate(lines)
                 if "python -m tilinglib.grading submitted --assignment a1_tiled_sgemm" in line)
    autograde = next(i for i, line in enumerate(lines) if "nbgrader autograde" in line)
    fill = next(i for i, line in enumerate(lines) if "--from grades.json" in line)
    assert grade < autograde < fill
    assert lines[grade].startswith("sha=$(") and '--sha256 "$sha"' in lines[fill]
    assert "submitted" not in lines[fill].split("#")[0]
    # the README explains what autograde prints and says which grade to trust
    text = README.read_text()
    assert "Attribute 'checksum' for cell" in text and "SAWarning" in text
    assert "Kernel is running over TCP without encryption" in text
    assert "The grade to trust is" in text and "envkernel" in text
    assert "Order matters" in text and "never as root" in text
    assert "/course/" in (ROOT / ".gitignore").read_text().splitlines()


def _need_nbgrader():
    try:
        import nbgrader  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("nbgrader is not installed, and CI=true: install the instructor extra "
                        "(.ci/run does)")
        pytest.skip("nbgrader is not installed: it comes with the instructor extra "
                    "(pip install -e '.[instructor]')")


def _copy_of_repository(dest: Path) -> None:
    skip = shutil.ignore_patterns(".git", ".venv", "course", "artifacts", "__pycache__",
                                  "*.egg-info", ".pytest_cache", ".ipynb_checkpoints")
    shutil.copytree(ROOT, dest, ignore=skip, symlinks=True)


def sandbox_block(text: str) -> str:
    """The fenced block after the ``<!-- sandbox-block`` line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("<!-- sandbox-block"))
    open_ = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    close = next(i for i in range(open_ + 1, len(lines)) if lines[i].startswith("```"))
    return "\n".join(lines[open_ + 1:close])


def _step_2(lines: list) -> tuple:
    """(first, last + 1): the lines of the block's autograde loop."""
    first = next(i for i, line in enumerate(lines) if line.startswith("for dir in submitted/*/"))
    last = next(i for i in range(first, len(lines)) if lines[i] == "done")
    return first, last + 1


def _run_block(tmp_path, block: str, extra_env=None, flags=("-euo", "pipefail")):
    """Run `block` in a fresh copy of the repository, the venv activated by the block
    itself (with bash `flags`); returns (the clone, the completed process)."""
    _need_nbgrader()
    venv = Path(sys.prefix)
    if not (venv / "bin" / "activate").is_file() or not (venv / "bin" / "nbgrader").is_file():
        message = f"this test runs in {venv}, which is not a venv with nbgrader's command"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    clone = tmp_path / "clone"
    _copy_of_repository(clone)
    (clone / ".venv").symlink_to(venv, target_is_directory=True)

    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env.update(extra_env or {})
    bindir = str(venv / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep)
                                  if p and Path(p).resolve() != Path(bindir).resolve())
    assert shutil.which("nbgrader", path=env["PATH"]) is None, \
        "nbgrader is on the PATH outside the venv: the test cannot check the activation"
    result = subprocess.run(["bash", *flags, "-c", block], cwd=clone, env=env,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL,
                            timeout=1200)
    return clone, result


def _grades(course: Path) -> list:
    with open(course / "grades.csv", newline="") as fh:
        return [(r["student"], r["assignment"], r["score"], r["max_score"], r["status"])
                for r in csv.DictReader(fh)]


def _gradebook_scores(course: Path) -> dict:
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions(A1)}


def test_readme_instructor_block_runs_as_written(tmp_path):
    block = instructor_block(README.read_text())
    clone, result = _run_block(tmp_path, block)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    assert "Success! Your notebook passes all the tests." in out
    assert "Success! The notebook does not pass any tests." in out

    course = clone / "course"
    assert (course / "nbgrader_config.py").read_text() == \
        (ROOT / "notebooks" / "assignments" / "nbgrader_config.py").read_text()
    rows = _grades(course)
    # bob handed in the student copy untouched: its answer cell is the skeleton, a literal
    # kernel that writes nothing.
    assert rows == [("alice", A1, "100", "100", "graded"), ("bob", A1, "0", "100", "graded")]
    assert "student,assignment,score,max_score,status,seconds" in result.stdout   # cat grades.csv
    for student in ("alice", "bob"):
        assert (course / "feedback" / student / f"{A1}.txt").is_file()

    # No cell is reported changed: the assignments have no hidden tests to strip, and neither
    # student edited a locked cell (the README says what the warning would mean).
    assert "Attribute 'checksum'" not in out, out[-3000:]

    assert "written into gradebook.db; submitted/ was not read" in result.stderr
    assert _gradebook_scores(course) == {"alice": 100.0, "bob": 0.0}


# Mallory's answer cell: the skeleton (a literal kernel that writes nothing, 0 points), then
# code that only nbgrader's autograde runs, in course/autograded/mallory/a1_tiled_sgemm/: it
# copies the instructor's solution over her own submitted notebook and blanks alice's kernel.
ATTACK_CELL = r"""
import json as _json, os as _os, shutil as _shutil
_course = _os.path.abspath("../../..")
_sub = _course + "/submitted"
_shutil.copy(_course + "/source/a1_tiled_sgemm/a1_tiled_sgemm.ipynb",
             _sub + "/mallory/a1_tiled_sgemm/a1_tiled_sgemm.ipynb")
_victim = _sub + "/alice/a1_tiled_sgemm/a1_tiled_sgemm.ipynb"
_nb = _json.load(open(_victim))
for _cell in _nb["cells"]:
    if _cell["metadata"].get("nbgrader", {}).get("grade_id") == "a1-kernel":
        _cell["source"] = "KERNEL = ''\n"
_json.dump(_nb, open(_victim, "w"))
open(_course + "/mallory_ran", "w").write("yes")
"""

MAKE_MALLORY = r"""
import json, os, sys
nb = json.load(open("release/a1_tiled_sgemm/a1_tiled_sgemm.ipynb"))
for cell in nb["cells"]:
    if cell["metadata"].get("nbgrader", {}).get("grade_id") == "a1-kernel":
        cell["source"] = "".join(cell["source"]) + open(sys.argv[1]).read()
os.makedirs("submitted/mallory/a1_tiled_sgemm", exist_ok=True)
json.dump(nb, open("submitted/mallory/a1_tiled_sgemm/a1_tiled_sgemm.ipynb", "w"))
"""


def test_a_cell_that_rewrites_submitted_during_autograde_changes_no_trusted_grade(tmp_path):
    """A6: the README's block with a third student, mallory, whose cell (run by autograde,
    after the command graded everyone) rewrites submitted/: grades.csv and the gradebook keep
    the scores the command gave before any student code ran."""
    lines = _with_mallory(instructor_block(README.read_text()).splitlines(), tmp_path)
    clone, result = _run_block(tmp_path, "\n".join(lines) + "\n",
                               {"ATTACK_DIR": str(tmp_path)})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    course = clone / "course"
    # the attack ran, and did what it meant to: submitted/ is not what was handed in
    assert (course / "mallory_ran").read_text() == "yes", out[-3000:]
    alice = (course / "submitted" / "alice" / A1 / f"{A1}.ipynb").read_text()
    mallory = (course / "submitted" / "mallory" / A1 / f"{A1}.ipynb").read_text()
    assert "KERNEL = ''" in alice and "BEGIN SOLUTION" in mallory
    # the trusted grades are those of what was handed in
    assert _grades(course) == [("alice", A1, "100", "100", "graded"),
                               ("bob", A1, "0", "100", "graded"),
                               ("mallory", A1, "0", "100", "graded")]
    assert _gradebook_scores(course) == {"alice": 100.0, "bob": 0.0, "mallory": 0.0}


def _with_mallory(lines: list, attack_dir: Path) -> list:
    (attack_dir / "attack.py").write_text(ATTACK_CELL)
    (attack_dir / "make_mallory.py").write_text(MAKE_MALLORY)
    lines = list(lines)
    after = next(i for i, line in enumerate(lines) if line.startswith("cp release/"))
    lines.insert(after + 1, 'python "$ATTACK_DIR/make_mallory.py" "$ATTACK_DIR/attack.py"')
    return lines


MAKE_DUPLICATE = r"""
import json, os
nb = json.load(open("source/a1_tiled_sgemm/a1_tiled_sgemm.ipynb"))
cell = next(c for c in nb["cells"]
            if c["metadata"].get("nbgrader", {}).get("grade_id") == "a1-kernel")
nb["cells"].append(json.loads(json.dumps(cell)))
os.makedirs("submitted/aaron/a1_tiled_sgemm", exist_ok=True)
json.dump(nb, open("submitted/aaron/a1_tiled_sgemm/a1_tiled_sgemm.ipynb", "w"))
"""


def test_by_path_without_the_venv_and_a_notebook_autograde_refuses(tmp_path):
    """The block with the venv's commands called by path (no activation: the course's
    nbgrader_config.py puts the venv on nbgrader's PATH for its alembic), and a first student,
    aaron, whose notebook has the answer cell twice: nbgrader's autograde refuses it ('Duplicate
    grade id', which stopped it for every student after him), the loop goes on, the command
    grades him (the solution twice: 100) and names the duplicate in his feedback."""
    (tmp_path / "make_duplicate.py").write_text(MAKE_DUPLICATE)
    lines = [line for line in instructor_block(README.read_text()).splitlines()
             if not line.startswith("source .venv/bin/activate")]
    lines = [re.sub(r"(^\s*|\$\()(nbgrader|python) ", r"\1../.venv/bin/\2 ", line)
             for line in lines]
    assert sum("../.venv/bin/nbgrader " in line for line in lines) == 4
    assert sum("../.venv/bin/python -m tilinglib.grading" in line for line in lines) == 2
    after = next(i for i, line in enumerate(lines) if line.startswith("cp release/"))
    lines.insert(after + 1, '../.venv/bin/python "$ATTACK_DIR/make_duplicate.py"')
    clone, result = _run_block(tmp_path, "\n".join(lines) + "\n", {"ATTACK_DIR": str(tmp_path)})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    course = clone / "course"
    assert "autograde failed for aaron" in result.stderr
    assert "Duplicate grade id" in out or "exists multiple times" in out
    assert sorted(p.name for p in (course / "autograded").iterdir()) == ["alice", "bob"]
    assert _grades(course) == [("aaron", A1, "100", "100", "graded"),
                               ("alice", A1, "100", "100", "graded"),
                               ("bob", A1, "0", "100", "graded")]
    assert "appears 2 times" in (course / "feedback" / "aaron" / f"{A1}.txt").read_text()
    assert _gradebook_scores(course) == {"aaron": 100.0, "alice": 100.0, "bob": 0.0}


def test_the_block_stops_at_its_first_failure(tmp_path):
    """Run by plain bash (no -e of the test's own): a grading step that fails stops the block
    there, so autograde never runs and the gradebook is not filled."""
    block = instructor_block(README.read_text()).replace(
        "--assignment a1_tiled_sgemm)", "--assignment no_such_assignment)")
    clone, result = _run_block(tmp_path, block, flags=())
    course = clone / "course"
    assert result.returncode != 0
    assert "unknown assignment 'no_such_assignment'" in result.stderr
    assert not (course / "autograded").exists() and not (course / "grades.csv").exists()
    assert "written into gradebook.db" not in result.stderr


def _bwrap_runs() -> bool:
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                            "--unshare-all", "--cap-drop", "ALL", "true"],
                           capture_output=True, timeout=60)
    return probe.returncode == 0


def test_the_sandbox_block_keeps_submitted_out_of_a_cells_reach(tmp_path):
    """The block with step 2 replaced by the README's bubblewrap loop, and mallory's cell:
    in the sandbox it cannot write submitted/ (nor see alice's folder), so both notebooks stay
    as handed in; the grades and the gradebook are the command's."""
    if not _bwrap_runs():
        pytest.skip("bubblewrap (bwrap) is not installed here, or cannot make its namespaces: "
                    "sudo apt install bubblewrap")
    lines = instructor_block(README.read_text()).splitlines()
    first, end = _step_2(lines)
    lines[first:end] = sandbox_block(README.read_text()).splitlines()
    lines = _with_mallory(lines, tmp_path)
    clone, result = _run_block(tmp_path, "\n".join(lines) + "\n", {"ATTACK_DIR": str(tmp_path)})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    course = clone / "course"
    assert (course / "autograded").is_dir(), out[-3000:]
    assert sorted(p.name for p in (course / "autograded").iterdir()) == ["alice", "bob",
                                                                        "mallory"]
    assert not (course / "mallory_ran").exists(), out[-3000:]
    alice = (course / "submitted" / "alice" / A1 / f"{A1}.ipynb").read_text()
    mallory = (course / "submitted" / "mallory" / A1 / f"{A1}.ipynb").read_text()
    assert "KERNEL = ''" not in alice and "BEGIN SOLUTION" not in mallory
    # her cell ran, and its first write failed there
    ran = (course / "autograded" / "mallory" / A1 / f"{A1}.ipynb").read_text()
    assert "Read-only file system" in ran
    assert _grades(course) == [("alice", A1, "100", "100", "graded"),
                               ("bob", A1, "0", "100", "graded"),
                               ("mallory", A1, "0", "100", "graded")]
    assert _gradebook_scores(course) == {"alice": 100.0, "bob": 0.0, "mallory": 0.0}
