"""One class graded on several machines (`tilinglib.grading.shard`): ``--shard K/N`` is a
partition of the class, ``--students`` grades a list, and ``--merge`` of every shard's results
file gives, row for row and byte for byte, what one run over the class writes; every refusal
of a merge says what to change.

The class is small and its assignments are fakes a ``--setup`` file adds (a score computed
from the answer), so the sandbox runs for real (one process per submission) at little cost.
"""

import csv
import hashlib
import io
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tilinglib.errors import GradingError
from tilinglib.grading import assignments as assignments_module
from tilinglib.grading.cli import Submission, main
from tilinglib.grading.shard import (Selection, grader_fingerprint, merge, parse_shard,
                                     parse_students, shard_of)

ROOT = Path(__file__).resolve().parent.parent

SETUP = '''
from tilinglib.grading import Check, GradeReport
from tilinglib.grading.assignments import ASSIGNMENTS, Answer, Assignment

def points(a):
    x = a.get("X")
    return GradeReport("fake", (Check("X mod 9", float(x % 9), 8.0, x % 9 == 8, f"X is {x}"),))

def twice(a):
    y = a.get("Y")
    ok = y == 2 * 21
    return GradeReport("fake", (Check("Y is 42", 4.0 if ok else 1.0, 4.0, ok, f"Y is {y}"),))

ASSIGNMENTS["fake_points"] = Assignment("fake_points", (Answer("X", "fake-answer", (int,)),),
                                        8.0, points)
ASSIGNMENTS["fake_twice"] = Assignment("fake_twice", (Answer("Y", "fake-answer", (int,)),),
                                       4.0, twice)
'''

# Names as classes have them (an accent and a space among them): the shard of each is
# decided by the SHA-256 of its UTF-8 bytes.
STUDENTS = ["ada", "bo", "chen li", "dmitri", "eve", "farah", "gökhan", "zoë"]
N_SHARDS = 3


def _notebook(name: str, value: int):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(f"{name} = {value}\n")
    cell.metadata["nbgrader"] = {"grade_id": "fake-answer", "solution": True, "grade": False,
                                 "locked": False, "schema_version": 3}
    nb.cells.append(cell)
    return nb


def build_class(root: Path) -> None:
    """Every student hands in fake_points (X = 3i + 2) and, but for the last, fake_twice
    (Y = 42 for even i): graded rows of several scores and one missing_notebook."""
    for i, student in enumerate(STUDENTS):
        folder = root / student / "fake_points"
        folder.mkdir(parents=True)
        nbformat.write(_notebook("X", 3 * i + 2), folder / "fake_points.ipynb")
        if i < len(STUDENTS) - 1:
            folder = root / student / "fake_twice"
            folder.mkdir(parents=True)
            nbformat.write(_notebook("Y", 42 if i % 2 == 0 else i), folder / "fake_twice.ipynb")


def grade(base: Path, name: str, *extra) -> Path:
    """Run the command on base/submitted with outputs under base/name; return that folder."""
    out = base / name
    rc = main([str(base / "submitted"), "--setup", str(base / "setup.py"), "--quiet",
               "--jobs", "2", "--timeout", "30", "--out", str(out / "grades.csv"),
               "--results", str(out / "grades.json"), "--feedback-dir", str(out / "feedback"),
               *extra])
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded once whole and once as three shards (four runs, 23 sandboxed
    submissions); the fake assignments registered here only while the module runs."""
    base = tmp_path_factory.mktemp("shard")
    (base / "setup.py").write_text(SETUP)
    build_class(base / "submitted")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(assignments_module, "ASSIGNMENTS", dict(assignments_module.ASSIGNMENTS))
        runs = {"all": grade(base, "all")}
        for k in range(1, N_SHARDS + 1):
            runs[k] = grade(base, f"shard{k}", "--shard", f"{k}/{N_SHARDS}")
        yield base, runs


def run(argv, capsys):
    """(exit status, stdout, stderr) of the command."""
    rc = main([str(a) for a in argv])
    got = capsys.readouterr()
    return rc, got.out, got.err


def merge_argv(base, files, out="merged"):
    return ["--merge", *files, "--setup", base / "setup.py", "-o", base / out / "grades.json",
            "--out", base / out / "grades.csv", "--feedback-dir", base / out / "feedback"]


def rewrite(path: Path, change, sidecar: bool = True) -> Path:
    """A copy of the results file `path` beside it, with `change(payload)` applied and (if
    `sidecar`) a .sha256 that matches: what a run with other settings would have written."""
    payload = json.loads(path.read_text())
    change(payload)
    new = path.with_name(f"edited_{len(list(path.parent.glob('edited_*.json')))}.json")
    data = json.dumps(payload, indent=1, ensure_ascii=False).encode()
    new.write_bytes(data)
    if sidecar:
        new.with_name(new.name + ".sha256").write_text(
            f"{hashlib.sha256(data).hexdigest()}  {new.name}\n")
    return new


def without_seconds(entry: dict) -> dict:
    entry = json.loads(json.dumps(entry))
    entry["outcome"].pop("seconds")
    entry["outcome"].pop("peak_memory_bytes", None)      # measured, as the seconds are
    return entry


# ------------------------------------------------------------------------------ the partition
def test_shard_of_is_the_sha256_of_the_name_and_a_partition():
    rng = random.Random(23)
    alphabet = "abcdefghijklmnopqrstuvwxyzéøüß 0123456789-_."
    names = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
                    for _ in range(1500)})
    for n in range(1, 8):
        subs = [Submission(s, "a", Path(s)) for s in names]
        picked = [{s.student for s in Selection(shard=(k, n))(subs)} for k in range(1, n + 1)]
        # every student in exactly one shard
        assert sum(len(p) for p in picked) == len(names)
        assert set().union(*picked) == set(names)
        for name in names[:50]:
            digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
            assert shard_of(name, n) == int(digest[:16], 16) % n + 1
    # and the shards are near equal: 1,500 names in 4 shards, each within 4 standard
    # deviations (sqrt(1500 * 1/4 * 3/4) = 16.8) of 375
    sizes = [sum(shard_of(s, 4) == k for s in names) for k in range(1, 5)]
    assert all(abs(size - len(names) / 4) < 4 * 16.8 for size in sizes), sizes


def test_shard_is_the_same_in_another_python_process():
    code = ("from tilinglib.grading.shard import shard_of; "
            f"print([shard_of(s, 3) for s in {STUDENTS!r}])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONHASHSEED": "123", "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == str([shard_of(s, 3) for s in STUDENTS])


def test_bad_shard_and_student_options_say_what_to_write():
    for text in ["2", "0/3", "4/3", "a/b", "1/0"]:
        with pytest.raises(GradingError, match="--shard"):
            parse_shard(text)
    assert parse_shard("2/3") == (2, 3)
    assert parse_students(" a, b ,a,,c") == ["a", "b", "c"]
    with pytest.raises(GradingError, match="student folder names"):
        parse_students(" , ")
    with pytest.raises(GradingError, match="not both"):
        Selection(shard=(1, 2), students=["a"])


# ------------------------------------------------------------------------------ the runs
def test_each_shard_grades_its_students_and_writes_settings_and_sha256(graded):
    base, runs = graded
    whole = json.loads((runs["all"] / "grades.json").read_text())
    assert whole["settings"]["class"] == sorted(STUDENTS)
    assert whole["settings"]["assignments"] == ["fake_points", "fake_twice"]
    assert whole["settings"]["selection"] == {"shard": None, "students": None}
    assert whole["settings"]["grader"] == grader_fingerprint()
    assert whole["settings"]["setup"] == [hashlib.sha256(SETUP.encode()).hexdigest()]
    assert len(whole["results"]) == 2 * len(STUDENTS)
    for k in range(1, N_SHARDS + 1):
        path = runs[k] / "grades.json"
        data = path.read_bytes()
        # the .sha256 beside it, as sha256sum writes it, and sha256sum -c accepts it
        line = (runs[k] / "grades.json.sha256").read_text()
        assert line == f"{hashlib.sha256(data).hexdigest()}  grades.json\n"
        if shutil.which("sha256sum"):
            subprocess.run(["sha256sum", "-c", "grades.json.sha256"], cwd=runs[k], check=True,
                           capture_output=True)
        payload = json.loads(data)
        assert payload["settings"]["selection"]["shard"] == f"{k}/{N_SHARDS}"
        assert {r["student"] for r in payload["results"]} == \
            {s for s in STUDENTS if shard_of(s, N_SHARDS) == k}
        # the settings that must agree are the whole run's
        assert {key: v for key, v in payload["settings"].items() if key != "selection"} == \
            {key: v for key, v in whole["settings"].items() if key != "selection"}


def test_merge_of_every_shard_is_the_unsharded_run_row_for_row(graded, capsys):
    base, runs = graded
    files = [runs[k] / "grades.json" for k in (3, 1, 2)]          # any order
    rc, out, err = run(merge_argv(base, files), capsys)
    assert rc == 0, err
    merged_path = base / "merged" / "grades.json"
    assert out.strip() == hashlib.sha256(merged_path.read_bytes()).hexdigest()
    merged, whole = json.loads(merged_path.read_text()), \
        json.loads((runs["all"] / "grades.json").read_text())
    # every result, byte for byte, but the seconds each took (timing, not grading)
    assert [json.dumps(without_seconds(e)) for e in merged["results"]] == \
        [json.dumps(without_seconds(e)) for e in whole["results"]]
    # the settings too, with where the rows came from
    sources = merged["settings"].pop("merged_from")
    assert merged["settings"] == whole["settings"]
    assert sorted(s["shard"] for s in sources) == ["1/3", "2/3", "3/3"]
    for s in sources:
        assert s["sha256"] == hashlib.sha256(Path(s["file"]).read_bytes()).hexdigest()

    def rows(path):
        table = list(csv.reader(io.StringIO(path.read_text())))
        return [row[:5] for row in table]                  # without "seconds"

    assert rows(base / "merged" / "grades.csv") == rows(runs["all"] / "grades.csv")
    statuses = {row[4] for row in rows(runs["all"] / "grades.csv")[1:]}
    assert statuses == {"graded", "missing_notebook"}
    scores = {row[2] for row in rows(runs["all"] / "grades.csv")[1:]}
    assert len(scores) >= 4                                 # rows that can differ, do
    feedback = sorted(p.relative_to(runs["all"] / "feedback")
                      for p in (runs["all"] / "feedback").rglob("*.txt"))
    assert len(feedback) == 2 * len(STUDENTS)
    for rel in feedback:
        assert (base / "merged" / "feedback" / rel).read_bytes() == \
            (runs["all"] / "feedback" / rel).read_bytes()


def test_students_option_grades_that_list(graded, capsys):
    base, runs = graded
    in_shard_2 = sorted(s for s in STUDENTS if shard_of(s, N_SHARDS) == 2)
    assert len(in_shard_2) >= 2
    out = grade(base, "list", "--students", ",".join(in_shard_2))
    payload = json.loads((out / "grades.json").read_text())
    assert sorted({r["student"] for r in payload["results"]}) == in_shard_2
    assert payload["settings"]["selection"] == {"shard": None, "students": in_shard_2}
    listed = {(r["student"], r["assignment"]): without_seconds(r) for r in payload["results"]}
    shard = {(r["student"], r["assignment"]): without_seconds(r) for r in
             json.loads((runs[2] / "grades.json").read_text())["results"]}
    assert listed == shard
    # shards 1 and 3 with that list cover the class, but the shards say there are 3 of them:
    # one file is missing, and the merge says which
    rc, _, err = run(merge_argv(base, [out / "grades.json", runs[1] / "grades.json",
                                       runs[3] / "grades.json"], "merged_list"), capsys)
    assert rc == 2 and "shard 2/3 missing" in err
    rc, _, err = run([base / "submitted", "--setup", base / "setup.py", "--students",
                      "ada,nobody", "--results", base / "x.json"], capsys)
    assert rc == 2 and "no folder 'nobody'" in err


# ------------------------------------------------------------------------------ refusals
def refused(base, files, capsys, *words):
    rc, out, err = run(merge_argv(base, files, "refused"), capsys)
    assert rc == 2 and out == "", err
    for w in words:
        assert w in err, (w, err)
    assert "Traceback" not in err
    assert not (base / "refused" / "grades.json").exists()
    return err


def test_merge_refuses_overlapping_students(graded, capsys):
    base, runs = graded
    refused(base, [runs[1] / "grades.json", runs["all"] / "grades.json"], capsys,
            "is graded in both", "one shard only")
    refused(base, [runs[1] / "grades.json", runs[1] / "grades.json"], capsys,
            "are the same file")
    twin = rewrite(runs[2] / "grades.json", lambda p: p["results"].reverse())
    refused(base, [runs[1] / "grades.json", runs[2] / "grades.json", twin], capsys,
            "shard 2/3 is given twice")


def test_merge_refuses_a_missing_shard_or_student(graded, capsys):
    base, runs = graded
    refused(base, [runs[1] / "grades.json", runs[3] / "grades.json"], capsys,
            "shard 2/3 missing", "--shard 2/3")
    refused(base, [runs[1] / "grades.json"], capsys, "shards 2/3, 3/3 missing")
    # a student of the class in no file (his rows dropped from the whole run's file)
    dropped = rewrite(runs["all"] / "grades.json",
                      lambda p: p.update(results=[r for r in p["results"]
                                                  if r["student"] != "eve"]))
    refused(base, [dropped], capsys, "1 student of the class graded in no file (eve)")
    # a row its file's shard could not hold (moved between files by hand)
    def steal(p):
        other = json.loads((runs[3] / "grades.json").read_text())["results"][0]
        p["results"].append(other)
    stolen = rewrite(runs[1] / "grades.json", steal)
    thief = json.loads((runs[3] / "grades.json").read_text())["results"][0]["student"]
    refused(base, [stolen, runs[2] / "grades.json", runs[3] / "grades.json"], capsys,
            f"student {thief!r} is in shard 3/3, not this file's 1/3")
    other_n = rewrite(runs[1] / "grades.json",
                      lambda p: p["settings"]["selection"].update(shard="1/2"))
    refused(base, [other_n, runs[2] / "grades.json", runs[3] / "grades.json"], capsys,
            "different numbers of shards")


@pytest.mark.parametrize("key, change, words", [
    ("limits", lambda s: s["limits"].update(memory_bytes=s["limits"]["memory_bytes"] * 2),
     ["limits.memory_bytes", "--memory"]),
    ("assignments", lambda s: s.update(assignments=["fake_points"]),
     ["assignments", "--assignment"]),
    ("grader", lambda s: s["grader"].update(tilinglib="0" * 64),
     ["grader.tilinglib", "same tilinglib"]),
    ("numpy", lambda s: s["grader"].update(numpy="1.0.0"), ["grader.numpy", "'1.0.0'"]),
    ("setup", lambda s: s.update(setup=["1" * 64]), ["setup", "same --setup files"]),
    ("class", lambda s: s["class"].append("late student"),
     ["'late student'", "same submitted/ folder"]),
    ("unenforced", lambda s: s.update(unenforced=["memory_watched"]), ["unenforced", "Linux"]),
])
def test_merge_refuses_shards_graded_with_different_settings(graded, capsys, key, change,
                                                             words):
    base, runs = graded
    other = rewrite(runs[2] / "grades.json", lambda p: change(p["settings"]))
    refused(base, [runs[1] / "grades.json", other, runs[3] / "grades.json"], capsys,
            "different settings", *words)


def test_merge_refuses_a_file_whose_sha256_differs(graded, capsys):
    base, runs = graded
    path = runs[2] / "grades.json"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    files = [runs[1] / "grades.json", None, runs[3] / "grades.json"]
    # the digest the shard's run printed, given: accepted
    rc, _, err = run(merge_argv(base, [files[0], f"{path}={digest.upper()}", files[2]],
                                "checked"), capsys)
    assert rc == 0, err
    wrong = digest[:-1] + ("0" if digest[-1] != "0" else "1")
    refused(base, [files[0], f"{path}={wrong}", files[2]], capsys,
            f"its SHA-256 is {digest}, not the {wrong} given")
    # a score changed after the run: its .sha256 (written by the run) no longer matches
    def raise_score(p):
        p["results"][0]["outcome"]["score"] = 8.0
    changed = rewrite(path, raise_score, sidecar=False)
    changed.with_name(changed.name + ".sha256").write_text(f"{digest}  {changed.name}\n")
    refused(base, [files[0], changed, files[2]], capsys, "changed after it was written")
    # a results file of an older tilinglib (no settings), and what is no results file
    old = rewrite(path, lambda p: p.pop("settings"))
    refused(base, [files[0], old, files[2]], capsys, "no settings block", "grade that shard")
    junk = base / "junk.json"
    junk.write_text("not json")
    refused(base, [junk], capsys, "not a results file")
    refused(base, [base / "absent.json"], capsys, "cannot read it")


def test_merge_takes_no_directory_or_grading_options(graded, capsys):
    base, runs = graded
    rc, _, err = run([base / "submitted", *merge_argv(base, [runs[1] / "grades.json"])], capsys)
    assert rc == 2 and "leave out DIR" in err
    rc, _, err = run([*merge_argv(base, [runs[1] / "grades.json"]), "--shard", "1/3"], capsys)
    assert rc == 2 and "--shard chooses what a grading run grades" in err
    rc, _, err = run(["--from", runs[1] / "grades.json", "--gradebook", base / "gb.db",
                      "--students", "ada"], capsys)
    assert rc == 2 and "--students chooses what a grading run grades; --from" in err


def test_scheduler_without_dask_says_what_to_install(tmp_path, monkeypatch, capsys):
    (tmp_path / "s" / "ada" / "a1_tiled_sgemm").mkdir(parents=True)
    monkeypatch.setitem(sys.modules, "distributed", None)
    rc, _, err = run([tmp_path / "s", "--scheduler", "tcp://127.0.0.1:1", "--results",
                      tmp_path / "g.json"], capsys)
    assert rc == 2 and "pip install -e '.[cluster]'" in err


# ------------------------------------------------------------------------------ fingerprint
def test_grader_fingerprint_changes_with_any_tilinglib_file(tmp_path):
    """The fingerprint of a copy of tilinglib is this one's; one byte changed in the grading
    code (a comment) changes it."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "tilinglib", copy / "tilinglib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = "import json; from tilinglib.grading.shard import grader_fingerprint as g; " \
           "print(json.dumps(g()))"

    def fingerprint():
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={"PYTHONPATH": str(copy)}, check=True, cwd=tmp_path)
        return json.loads(out.stdout)

    assert fingerprint() == grader_fingerprint()
    sgemm = copy / "tilinglib" / "grading" / "sgemm.py"
    sgemm.write_text(sgemm.read_text() + "\n# one more line\n")
    changed = fingerprint()
    assert changed["tilinglib"] != grader_fingerprint()["tilinglib"]
    assert {k: v for k, v in changed.items() if k != "tilinglib"} == \
        {k: v for k, v in grader_fingerprint().items() if k != "tilinglib"}


def test_merge_function_orders_rows_as_one_run(graded):
    base, runs = graded
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(assignments_module, "ASSIGNMENTS", dict(assignments_module.ASSIGNMENTS))
        from tilinglib.grading.cli import read_results, run_setup_files
        run_setup_files([base / "setup.py"])
        results, settings = merge([str(runs[k] / "grades.json") for k in (2, 3, 1)],
                                  read_results)
    keys = [(r.submission.student, r.submission.assignment) for r in results]
    assert keys == [(s, a) for s in sorted(STUDENTS) for a in ("fake_points", "fake_twice")]
    assert settings["selection"] == {"shard": None, "students": None}
