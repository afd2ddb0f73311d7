"""``python -m tilinglib.grading``: notebooks read, never run; each submission in a sandbox.

- `tilinglib.grading.extract`: answers are the literals of the answer cells; everything else
  in a cell is ignored and said so; a non-literal is no answer; broken notebooks are refused.
- `tilinglib.grading.sandbox`: a fake assignment registered by a ``--setup`` file checks the
  sandbox itself (CPU and wall-clock kills, memory cap, printing, environment, limits),
  independently of what the emulator does; a1 checks real grading (the reference kernel gets
  full marks, an empty kernel 0, a monkeypatching cell is never executed).
- `tilinglib.grading.cli`: grades.csv, feedback files, exit statuses, nbgrader's gradebook.
- CI's small version of ``bench/grade_class.py`` (22 submissions, hostile ones included).
"""

import csv
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from tilinglib.grading import assignments as assignments_module
from tilinglib.grading.assignments import ASSIGNMENTS
from tilinglib.grading.cli import (Submission, grade_submission, main, run_setup_files,
                                   write_gradebook)
from tilinglib.grading.extract import BadNotebook, extract_from_notebook, read_notebook
from tilinglib.grading.sandbox import Limits

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "tests" / "submissions"
A1 = "a1_tiled_sgemm"


def _load_bench():
    spec = importlib.util.spec_from_file_location("grade_class", ROOT / "bench" / "grade_class.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["grade_class"] = module
    spec.loader.exec_module(module)
    return module


bench = _load_bench()
REFERENCE = bench._reference_kernel()
EMPTY_NO_TILE = bench.EMPTY_NO_TILE
EMPTY_WITH_TILE = bench.EMPTY_WITH_TILE


def notebook(cells):
    """A notebook of code cells: each item (grade_id or None, source)."""
    nb = nbformat.v4.new_notebook()
    for grade_id, source in cells:
        cell = nbformat.v4.new_code_cell(source)
        if grade_id:
            cell.metadata["nbgrader"] = {"grade_id": grade_id, "solution": True,
                                         "grade": False, "locked": False, "schema_version": 3}
        nb.cells.append(cell)
    return nb


def submit(root: Path, student: str, assignment: str, cells) -> Path:
    folder = root / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{assignment}.ipynb"
    nbformat.write(notebook(cells), path)
    return path


def kernel_cell(kernel: str, before: str = "") -> str:
    return before + 'KERNEL = r"""\n' + kernel + '\n"""\n'


# --------------------------------------------------------------------------- fake assignments
FAKE_SETUP = '''
import json, os, resource, sys, time
from tilinglib.grading import Check, GradeReport
from tilinglib.grading.assignments import ASSIGNMENTS, Answer, Assignment

TABLE = {4: 128, 8: 512}

def numbers(a):
    x, table = a.get("X"), a.get("TABLE")
    return GradeReport("fake", (
        Check("X is 7", 5.0 if x == 7 else 0.0, 5.0, x == 7, "ok" if x == 7 else f"X is {x!r}"),
        Check("TABLE", 3.0 if table == TABLE else 0.0, 3.0, table == TABLE,
              "ok" if table == TABLE else f"TABLE is {table!r}")))

def spin(a):
    while True:
        pass

def sleep(a):
    time.sleep(3600)

def sleep_deaf(a):
    import signal
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGXCPU})
    time.sleep(3600)

def hog(a):
    blocks = []
    while True:
        blocks.append(bytearray(64 * 2**20))

def abort(a):
    os.abort()

def flood(a):
    for _ in range(20000):
        print("y" * 10000)
    os.write(1, b"written to fd 1 directly")
    return numbers(a)

def probe(a):
    try:
        stdin = sys.stdin.read()
    except Exception as exc:
        stdin = type(exc).__name__
    try:
        with open("big", "wb") as fh:
            fh.write(b"z" * (2 * 2**20))
        big = "written"
    except OSError as exc:
        big = f"OSError {exc.errno}"
    info = {"env": sorted(os.environ), "home": os.environ.get("HOME"), "cwd": os.getcwd(),
            "listing": sorted(os.listdir(".")), "stdin": stdin, "big_file": big,
            "limits": {name: list(resource.getrlimit(getattr(resource, name)))
                       for name in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_CORE",
                                    "RLIMIT_NPROC")}}
    return GradeReport("probe", (Check("probe", 1.0, 1.0, True, json.dumps(info)),))

ANSWERS = (Answer("X", "fake-answer", (int,)), Answer("TABLE", "fake-answer", (dict,)))
for name, grader in [("numbers", numbers), ("spin", spin), ("sleep", sleep),
                     ("sleep_deaf", sleep_deaf), ("hog", hog),
                     ("abort", abort), ("flood", flood), ("probe", probe)]:
    ASSIGNMENTS["fake_" + name] = Assignment("fake_" + name, ANSWERS, 8.0, grader)
'''
FAKE_CELL = "X = 7\nTABLE = {4: 128, 8: 512}\n"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """The fake assignments, registered here (a copy of ASSIGNMENTS, restored afterwards) and
    in every grading process through the setup file; returns the setup file's path."""
    monkeypatch.setattr(assignments_module, "ASSIGNMENTS", dict(ASSIGNMENTS))
    setup = tmp_path / "fake_assignments.py"
    setup.write_text(FAKE_SETUP)
    run_setup_files([setup])
    return setup


def grade_fake(tmp_path, name, setup, limits=Limits(wall_seconds=20, cpu_seconds=20),
               cell=FAKE_CELL):
    path = submit(tmp_path / "submitted", "alice", name, [("fake-answer", cell)])
    return grade_submission(Submission("alice", name, path), limits=limits, setup=(setup,))


# --------------------------------------------------------------------------- extraction
def test_answer_is_the_literal_and_the_rest_of_the_cell_is_ignored():
    cell = ("import numpy as np\ncheck_sgemm = lambda *a, **k: None\n"
            "np.allclose = lambda *a, **k: True\n" + kernel_cell(REFERENCE) + "print(KERNEL)\n")
    ex = extract_from_notebook(notebook([(None, "import tilinglib"), ("a1-kernel", cell)]),
                               ASSIGNMENTS[A1])
    assert ex.values == {"KERNEL": "\n" + REFERENCE + "\n"}
    assert eval(ex.sources["KERNEL"]) == ex.values["KERNEL"]
    ignored = [n for n in ex.notes if n.startswith("Ignored")]
    print_line = 3 + kernel_cell(REFERENCE).count("\n") + 1
    assert [n.split(":")[0] for n in ignored] == [
        "Ignored in cell 'a1-kernel', line 1", "Ignored in cell 'a1-kernel', line 2",
        "Ignored in cell 'a1-kernel', line 3", f"Ignored in cell 'a1-kernel', line {print_line}"]
    assert "check_sgemm = lambda *a, **k: None" in ignored[1]


@pytest.mark.parametrize("cell, says", [
    ("KERNEL = make_kernel()\n", "computes it ('make_kernel()')"),
    ('KERNEL = "#define TILE 16\\n" + BODY\n', "computes it"),
    ('KERNEL = r"""x"""\nKERNEL += "more"\n', "line 2 sets it with something that would have"),
    ("# YOUR CODE HERE\nraise NotImplementedError()\n", "never sets KERNEL"),
    ("KERNEL = 16\n", "its value has type int; the assignment asks for str"),
    ('KERNEL = r"""x"""\nif this is broken\n', "is not valid Python (line 2"),
])
def test_anything_but_a_literal_is_no_answer(cell, says):
    ex = extract_from_notebook(notebook([("a1-kernel", cell)]), ASSIGNMENTS[A1])
    assert ex.values == {} and ex.sources == {}
    assert any(says in n for n in ex.notes), ex.notes


def test_magics_parse_and_the_last_binding_wins():
    cell = '%load_ext autoreload\n!ls ~\nKERNEL = "first"\nKERNEL: str = """second"""\n'
    ex = extract_from_notebook(notebook([("a1-kernel", cell), (None, 'KERNEL = "other"')]),
                               ASSIGNMENTS[A1])
    assert ex.values == {"KERNEL": "second"}
    assert any("also set in code cell 2" in n for n in ex.notes)


def test_without_the_grade_id_every_code_cell_is_searched():
    nb = notebook([(None, 'KERNEL = "draft"'), (None, "x = 1"), (None, 'KERNEL = "final"')])
    ex = extract_from_notebook(nb, ASSIGNMENTS[A1])
    assert ex.values == {"KERNEL": "final"}
    assert any("No cell has the grade_id 'a1-kernel'" in n for n in ex.notes)
    assert any("read from code cell 3" in n for n in ex.notes)


def test_unreadable_notebooks_are_refused(tmp_path, monkeypatch):
    (tmp_path / "bad.ipynb").write_text('{"cells": [')
    os.symlink("/dev/zero", tmp_path / "link.ipynb")
    (tmp_path / "binary.ipynb").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "big.ipynb").write_text(" " * 8000)
    nbformat.write(notebook([(None, "x = 1\n" * 200)]), tmp_path / "long.ipynb")
    cases = {"bad.ipynb": "not valid notebook JSON", "link.ipynb": "not a regular file",
             "binary.ipynb": "not UTF-8", "big.ipynb": "over the 0 MiB a submitted file",
             "long.ipynb": r"cells hold 0.0 MiB of source, over the 0 MiB"}
    monkeypatch.setattr("tilinglib.grading.extract.MAX_FILE_BYTES", 6000)
    monkeypatch.setattr("tilinglib.grading.extract.MAX_NOTEBOOK_BYTES", 1000)
    for name, says in cases.items():
        with pytest.raises(BadNotebook, match=says):
            read_notebook(tmp_path / name)


def test_linked_folders_and_hard_links_are_refused_and_never_quoted(tmp_path, capsys,
                                                                     monkeypatch):
    """A7/A8: a symbolic link anywhere on the way to the notebook (student folder, assignment
    folder, notebook) hands in someone else's work, a hard link another file of the machine;
    both are bad_notebook, and a file that is not a notebook is never quoted."""
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "submitted"
    submit(root, "alice", A1, [("a1-kernel", kernel_cell(REFERENCE))])
    (root / "lnk").mkdir()
    os.symlink(f"../alice/{A1}", root / "lnk" / A1)                 # the assignment folder
    os.symlink("alice", root / "sl")                                 # the student folder
    os.symlink("/nowhere", root / "dangling")
    (root / "nb" / A1).mkdir(parents=True)
    os.symlink(f"../../alice/{A1}/{A1}.ipynb", root / "nb" / A1 / f"{A1}.ipynb")
    host = tmp_path / "host_passwd"                      # a file of the machine, outside DIR
    host.write_text("root:x:0:0:SECRET-LINE:/root:/bin/bash\n")
    (root / "hl" / A1).mkdir(parents=True)
    os.link(host, root / "hl" / A1 / f"{A1}.ipynb")
    (root / "text" / A1).mkdir(parents=True)
    shutil.copy(host, root / "text" / A1 / f"{A1}.ipynb")          # a copy: one link
    assert main([str(root), "--quiet", "--jobs", "2"]) == 0
    rows = {r["student"]: (r["status"], r["score"]) for r in read_csv(tmp_path / "grades.csv")}
    assert rows == {"alice": ("graded", "100"), "dangling": ("bad_notebook", "0"),
                    "hl": ("bad_notebook", "0"), "lnk": ("bad_notebook", "0"),
                    "nb": ("bad_notebook", "0"), "sl": ("bad_notebook", "0"),
                    "text": ("bad_notebook", "0")}

    def why(student):
        return (tmp_path / "feedback" / student / f"{A1}.txt").read_text()
    assert f"the assignment folder lnk/{A1}/ is a symbolic link (to ../alice/{A1})" in why("lnk")
    assert "the student folder sl/ is a symbolic link (to alice)" in why("sl")
    assert "the student folder dangling/ is a symbolic link" in why("dangling")
    assert f"the notebook nb/{A1}/{A1}.ipynb is a symbolic link" in why("nb")
    assert "is a hard link (2 names for one file): copy the file instead" in why("hl")
    assert (f"{A1}.ipynb is not a Jupyter notebook: not valid notebook JSON (Expecting value: "
            f"line 1 column 1 (char 0))") in why("text")
    for student in rows:
        assert "SECRET" not in why(student) and "root:x" not in why(student), student
    # nbformat's own message quotes the file: the reader never passes it on
    with pytest.raises(BadNotebook) as info:
        read_notebook(root / "text" / A1 / f"{A1}.ipynb")
    assert "root" not in str(info.value)
    (tmp_path / "obj.ipynb").write_text('{"secret": "SECRET-LINE"}')
    with pytest.raises(BadNotebook, match="valid JSON, but not an object with a list of "
                                          "cells") as info:
        read_notebook(tmp_path / "obj.ipynb")
    assert "SECRET" not in str(info.value)


# --------------------------------------------------------------------------- the sandbox
def test_answers_reach_the_grader_as_the_same_python_values(tmp_path, fake):
    r = grade_fake(tmp_path, "fake_numbers", fake)
    assert (r.outcome.status, r.outcome.score, r.outcome.max_score) == ("graded", 8.0, 8.0)
    wrong = grade_fake(tmp_path, "fake_numbers", fake, cell="X = 6\nTABLE = {'4': 128, 8: 512}")
    assert wrong.outcome.score == 0.0
    assert [c["message"] for c in wrong.outcome.checks] == ["X is 6",
                                                             "TABLE is {'4': 128, 8: 512}"]


def test_a_grader_that_spins_is_stopped_by_the_cpu_limit(tmp_path, fake):
    t0 = time.monotonic()
    r = grade_fake(tmp_path, "fake_spin", fake, limits=Limits(wall_seconds=30, cpu_seconds=2))
    assert r.outcome.status == "timeout" and r.outcome.score == 0.0
    assert "2 s of CPU time" in r.outcome.message
    assert time.monotonic() - t0 < 20


def test_a_grader_that_sleeps_is_stopped_by_the_wall_clock(tmp_path, fake):
    """Two seconds before the deadline the grading process stops itself and says so; one that
    does not listen (signals blocked) is killed by the parent at the deadline."""
    r = grade_fake(tmp_path, "fake_sleep", fake, limits=Limits(wall_seconds=5, cpu_seconds=60))
    assert r.outcome.status == "timeout" and r.outcome.score == 0.0
    assert "stopped after 5 s of wall-clock time" in r.outcome.message
    assert 3 <= r.outcome.seconds < 5
    t0 = time.monotonic()
    r = grade_fake(tmp_path, "fake_sleep_deaf", fake,
                   limits=Limits(wall_seconds=4, cpu_seconds=60))
    assert r.outcome.status == "timeout" and r.outcome.score == 0.0
    assert "stopped after 4 s of wall-clock time" in r.outcome.message
    assert 4 <= r.outcome.seconds < 6 and time.monotonic() - t0 < 10


def test_a_grader_that_allocates_without_end_hits_the_memory_cap(tmp_path, fake):
    limits = Limits(wall_seconds=30, cpu_seconds=30, memory_bytes=768 * 2**20)
    r = grade_fake(tmp_path, "fake_hog", fake, limits=limits)
    assert (r.outcome.status, r.outcome.score) == ("memory", 0.0)
    assert "0.75 GiB" in r.outcome.message


def test_a_grading_process_that_dies_is_crashed(tmp_path, fake):
    r = grade_fake(tmp_path, "fake_abort", fake)
    assert (r.outcome.status, r.outcome.score) == ("crashed", 0.0)
    assert "signal SIGABRT" in r.outcome.message


def test_printing_cannot_corrupt_the_report(tmp_path, fake):
    r = grade_fake(tmp_path, "fake_flood", fake)
    assert (r.outcome.status, r.outcome.score) == ("graded", 8.0)
    assert r.outcome.printed == 20000 * 10001
    assert len(r.outcome.output) == Limits().output_bytes
    assert "written to fd 1" not in r.outcome.output


def test_the_grading_process_sees_nothing_of_the_instructor(tmp_path, fake, monkeypatch):
    monkeypatch.setenv("INSTRUCTOR_SECRET_TOKEN", "hunter2")
    r = grade_fake(tmp_path, "fake_probe", fake,
                   limits=Limits(wall_seconds=20, cpu_seconds=17, memory_bytes=900 * 2**20))
    info = json.loads(r.outcome.checks[0]["message"])
    assert info["env"] == sorted(["PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "PYTHONPATH",
                                  "PYTHONHASHSEED", "PYTHONNOUSERSITE", "TILINGLIB_BACKEND",
                                  "TILINGLIB_CACHE_DIR",
                                  "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                  "MPLBACKEND", "MPLCONFIGDIR"])
    assert info["home"] == info["cwd"] != os.environ.get("HOME")
    assert info["cwd"].startswith(os.path.join(tempfile.gettempdir(), "tilinglib-grade-"))
    assert not os.path.exists(info["cwd"])           # removed after grading
    assert info["listing"] == ["big"]                # its own file only: the folder was empty
    assert info["stdin"] == ""                       # the request was read; stdin is at its end
    assert info["big_file"] == "OSError 27"          # EFBIG: RLIMIT_FSIZE of 1 MiB
    assert info["limits"]["RLIMIT_CPU"] == [17, 19]
    assert info["limits"]["RLIMIT_AS"] == [900 * 2**20] * 2
    assert info["limits"]["RLIMIT_FSIZE"] == [2**20] * 2
    assert info["limits"]["RLIMIT_CORE"] == [0, 0]
    assert info["limits"]["RLIMIT_NPROC"] == [0, 0]


def test_reference_kernel_full_marks_empty_kernel_zero(tmp_path):
    root = tmp_path / "submitted"
    good = submit(root, "alice", A1, [("a1-kernel", kernel_cell(REFERENCE))])
    empty = submit(root, "bob", A1, [("a1-kernel", kernel_cell(EMPTY_NO_TILE))])
    r_good = grade_submission(Submission("alice", A1, good))
    r_empty = grade_submission(Submission("bob", A1, empty))
    assert (r_good.outcome.status, r_good.outcome.score, r_good.outcome.max_score) == \
        ("graded", 100.0, 100.0)
    assert all(c["passed"] for c in r_good.outcome.checks)
    assert (r_empty.outcome.status, r_empty.outcome.score) == ("graded", 0.0)


def test_a_monkeypatching_cell_is_never_executed(tmp_path):
    """The issue's attack: the answer cell replaces check_sgemm and np.allclose and patches
    GradeReport.score, and hands in an empty kernel. Nothing of it runs: a file the cell would
    create is never created, and the score is the empty kernel's."""
    marker = tmp_path / "the_cell_ran"
    patch = (f"open({str(marker)!r}, 'w').write('ran')\n"
             "import numpy as np\nimport tilinglib.grading as g\n"
             "check_sgemm = lambda *a, **k: None\nnp.allclose = lambda *a, **k: True\n"
             "g.GradeReport.score = property(lambda self: 100.0)\n")
    root = tmp_path / "submitted"
    paths = {name: submit(root, name, A1, [("a1-kernel", kernel_cell(kernel, before=patch))])
             for name, kernel in [("mallory", EMPTY_NO_TILE), ("trudy", EMPTY_WITH_TILE)]}
    results = {n: grade_submission(Submission(n, A1, p)) for n, p in paths.items()}
    assert not marker.exists()
    assert (results["mallory"].outcome.status, results["mallory"].outcome.score) == \
        ("graded", 0.0)
    # The same empty kernel graded here, in this process, with nothing patched:
    alone = ASSIGNMENTS[A1].grade({"KERNEL": "\n" + EMPTY_WITH_TILE + "\n"})
    assert results["trudy"].outcome.score == alone.score <= 30
    assert any("check_sgemm = lambda" in n for n in results["trudy"].read_notes)


def test_endless_loop_kernel_ends_with_a_status(tmp_path):
    """A kernel whose loop never ends: the emulator's step budget ends it inside the grading
    process (a graded score, the same as graded here); the wall clock is the backstop."""
    source = (SUBMISSIONS / "bad_runaway_loop.cu").read_text()
    path = submit(tmp_path / "submitted", "eve", A1, [("a1-kernel", kernel_cell(source))])
    r = grade_submission(Submission("eve", A1, path), limits=Limits(wall_seconds=60))
    here = ASSIGNMENTS[A1].grade({"KERNEL": "\n" + source + "\n"})
    assert (r.outcome.status, r.outcome.score) == ("graded", here.score)
    killed = grade_submission(Submission("eve", A1, path),
                              limits=Limits(wall_seconds=0.2, cpu_seconds=1))
    assert (killed.outcome.status, killed.outcome.score) == ("timeout", 0.0)


# --------------------------------------------------------------------------- the command
def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_command_writes_grades_and_feedback(tmp_path, fake, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)                       # grades.json goes to the current folder
    root = tmp_path / "submitted"
    submit(root, "alice", "fake_numbers", [("fake-answer", FAKE_CELL)])
    submit(root, "bob", "fake_numbers", [("fake-answer", "X = 7\nimport os\nTABLE = f()\n")])
    submit(root, "carol", "fake_numbers", [("fake-answer", "# YOUR CODE HERE\n")])
    (root / "dave" / "fake_numbers").mkdir(parents=True)
    (root / "dave" / "fake_numbers" / "answers.ipynb").write_text("{}")
    (root / "erin").mkdir()
    (root / "frank" / "fake_numbers").mkdir(parents=True)
    (root / "frank" / "fake_numbers" / "fake_numbers.ipynb").write_text("not json")
    (root / "alice" / "old_homework").mkdir()
    out, fb = tmp_path / "grades.csv", tmp_path / "feedback"
    rc = main([str(root), "--out", str(out), "--feedback-dir", str(fb), "--jobs", "2",
               "--setup", str(fake), "--quiet"])
    assert rc == 0
    rows = [(r["student"], r["assignment"], r["score"], r["max_score"], r["status"])
            for r in read_csv(out)]
    assert rows == [("alice", "fake_numbers", "8", "8", "graded"),
                    ("bob", "fake_numbers", "5", "8", "graded"),
                    ("carol", "fake_numbers", "0", "8", "no_answer"),
                    ("dave", "fake_numbers", "0", "8", "missing_notebook"),
                    ("erin", "fake_numbers", "0", "8", "missing_notebook"),
                    ("frank", "fake_numbers", "0", "8", "bad_notebook")]
    assert list(read_csv(out)[0]) == ["student", "assignment", "score", "max_score", "status",
                                      "seconds"]
    captured = capsys.readouterr()
    err = captured.err
    # stdout is the SHA-256 of the results file, nothing else
    results_file = Path("grades.json")
    assert captured.out == hashlib.sha256(results_file.read_bytes()).hexdigest() + "\n"
    saved = json.loads(results_file.read_text())["results"]
    assert [(r["student"], r["outcome"]["status"], r["outcome"]["score"]) for r in saved] == \
        [("alice", "graded", 8.0), ("bob", "graded", 5.0), ("carol", "no_answer", 0.0),
         ("dave", "missing_notebook", 0.0), ("erin", "missing_notebook", 0.0),
         ("frank", "bad_notebook", 0.0)]
    assert "not graded (no such assignment): old_homework" in err
    assert "6 submissions: 2 graded, 1 no_answer, 2 missing_notebook, 1 bad_notebook" in err
    bob = (fb / "bob" / "fake_numbers.txt").read_text()
    assert "Score: 5 / 8   (graded)" in bob
    assert "  ok   X is 7  5/5" in bob and "  FAIL TABLE   0/3" in bob
    assert "TABLE is None" in bob
    assert "Ignored in cell 'fake-answer', line 2: 'import os'" in bob
    assert "TABLE: no literal answer" in bob
    assert "found answers.ipynb" in (fb / "dave" / "fake_numbers.txt").read_text()
    assert "nothing was handed in" in (fb / "erin" / "fake_numbers.txt").read_text()
    assert "not valid notebook JSON" in (fb / "frank" / "fake_numbers.txt").read_text()


def test_command_explains_what_it_cannot_do(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere"), "--quiet"]) == 2
    assert "is not a folder: give nbgrader's submitted/ folder" in capsys.readouterr().err
    (tmp_path / "alice").mkdir()
    assert main([str(tmp_path), "--assignment", "a9", "--quiet"]) == 2
    assert "unknown assignment 'a9'; known: a1_tiled_sgemm" in capsys.readouterr().err
    assert main([str(tmp_path), "--quiet"]) == 2
    assert "nothing to grade in" in capsys.readouterr().err
    assert main([str(tmp_path), "--jobs", "0", "--quiet"]) == 2
    assert "--jobs must be 1 or more" in capsys.readouterr().err


def test_scores_go_into_nbgraders_gradebook_from_the_saved_results(tmp_path, capsys):
    pytest.importorskip("nbgrader", reason="nbgrader comes with the instructor extra")
    from nbgrader.api import Gradebook

    test_assignments = pytest.importorskip("test_assignments")
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "notebooks" / "assignments" / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "notebooks" / "assignments" / A1, course / "source" / A1)
    test_assignments.nbgrader_cli(course, "generate_assignment", A1, "--force")
    submitted = course / "submitted"
    bug = (SUBMISSIONS / "bad_int32_index.cu").read_text()
    for student, kernel in [("alice", REFERENCE), ("bob", EMPTY_NO_TILE), ("carol", bug)]:
        test_assignments.submit(course, A1, student, {"a1-kernel": kernel_cell(kernel)})
    db = course / "gradebook.db"
    results = tmp_path / "grades.json"
    # The README's order: grade first (results saved), then, after autograde would have run,
    # fill the gradebook from the saved results, submitted/ no longer there to read.
    assert main([str(submitted), "--out", str(tmp_path / "g.csv"), "--feedback-dir",
                 str(tmp_path / "fb"), "--results", str(results), "--quiet"]) == 0
    digest = capsys.readouterr().out.strip()
    shutil.rmtree(submitted)
    saved = results.read_text()
    tampered = saved.replace('"score": 0.0', '"score": 100.0', 1)
    assert tampered != saved
    results.write_text(tampered)
    assert main(["--from", str(results), "--sha256", digest, "--gradebook", str(db)]) == 2
    assert "the file was changed after it was written" in capsys.readouterr().err
    results.write_text(saved)
    assert main(["--from", str(results), "--sha256", digest, "--gradebook", str(db)]) == 0
    assert "submitted/ was not read" in capsys.readouterr().err
    bug_score = ASSIGNMENTS[A1].grade({"KERNEL": "\n" + bug + "\n"}).score
    with Gradebook(f"sqlite:///{db}") as gb:
        got = {s.student.id: s.score for s in gb.assignment_submissions(A1)}
        comment = gb.find_comment("a1-kernel", A1, A1, "carol").manual_comment
        graded = gb.find_grade("a1-test-grader", A1, A1, "carol")
        assert got == {"alice": 100.0, "bob": 0.0, "carol": pytest.approx(bug_score)}
        assert graded.max_score == 100 and graded.manual_score == pytest.approx(bug_score)
        assert comment.startswith(f"python -m tilinglib.grading: {bug_score:g} / 100 (graded)")


def test_from_refuses_what_is_not_its_results_file(tmp_path, capsys):
    assert main(["--from", str(tmp_path / "none.json")]) == 2
    assert "--from RESULTS writes saved results into a gradebook: add --gradebook" in \
        capsys.readouterr().err
    assert main([str(tmp_path), "--from", "x.json", "--gradebook", "g.db"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["--quiet"]) == 2
    assert "give the folder to grade" in capsys.readouterr().err
    assert main(["--from", str(tmp_path / "none.json"), "--gradebook", "g.db"]) == 2
    assert "cannot read it" in capsys.readouterr().err
    cases = {"bad.json": "[1, 2", "other.json": '{"format": "something else", "results": []}',
             "status.json": json.dumps({"format": "tilinglib.grading results 1", "results": [
                 {"student": "a", "assignment": A1, "notebook": "x", "read_notes": [],
                  "outcome": {"status": "perfect", "score": 1, "max_score": 1}}]}),
             "unknown.json": json.dumps({"format": "tilinglib.grading results 1", "results": [
                 {"student": "a", "assignment": "a9", "notebook": "x",
                  "outcome": {"status": "graded", "score": 1, "max_score": 1}}]})}
    cases["cells.json"] = cases["status.json"].replace('"perfect"', '"graded"').replace(
        '"max_score": 1}', '"max_score": 1, "cells": [1]}')
    says = {"cells.json": "cells is not a table of points per cell",
            "bad.json": "not a results file of this command (JSONDecodeError",
            "other.json": "format is 'something else'", "status.json": "status 'perfect'",
            "unknown.json": "unknown assignment 'a9'"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert main(["--from", str(tmp_path / name), "--gradebook", "g.db"]) == 2, name
        assert says[name] in capsys.readouterr().err, name


def test_gradebook_without_the_assignment_says_what_to_run(tmp_path, monkeypatch):
    pytest.importorskip("nbgrader", reason="nbgrader comes with the instructor extra")
    from tilinglib.errors import GradingError
    from tilinglib.grading.cli import Result
    from tilinglib.grading.sandbox import Outcome

    from nbgrader.api import Gradebook

    result = Result(Submission("alice", A1, tmp_path / "x.ipynb"), Outcome("graded", 1, 100))
    with pytest.raises(GradingError, match="no gradebook at .*: run 'nbgrader generate_"):
        write_gradebook([result], tmp_path / "gradebook.db")
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent),
                                                os.environ.get("PATH", "")]))
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}"):
        pass                                            # an empty gradebook
    with pytest.raises(GradingError, match="run 'nbgrader generate_assignment a1_tiled_sgemm'"):
        write_gradebook([result], tmp_path / "gradebook.db")


# --------------------------------------------------------------------------- CI's small class
SMALL_CLASS = ["good_reference_tile8", "good_reference_tile32", "good_ternary",
               "good_no_metadata", "bad_int32_index", "bad_missing_second_barrier",
               "bad_runaway_loop", "empty_no_tile", "hostile_monkeypatch_empty",
               "hostile_monkeypatch_no_tile", "hostile_writes_grader_file",
               "hostile_nonliteral_open", "hostile_include_passwd", "hostile_macro_bomb",
               "hostile_endless_loop", "hostile_printf_flood", "hostile_bad_json",
               "hostile_symlink_dev_zero", "missing_notebook", "good_if_else",
               "hostile_linked_folder", "hostile_hard_link_host_file"]


def test_small_class_every_submission_graded_none_affected(tmp_path):
    """bench/grade_class.py at 22 submissions, one of each kind above, graded with the command
    (two at a time): one row each, hostile ones with their statuses, and every deterministic
    submission scored exactly as it is when graded alone."""
    plan = bench.build_class(tmp_path / "submitted", len(SMALL_CLASS), only=set(SMALL_CLASS))
    assert sorted(k.name for k in plan.values()) == sorted(SMALL_CLASS)
    rows, wall, proc, memory = bench.grade_command(tmp_path / "submitted", tmp_path, jobs=2,
                                                   timeout=60, memory_mib=1024)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the command's own figures (grades.json's run.memory)
    assert memory["peak_tree_rss_bytes"] > 0 and memory["peak_child_rss_bytes"] > 0
    secret = bench.class_secret(tmp_path / "submitted")    # the one the command made
    assert not secret.created
    alone = bench.grade_alone(plan, timeout=60, memory_mib=1024, secret=secret)
    assert bench.verify(plan, rows, alone, tmp_path / "feedback") == []
    by_kind = {plan[s].name: s for s in plan}

    def here(name):      # graded in this process on the inputs the class's secret draws
        student = by_kind[name]
        return bench.grade_here(tmp_path / "submitted" / student / A1 / f"{A1}.ipynb", A1,
                                secret)

    got = {plan[s].name: (r[0]["status"], float(r[0]["score"])) for s, r in rows.items()}
    for name in ["good_reference_tile8", "good_reference_tile32", "good_ternary",
                 "good_no_metadata", "good_if_else"]:
        assert got[name] == ("graded", 100.0), name
    assert got["empty_no_tile"] == got["hostile_monkeypatch_no_tile"] == ("graded", 0.0)
    for name in ["bad_int32_index", "bad_missing_second_barrier", "bad_runaway_loop"]:
        score = here(name)
        assert got[name] == ("graded", score), name
        assert name == "bad_runaway_loop" or 0 < score < 100, name
    empty = ASSIGNMENTS[A1].grade({"KERNEL": "\n" + EMPTY_WITH_TILE + "\n"}).score
    assert got["hostile_monkeypatch_empty"] == ("graded", empty) == ("graded", 0.0)
    assert got["hostile_writes_grader_file"] == ("graded", here("hostile_writes_grader_file"))
    bug = ASSIGNMENTS[A1].grade({"KERNEL": "\n" + (SUBMISSIONS / "bad_unguarded_store.cu")
                                 .read_text() + "\n"}).score
    assert got["hostile_writes_grader_file"][1] <= bug      # drawn shapes can only add faults
    assert got["hostile_nonliteral_open"] == ("no_kernel", 0.0)
    assert got["hostile_include_passwd"] == ("compile_error", 0.0)
    assert got["hostile_macro_bomb"][0] in {"compile_error", "timeout", "memory"}
    assert got["hostile_macro_bomb"][1] == 0.0
    assert got["hostile_endless_loop"][0] in {"graded", "timeout"}
    assert got["hostile_bad_json"] == got["hostile_symlink_dev_zero"] == ("bad_notebook", 0.0)
    assert got["missing_notebook"] == ("missing_notebook", 0.0)
    assert got["hostile_linked_folder"] == got["hostile_hard_link_host_file"] == \
        ("bad_notebook", 0.0)


def test_each_test_cell_gets_the_points_of_what_it_grades():
    # a2: the boundary line right (5 points), the barrier line wrong (line 17, the loop's
    # closing brace: the race stays), no fixed kernel (0 of 90).
    spec = ASSIGNMENTS["a2_fix_the_kernel"]
    report, cells = spec.grade_cells({"BOUNDARY_BUG_LINE": 13,
                                      "BARRIER_MISSING_AFTER_LINE": 17})
    assert cells == {"a2-test-boundary": 5.0, "a2-test-barrier": 0.0, "a2-test-grader": 0.0}
    assert report.score == 5.0 and report.max_score == 100.0
    # One part: the whole score is that cell's.
    report, cells = ASSIGNMENTS[A1].grade_cells({"KERNEL": REFERENCE})
    assert cells == {"a1-test-grader": 100.0} and report.score == 100.0
