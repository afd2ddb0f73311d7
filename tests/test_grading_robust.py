"""``python -m tilinglib.grading``: nothing a student sends breaks or stalls the run.

Each test is an attack from issue 18, graded for real (the a1 reference kernel of
``bench/grade_class.py`` through the command or `grade_submission`), with the status and score
it must end with:

- a student folder whose name is not valid UTF-8: a row ``bad_name`` 0, written with
  errors='backslashreplace' in grades.csv, grades.json, the feedback and stderr;
- an answer cell of 499 ``%time`` lines: IPython's transformer runs inside the grading
  process, so the time limit stops it (timeout 0), and `seconds` is the whole wall time;
- a kernel plus thousands of ignored statements: graded 100, the notes capped at 20 and a
  count; one too big for the memory limit ends ``memory`` 0;
- a correct kernel whose notebook carries 21 MiB of outputs: graded 100 (outputs are dropped
  before the size rule, which applies to sources);
- the run's peak memory (the whole process tree) printed and kept in grades.json.
"""

import csv
import json
import os
import time
from pathlib import Path

import nbformat
import pytest

from tilinglib.grading.cli import Submission, feedback_text, grade_submission, main
from tilinglib.grading.names import capped, listing, printable, shown_name
from tilinglib.grading.sandbox import Limits

from test_grading_cli import A1, REFERENCE, kernel_cell, notebook, submit


def _csv(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as fh:
        return [(r["student"], r["assignment"], r["score"], r["status"])
                for r in csv.DictReader(fh)]


def _run(tmp_path, *extra) -> tuple:
    out = tmp_path / "out"
    rc = main([str(tmp_path / "submitted"), "--quiet", "--jobs", "2",
               "--out", str(out / "grades.csv"), "--results", str(out / "grades.json"),
               "--feedback-dir", str(out / "feedback"), *extra])
    return rc, out


# --------------------------------------------------------------------------- names
def test_names_are_written_with_backslashreplace_and_lists_are_capped():
    bad = os.fsdecode(b"caf\xe9")
    assert shown_name(bad) == "caf\\xe9" and shown_name("café") == "café"
    assert shown_name("\ud800x") == "\\ud800x"          # a surrogate that is no byte
    assert printable("a\nb\x1b[2J") == "a\\x0ab\\x1b[2J"
    assert capped([str(i) for i in range(25)]) == [str(i) for i in range(20)] + ["... and 5 more"]
    assert capped(["a", "b"]) == ["a", "b"]
    assert listing([f"n{i}" for i in range(3000)]).endswith("n19 and 2,980 more")


def test_a_folder_name_that_is_not_utf8_gets_a_row_and_breaks_nothing(tmp_path, capsys):
    root = tmp_path / "submitted"
    submit(root, "alice", A1, [("a1-kernel", kernel_cell(REFERENCE))])
    submit(root, os.fsdecode(b"caf\xe9"), A1, [("a1-kernel", kernel_cell(REFERENCE))])
    # bob: no notebook of the assignment's name, but one whose name is not UTF-8, and a
    # folder named after no assignment, not UTF-8 either
    (root / "bob" / A1).mkdir(parents=True)
    (root / "bob" / A1 / os.fsdecode(b"mine\xff.ipynb")).write_text("{}")
    (root / "bob" / os.fsdecode(b"extra\xfe")).mkdir()
    rc, out = _run(tmp_path)
    err = capsys.readouterr().err
    assert rc == 0, err
    assert _csv(out / "grades.csv") == [("alice", A1, "100", "graded"),
                                        ("bob", A1, "0", "missing_notebook"),
                                        ("caf\\xe9", A1, "0", "bad_name")]
    results = json.loads((out / "grades.json").read_text(encoding="utf-8"))["results"]
    assert [r["student"] for r in results] == ["alice", "bob", "caf\\xe9"]
    bad = results[2]["outcome"]
    assert bad["status"] == "bad_name" and "not valid UTF-8" in bad["message"]
    assert "mine\\xff.ipynb" in results[1]["outcome"]["message"]
    feedback = (out / "feedback" / "caf\\xe9" / f"{A1}.txt").read_text(encoding="utf-8")
    assert "student caf\\xe9" in feedback and "Score: 0 / 100" in feedback
    assert "mine\\xff.ipynb" in (out / "feedback" / "bob" / f"{A1}.txt").read_text()
    assert "not graded (no such assignment): extra\\xfe" in err
    assert "3 submissions: 1 graded, 1 missing_notebook, 1 bad_name" in err


def test_three_thousand_strange_folders_make_one_short_stderr_line(tmp_path, capsys):
    root = tmp_path / "submitted"
    submit(root, "alice", A1, [("a1-kernel", kernel_cell(REFERENCE))])
    for i in range(3000):
        (root / "alice" / f"junk{i:04d}").mkdir()
    rc, _ = _run(tmp_path)
    line = next(x for x in capsys.readouterr().err.splitlines() if "no such assignment" in x)
    assert rc == 0
    assert line.endswith("junk0019 and 2,980 more") and len(line) < 400


# --------------------------------------------------------------------------- time
def test_an_answer_cell_of_499_time_magics_is_stopped_by_the_time_limit(tmp_path):
    """IPython's transformer re-tokenises the whole cell once per magic (quadratic): 527 s in
    the parent before, outside every limit; now it runs in the grading process and the
    wall-clock limit stops it, and `seconds` says how long the submission took."""
    cell = kernel_cell(REFERENCE) + ("%time " + "x" * 600 + "\n") * 499
    path = submit(tmp_path / "submitted", "timer", A1, [("a1-kernel", cell)])
    t0 = time.monotonic()
    r = grade_submission(Submission("timer", A1, path),
                         limits=Limits(wall_seconds=6, cpu_seconds=6))
    took = time.monotonic() - t0
    assert (r.outcome.status, r.outcome.score) == ("timeout", 0.0), r.outcome.message
    assert took < 9
    assert 3.5 <= r.outcome.seconds <= took


def test_seconds_is_the_whole_submission_including_reading_it(tmp_path):
    path = submit(tmp_path / "submitted", "alice", A1, [("a1-kernel", kernel_cell(REFERENCE))])
    t0 = time.monotonic()
    r = grade_submission(Submission("alice", A1, path))
    took = time.monotonic() - t0
    assert (r.outcome.status, r.outcome.score) == ("graded", 100.0)
    assert 0.9 * took <= r.outcome.seconds <= took


# --------------------------------------------------------------------------- size
def test_a_kernel_with_thousands_of_ignored_statements_gets_twenty_notes(tmp_path):
    cell = kernel_cell(REFERENCE) + "x = 1\n" * 5000
    path = submit(tmp_path / "submitted", "many", A1, [("a1-kernel", cell)])
    r = grade_submission(Submission("many", A1, path))
    assert (r.outcome.status, r.outcome.score) == ("graded", 100.0)
    ignored = [n for n in r.read_notes if n.startswith("Ignored")]
    first = kernel_cell(REFERENCE).count("\n") + 1          # the line after the kernel
    assert len(ignored) == 20
    assert ignored[0].startswith(f"Ignored in cell 'a1-kernel', line {first}: 'x = 1'")
    assert ignored[-1].startswith(f"Ignored in cell 'a1-kernel', line {first + 19}: 'x = 1'")
    assert "... and 4,980 more statements of the answer cells ignored (5,000 in all)." \
        in r.read_notes
    assert len(r.read_notes) == 22
    assert len(feedback_text(r)) < 8000


def test_an_answer_cell_too_big_for_the_memory_limit_ends_memory(tmp_path):
    """The parent reads nothing of the notebook: the cell's AST outgrows the grading
    process's address space there (status memory), and the parent stays small."""
    cell = kernel_cell(REFERENCE) + "x = 1\n" * 150_000
    path = submit(tmp_path / "submitted", "million", A1, [("a1-kernel", cell)])
    r = grade_submission(Submission("million", A1, path),
                         limits=Limits(memory_bytes=400 * 2**20, wall_seconds=60,
                                       cpu_seconds=60))
    assert (r.outcome.status, r.outcome.score) == ("memory", 0.0), \
        (r.outcome.status, r.outcome.message)
    assert "an answer cell with far more code than the answer" in r.outcome.message
    assert len(feedback_text(r)) < 4000


def test_outputs_are_dropped_before_the_size_rule(tmp_path):
    root = tmp_path / "submitted"
    nb = notebook([("a1-kernel", kernel_cell(REFERENCE))])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                  text="y" * (21 * 2**20))]
    folder = root / "outputs" / A1
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{A1}.ipynb")
    assert (folder / f"{A1}.ipynb").stat().st_size > 21 * 2**20
    r = grade_submission(Submission("outputs", A1, folder / f"{A1}.ipynb"))
    assert (r.outcome.status, r.outcome.score) == ("graded", 100.0), r.outcome.message
    # 21 MiB of *source* is over the rule
    nb = notebook([("a1-kernel", kernel_cell(REFERENCE))])
    nb.cells.append(nbformat.v4.new_markdown_cell("z" * (21 * 2**20)))
    path = root / "source" / A1 / f"{A1}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    r = grade_submission(Submission("source", A1, path))
    assert (r.outcome.status, r.outcome.score) == ("bad_notebook", 0.0)
    assert "cells hold 21.0 MiB of source, over the 20 MiB" in r.outcome.message


# --------------------------------------------------------------------------- memory
def test_the_peak_memory_of_the_process_tree_is_printed_and_kept(tmp_path, capsys):
    root = tmp_path / "submitted"
    for s in ("alice", "bob"):
        submit(root, s, A1, [("a1-kernel", kernel_cell(REFERENCE))])
    rc, out = _run(tmp_path)
    err = capsys.readouterr().err
    assert rc == 0
    payload = json.loads((out / "grades.json").read_text())
    memory = payload["run"]["memory"]
    assert "peak memory of the process tree" in err
    assert f"{memory['peak_tree_rss_bytes'] / 2**20:,.0f} MiB" in err
    peaks = [r["outcome"]["peak_memory_bytes"] for r in payload["results"]]
    # each grading process: more than the interpreter alone, under its address-space limit
    assert all(50 * 2**20 < p < Limits().memory_bytes for p in peaks), peaks
    assert memory["peak_tree_rss_bytes"] >= memory["peak_parent_rss_bytes"] > 0
    assert memory["peak_child_rss_bytes"] >= 0.95 * max(peaks)      # every child ever waited for
