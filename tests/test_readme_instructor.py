"""The README's instructor block runs exactly as written, from a copy of the repository.

The block is the fenced one after the line starting with ``<!-- instructor-block`` in
README.md. It is run with ``bash -euo pipefail`` in a copy of the repository's files (no
``.git``, no ``course/`` left over) whose ``.venv`` is this test's own virtual environment
(a symbolic link: the README's install line has already been run there), with the venv's
``bin/`` taken off the PATH, so the block must activate the venv itself, as an instructor's
fresh shell would. It needs nbgrader (the ``instructor`` extra): skipped without it, except
under ``CI=true``, where it fails.
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
    assert block.startswith("source .venv/bin/activate")
    assert "cp ../notebooks/assignments/nbgrader_config.py ." in block
    assert "python -m tilinglib.grading submitted --assignment a1_tiled_sgemm --gradebook" in block
    # the README explains what autograde prints and says which grade to trust
    text = README.read_text()
    assert "Attribute 'checksum' for cell" in text and "SAWarning" in text
    assert "The grade to trust is" in text and "envkernel" in text


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


def test_readme_instructor_block_runs_as_written(tmp_path):
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
    block = instructor_block(README.read_text())

    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    bindir = str(venv / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep)
                                  if p and Path(p).resolve() != Path(bindir).resolve())
    assert shutil.which("nbgrader", path=env["PATH"]) is None, \
        "nbgrader is on the PATH outside the venv: the test cannot check the activation"
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=clone, env=env,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL,
                            timeout=1200)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    assert "Success! Your notebook passes all the tests." in out
    assert "Success! The notebook does not pass any tests." in out

    course = clone / "course"
    assert (course / "nbgrader_config.py").read_text() == \
        (ROOT / "notebooks" / "assignments" / "nbgrader_config.py").read_text()
    with open(course / "grades.csv", newline="") as fh:
        rows = [(r["student"], r["assignment"], r["score"], r["max_score"], r["status"])
                for r in csv.DictReader(fh)]
    # bob handed in the student copy untouched: its answer cell is the skeleton, a literal
    # kernel that writes nothing.
    assert rows == [("alice", A1, "100", "100", "graded"), ("bob", A1, "0", "100", "graded")]
    assert "student,assignment,score,max_score,status,seconds" in result.stdout   # cat grades.csv
    for student in ("alice", "bob"):
        assert (course / "feedback" / student / f"{A1}.txt").is_file()

    # No cell is reported changed: the assignments have no hidden tests to strip, and neither
    # student edited a locked cell (the README says what the warning would mean).
    assert "Attribute 'checksum'" not in out, out[-3000:]

    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {s.student.id: s.score for s in gb.assignment_submissions(A1)}
    assert scores == {"alice": 100.0, "bob": 0.0}
