"""``python -m tilinglib.grading DIR``: grade a class's submitted notebooks, the grade to trust.

Input: DIR in nbgrader's ``submitted/`` layout, ``DIR/<student>/<assignment>/<assignment>.ipynb``.
Output: ``grades.csv`` (student, assignment, score, max_score, status, seconds: that
submission's own grading time), one feedback file per student per assignment
(``feedback/<student>/<assignment>.txt``: every check, its points and what to change),
``grades.json`` (every result in full; its SHA-256 is printed on stdout), and optionally the
scores in nbgrader's gradebook.

``--from grades.json --gradebook gradebook.db`` writes saved results into the gradebook
without reading DIR again: grade *before* ``nbgrader autograde`` runs any student code (which
can rewrite DIR), and fill the gradebook after it; ``--sha256`` refuses a results file changed
in between. A student folder, assignment folder or notebook that is a symbolic link, leads out
of ``DIR/<student>/`` or is a hard link is refused (bad_notebook).

No student Python runs: each notebook is read as JSON and its answers as Python literals
(`tilinglib.grading.extract`); each submission is graded in a fresh, resource-limited process
of its own (`tilinglib.grading.sandbox`), several at a time (``--jobs``, all cores by
default). Every submission ends with one of the statuses in `sandbox.STATUSES` and a score;
one that hangs, floods or exhausts memory affects no other.

Besides the public shapes and data, each submission is graded on shapes and data drawn from
the instructor's secret (`tilinglib.grading.secret`: made at the first run beside DIR, or
``--secret PATH``), keyed to its notebook's bytes: no kernel can know them, and the same
secret and notebook give the same grade. ``grades.json`` records, per result, the seed and
the shapes graded (``outcome.inputs``) and, in ``settings``, which secret (its id, never its
bytes).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GradingError
from .extract import BadNotebook, open_notebook
from .memory import TreeMemory
from .secret import (default_secret_path, draw_for_file, load_or_create_secret,
                     results_settings)
from .names import MAX_LISTED, capped, is_utf8_name, listing, printable, shown_name
from .sandbox import Limits, Outcome, STATUSES, grade_notebook_in_sandbox

__all__ = ["Submission", "Result", "find_submissions", "grade_submission", "grade_directory",
           "write_results", "read_results", "write_grades_csv", "feedback_text",
           "write_feedback", "write_gradebook", "main"]

CSV_COLUMNS = ("student", "assignment", "score", "max_score", "status", "seconds")


@dataclass(frozen=True)
class Submission:
    """One student's hand-in of one assignment: `path` is where its notebook should be
    (``DIR/<student>/<assignment>/<assignment>.ipynb``), whether or not it is there."""

    student: str
    assignment: str
    path: Path


@dataclass
class Result:
    """A graded submission: the `Submission`, the sandbox's `Outcome`, and `read_notes`,
    what was read from (or ignored in) the notebook."""

    submission: Submission
    outcome: Outcome
    read_notes: list = field(default_factory=list)

    @property
    def row(self) -> dict:
        """The submission's line of grades.csv."""
        o = self.outcome
        return {"student": shown_name(self.submission.student),
                "assignment": self.submission.assignment,
                "score": f"{o.score:g}", "max_score": f"{o.max_score:g}", "status": o.status,
                "seconds": f"{o.seconds:.2f}"}


def _assignments():
    from .assignments import ASSIGNMENTS
    return ASSIGNMENTS


def run_setup_files(setup) -> None:
    """Run the instructor's `setup` Python files in this process (they may add assignments to
    `ASSIGNMENTS`); the grading processes run them too. Raises `GradingError` if one fails."""
    import runpy

    for path in setup:
        try:
            runpy.run_path(str(path), run_name="tilinglib_grading_setup")
        except Exception as exc:
            raise GradingError(f"--setup {path}: {type(exc).__name__}: {exc}") from None


def find_submissions(directory, assignments=None) -> list:
    """Every (student, assignment) pair to grade under `directory` (nbgrader's submitted/).

    Students are the folders of `directory` (hidden ones skipped). `assignments` (names in
    `ASSIGNMENTS`) defaults to every known assignment that any student has a folder for; each
    student gets one `Submission` per assignment, present or not (a missing one is graded
    "missing_notebook"). Folders named after no known assignment are reported on stderr.
    Raises `GradingError` for a `directory` that is not a folder, an unknown assignment name,
    or a folder with nothing to grade."""
    known = _assignments()
    root = Path(directory)
    if not root.is_dir():
        raise GradingError(f"{directory} is not a folder: give nbgrader's submitted/ folder "
                           f"(DIR/<student>/<assignment>/<assignment>.ipynb)")
    # A linked student folder is listed (and refused when graded: `grade_submission`), not
    # followed.
    students = sorted(p.name for p in root.iterdir()
                      if (p.is_symlink() or p.is_dir()) and not p.name.startswith("."))
    if assignments:
        unknown = [a for a in assignments if a not in known]
        if unknown:
            raise GradingError(f"unknown assignment {', '.join(map(repr, unknown))}; known: "
                               f"{', '.join(sorted(known))}")
        names = list(dict.fromkeys(assignments))
    else:
        seen = {name for s in students for name in _folders(root / s)}
        names = sorted(seen & set(known))
        strange = sorted(seen - set(known))
        if strange:
            print(f"tilinglib.grading: not graded (no such assignment): {listing(strange)}",
                  file=sys.stderr)
    if not students or not names:
        raise GradingError(f"nothing to grade in {directory}: expected "
                           f"{directory}/<student>/<assignment>/<assignment>.ipynb with an "
                           f"assignment among {', '.join(sorted(known))}")
    return [Submission(s, a, root / s / a / f"{a}.ipynb") for s in students for a in names]


def _folders(student_dir: Path) -> set:
    """Names of the (not hidden) folders in a student's folder; none for a linked or
    unreadable one (graded, and refused or reported, per submission)."""
    if student_dir.is_symlink():
        return set()
    try:
        return {p.name for p in student_dir.iterdir()
                if (p.is_symlink() or p.is_dir()) and not p.name.startswith(".")}
    except OSError:
        return set()


def grade_submission(sub: Submission, *, limits: Limits = Limits(), setup=(),
                     sandbox=None, secret=None) -> Result:
    """Grade one submission: its names and links are checked here, then its notebook is read
    (never run) and its answers graded in one sandboxed process (`sandbox`, a function
    called as `sandbox.grade_notebook_in_sandbox` is, the default; `cluster.DaskSandbox`
    runs it on a Dask worker), on the inputs drawn from `secret` (a `secret.Secret`) for
    this notebook as well as the public ones (public ones only when None). The outcome's
    `seconds` is the whole time this took. Returns a `Result`; raises nothing for anything
    the submission holds."""
    t0 = time.monotonic()
    result = _grade_submission(sub, limits, setup, sandbox or grade_notebook_in_sandbox,
                               secret)
    result.outcome.seconds = time.monotonic() - t0
    return result


def _grade_submission(sub: Submission, limits: Limits, setup, sandbox, secret=None) -> Result:
    spec = _assignments()[sub.assignment]
    max_score = float(spec.max_score)
    try:
        if not is_utf8_name(sub.student):
            return Result(sub, Outcome("bad_name", 0.0, max_score, message=(
                f"the student folder's name {shown_name(sub.student)!r} is not valid UTF-8 "
                f"(the bytes written \\xNN): nbgrader and its gradebook need UTF-8 names, so "
                f"this folder is not graded; rename it (the student's id) and grade again")))
        linked = _linked_component(sub)
        if linked:
            return Result(sub, Outcome("bad_notebook", 0.0, max_score, message=linked))
        if not os.path.lexists(sub.path):
            return Result(sub, Outcome("missing_notebook", 0.0, max_score,
                                       message=_missing_why(sub)))
        try:
            fd = open_notebook(sub.path)
        except BadNotebook as exc:
            return Result(sub, Outcome("bad_notebook", 0.0, max_score, message=str(exc)))
        extra = {}
        if secret is not None:       # the notebook's bytes, hashed: nothing of it parsed here
            extra["draw"] = draw_for_file(secret, sub.assignment, fd)
        outcome, notes = sandbox(sub.assignment, fd, sub.path.name, max_score,
                                 limits=limits, setup=tuple(setup), **extra)
        return Result(sub, outcome, notes)
    except Exception as exc:       # the grader's own failure on this one: say so, go on
        return Result(sub, Outcome("crashed", 0.0, max_score,
                                   message=f"the grader failed while reading this submission: "
                                           f"{type(exc).__name__}: "
                                           f"{shown_name(str(exc)[:300])}"))


def _missing_why(sub: Submission) -> str:
    """Why there is no notebook to read for `sub`, naming (some of) what is there instead."""
    folder = sub.path.parent
    if not folder.is_dir():
        return f"no folder {sub.student}/{sub.assignment}/: nothing was handed in"
    others = []
    for p in folder.iterdir():
        if p.name.endswith(".ipynb"):
            others.append(p.name)
            if len(others) > MAX_LISTED:
                break
    why = f"no {sub.path.name} in {sub.student}/{sub.assignment}/"
    if others:
        why += (f" (found {listing(sorted(others)[:MAX_LISTED])}"
                + (" and more" if len(others) > MAX_LISTED else "")
                + ": nbgrader only collects the notebook named after the assignment)")
    return why


def _linked_component(sub: Submission) -> str:
    """Why `sub` must not be read because a folder or the notebook on its way is a link, or
    leads out of ``DIR/<student>/``; "" when it may be read."""
    student_dir = sub.path.parent.parent
    parts = [(student_dir, f"the student folder {sub.student}/"),
             (sub.path.parent, f"the assignment folder {sub.student}/{sub.assignment}/"),
             (sub.path, f"the notebook {sub.student}/{sub.assignment}/{sub.path.name}")]
    for path, what in parts:
        if os.path.islink(path):
            return (f"{what} is a symbolic link (to {os.readlink(path)}): links are not "
                    f"followed, since they could hand in another student's work; hand in "
                    f"the notebook itself")
        if not os.path.lexists(path):
            break
    if os.path.lexists(sub.path):
        inside = os.path.realpath(student_dir)
        real = os.path.realpath(sub.path)
        if os.path.commonpath([inside, real]) != inside:
            return (f"the notebook {sub.student}/{sub.assignment}/{sub.path.name} leads out "
                    f"of the student's folder {sub.student}/: hand in the notebook itself")
    return ""


class _Progress:
    """tqdm's bar when tqdm is installed, else a counter on stderr."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled
        self.lock = threading.Lock()
        self.bar = None
        self.t0 = time.monotonic()
        self.tty = sys.stderr.isatty()
        if enabled:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="submission", file=sys.stderr,
                                desc="graded (elapsed in all)")
            except ImportError:
                pass

    def step(self, result: Result) -> None:
        if not self.enabled:
            return
        with self.lock:
            self.done += 1
            if self.bar is not None:
                self.bar.update(1)
                return
            every = max(1, self.total // 20)
            if self.tty or self.done % every == 0 or self.done == self.total:
                end = "\r" if self.tty and self.done < self.total else "\n"
                print(f"graded {self.done}/{self.total} "
                      f"({time.monotonic() - self.t0:.0f} s elapsed in all; last: "
                      f"{printable(result.submission.student)}/{result.submission.assignment} "
                      f"{result.outcome.status})", end=end, file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def grade_directory(directory, *, assignments=None, jobs=None, limits: Limits = Limits(),
                    setup=(), progress: bool = True, select=None, sandbox=None,
                    secret=None) -> list:
    """Grade every submission under `directory` (see `find_submissions`), or those
    `select(submissions)` returns (`shard.Selection`: --shard, --students), `jobs` at a time
    (default `os.cpu_count()`), each in its own sandboxed process (`sandbox`: see
    `grade_submission`), with the inputs `secret` draws for it. Returns the `Result`s sorted
    by student, then assignment: one per submission, none left out."""
    subs = find_submissions(directory, assignments)
    if select is not None:
        subs = select(subs)
    jobs = max(1, int(jobs or os.cpu_count() or 1))
    bar = _Progress(len(subs), progress)
    results = []
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(grade_submission, s, limits=limits, setup=setup,
                                   sandbox=sandbox, secret=secret) for s in subs]
            for fut in as_completed(futures):
                res = fut.result()
                results.append(res)
                bar.step(res)
    finally:
        bar.close()
    order = {(s.student, s.assignment): i for i, s in enumerate(subs)}
    results.sort(key=lambda r: order[(r.submission.student, r.submission.assignment)])
    return results


RESULTS_FORMAT = "tilinglib.grading results 1"


def _shown(obj):
    """`obj` (JSON-like) with every string through `names.shown_name`, so that it can be
    written as UTF-8 whatever names it holds."""
    if isinstance(obj, str):
        return shown_name(obj)
    if isinstance(obj, dict):
        return {_shown(k): _shown(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_shown(v) for v in obj]
    return obj


def write_results(results, path, settings=None, run=None) -> str:
    """Write every result to the JSON file `path` (``grades.json``): for each submission the
    student, the assignment, the outcome (status, score, max_score, per-check points, points
    per nbgrader test cell, messages) and what was read from the notebook; all that
    `--from` needs to fill a gradebook without reading submitted/ again; `settings` (a
    dict, `shard.run_settings`) is written beside them, for `--merge`; and `run` (a dict,
    e.g. the peak memory of the run, `memory.TreeMemory.figures`) under "run" (what this
    run measured: `--merge` does not compare it). Names that are not valid UTF-8 are
    written as `names.shown_name` writes them. The digest is also written to
    ``PATH.sha256`` (as sha256sum writes it). Returns the file's SHA-256 (hex), which
    `read_results` can check."""
    from .shard import sha256_file_line
    import hashlib
    from dataclasses import asdict

    payload = {"format": RESULTS_FORMAT,
               **({"settings": settings} if settings is not None else {}),
               "results": [{"student": r.submission.student,
                            "assignment": r.submission.assignment,
                            "notebook": str(r.submission.path),
                            "outcome": asdict(r.outcome),
                            "read_notes": list(r.read_notes)} for r in results]}
    if run is not None:
        payload["run"] = dict(run)
    data = json.dumps(_shown(payload), indent=1, ensure_ascii=False).encode("utf-8")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    path.with_name(path.name + ".sha256").write_text(sha256_file_line(digest, path),
                                                     encoding="utf-8")
    return digest


def read_results(path, sha256=None) -> list:
    """The `Result`s saved by `write_results` in `path`, the submissions not read again.

    `sha256` (hex, as `write_results` returned and the command printed): when given, the
    file must have exactly that digest, so a results file changed since it was written (say
    by student code that nbgrader's autograde ran) is refused. Raises `GradingError` for a
    missing, changed or malformed file, or an assignment not in `ASSIGNMENTS`."""
    import hashlib

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GradingError(f"--from {path}: cannot read it ({exc.strerror}): give the "
                           f"results file a grading run wrote (--results)") from None
    if sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != sha256.strip().lower():
            raise GradingError(f"--from {path}: its SHA-256 is {got}, not the {sha256} the "
                               f"grading run printed: the file was changed after it was "
                               f"written; grade submitted/ again")
    try:
        payload = json.loads(data.decode("utf-8"))
        if payload.get("format") != RESULTS_FORMAT:
            raise ValueError(f"format is {payload.get('format')!r}, not {RESULTS_FORMAT!r}")
        results = []
        known = _assignments()
        for item in payload["results"]:
            if item["assignment"] not in known:
                raise GradingError(f"--from {path}: unknown assignment "
                                   f"{item['assignment']!r} (a --setup file adds it?)")
            o = item["outcome"]
            if o["status"] not in STATUSES:
                raise ValueError(f"status {o['status']!r}")
            outcome = Outcome(**{k: o[k] for k in o
                                 if k in Outcome.__dataclass_fields__})
            outcome.score, outcome.max_score = float(outcome.score), float(outcome.max_score)
            if not isinstance(outcome.cells, dict) or not all(
                    isinstance(v, (int, float)) for v in outcome.cells.values()):
                raise ValueError("cells is not a table of points per cell")
            results.append(Result(Submission(str(item["student"]), item["assignment"],
                                             Path(item["notebook"])), outcome,
                                  list(item.get("read_notes", []))))
    except GradingError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        raise GradingError(f"--from {path}: not a results file of this command "
                           f"({type(exc).__name__}: {str(exc)[:200]})") from None
    return results


def write_grades_csv(results, path) -> None:
    """Write grades.csv: one row per result, columns `CSV_COLUMNS`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for r in results:
            writer.writerow({k: shown_name(v) for k, v in r.row.items()})


_STATUS_WORDS = {
    "graded": "graded",
    "compile_error": "graded: the kernel does not compile",
    "no_kernel": "not graded: no kernel found",
    "no_answer": "not graded: no answer found",
    "missing_notebook": "not graded: no notebook handed in",
    "bad_notebook": "not graded: the notebook could not be read",
    "bad_name": "not graded: the folder's name is not valid UTF-8",
    "timeout": "stopped at the time limit",
    "memory": "stopped at the memory limit",
    "crashed": "the grader failed on this submission",
}


def feedback_text(result: Result) -> str:
    """The plain-words feedback for one submission: score, status, what was read from the
    notebook (at most `names.MAX_LISTED` notes of each kind, then how many more), then every
    check with its points and message. Always valid UTF-8 (`names.shown_name`)."""
    sub, o = result.submission, result.outcome
    lines = [f"Assignment {sub.assignment}, student {sub.student}",
             f"Score: {o.score:g} / {o.max_score:g}   ({_STATUS_WORDS.get(o.status, o.status)})",
             "",
             "Graded by python -m tilinglib.grading: your notebook was read, not run. Only the",
             "answers written as literal values in the answer cells count.",
             ""]
    if result.read_notes:
        lines.append("What was read from your notebook:")
        lines += [f"  - {n}" for n in capped(result.read_notes, what="more notes")]
        lines.append("")
    if o.message:
        lines += [f"Why: {o.message}", ""]
    if o.checks:
        width = max(len(c["name"]) for c in o.checks)
        lines.append("Checks:")
        for c in o.checks:
            mark = "ok  " if c["passed"] else "FAIL"
            lines.append(f"  {mark} {c['name']:<{width}}  {c['points']:g}/{c['max_points']:g}")
            # a failed check says why; a passed check of no points may say what it did
            # ("ok, 'sgemm' is a kernel template ...: graded as sgemm<16>")
            said = (not c["passed"] or (not c["max_points"]
                                         and str(c["message"]).startswith("ok, ")))
            if said and c["message"]:
                lines += ["         " + line for line in c["message"].splitlines()]
        lines.append("")
    if o.notes:
        lines += ["Notes:"] + [f"  - {n}" for n in capped(o.notes, what="more notes")] + [""]
    if o.output.strip():
        shown = o.output.splitlines()[:40]
        lines += [f"What the graded run printed ({o.printed:,} characters in all; the first "
                  f"{len(shown)} lines):"]
        lines += ["  " + line for line in shown]
        lines.append("")
    return shown_name("\n".join(lines))


def write_feedback(results, directory) -> None:
    """Write `directory/<student>/<assignment>.txt` for every result."""
    directory = Path(directory)
    for r in results:
        folder = directory / shown_name(r.submission.student)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{r.submission.assignment}.txt").write_text(feedback_text(r),
                                                               encoding="utf-8")


def write_gradebook(results, path) -> None:
    """Put the scores into nbgrader's gradebook at `path` (``gradebook.db``), through
    `nbgrader.api.Gradebook`.

    Each assignment must already be in the gradebook (``nbgrader generate_assignment`` puts it
    there). Students and submissions missing from it are added. A submission's score is
    written as the *manual* score of the notebook's autograded cells (those not listed in
    `Assignment.manual`): each cell gets the points of the part it grades (`Assignment.parts`),
    or, for an assignment without parts, a share of the score in proportion to the cell's
    points; nbgrader shows a manual score as the instructor's override of its own
    autograded one. Cells graded by hand are left alone.
    The answer cell's comment gets one line naming this command's status and score. A
    bad_name result (a folder name that is not valid UTF-8, so no student id) is left out.
    Raises `GradingError` if nbgrader is not installed or an assignment is not in the
    gradebook."""
    try:
        from nbgrader.api import Gradebook, MissingEntry
    except ImportError:
        raise GradingError("--gradebook needs nbgrader: pip install -e '.[instructor]'") from None
    if not Path(path).is_file():
        raise GradingError(f"no gradebook at {path}: run 'nbgrader generate_assignment NAME' in "
                           f"the course directory first (it makes gradebook.db)")
    specs = _assignments()
    url = f"sqlite:///{Path(path).resolve()}"
    # nbgrader runs its `alembic` command to check the database's schema: let it find the
    # one installed next to this Python even when the venv is not activated.
    bindir = str(Path(sys.executable).parent)
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([bindir, saved]) if saved else bindir
    try:
        with warnings.catch_warnings():
            # nbgrader's add_submission trips SQLAlchemy's autoflush warnings; they are its own
            warnings.filterwarnings("ignore", module="sqlalchemy")
            warnings.filterwarnings("ignore", message=".*not in session.*")
            _write_gradebook(Gradebook, MissingEntry, url, path, specs, results)
    finally:
        os.environ["PATH"] = saved


def _write_gradebook(Gradebook, MissingEntry, url, path, specs, results) -> None:
    with Gradebook(url) as gb:
        for r in results:
            sub, o = r.submission, r.outcome
            if o.status == "bad_name":      # no student id nbgrader could hold
                continue
            spec = specs[sub.assignment]
            try:
                assignment = gb.find_assignment(sub.assignment)
            except MissingEntry:
                raise GradingError(f"the gradebook {path} has no assignment "
                                   f"{sub.assignment!r}: run 'nbgrader generate_assignment "
                                   f"{sub.assignment}' in the course directory first") from None
            notebooks = [nb for nb in assignment.notebooks if nb.name == sub.assignment]
            if not notebooks:
                raise GradingError(f"the gradebook's assignment {sub.assignment!r} has no "
                                   f"notebook {sub.assignment}.ipynb")
            nb = notebooks[0]
            gb.update_or_create_student(sub.student)
            try:
                gb.find_submission(sub.assignment, sub.student)
            except MissingEntry:
                gb.add_submission(sub.assignment, sub.student)
            auto = [c for c in nb.grade_cells if c.name not in spec.manual and c.max_score]
            total = sum(c.max_score for c in auto)
            fraction = o.score / o.max_score if o.max_score else 0.0
            for cell in auto:
                grade = gb.find_grade(cell.name, nb.name, sub.assignment, sub.student)
                if o.status == "graded" and o.cells:
                    # The assignment says what each cell grades: its own points.
                    grade.manual_score = round(min(o.cells.get(cell.name, 0.0),
                                                   cell.max_score), 2)
                else:
                    grade.manual_score = round(fraction * cell.max_score, 2)
            solution_ids = {c.name for c in nb.solution_cells}
            for answer in spec.answers:
                if answer.cell in solution_ids:
                    comment = gb.find_comment(answer.cell, nb.name, sub.assignment, sub.student)
                    comment.manual_comment = (f"python -m tilinglib.grading: {o.score:g} / "
                                              f"{o.max_score:g} ({o.status}); "
                                              f"{fraction * total:g} of this notebook's "
                                              f"{total:g} autograded points.")
            gb.db.commit()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tilinglib.grading",
        description="Grade nbgrader's submitted/ folder without running any student code: "
                    "answers are read from the notebooks as literals and each submission is "
                    "graded in a fresh, resource-limited process. Writes grades.csv, the "
                    "feedback files and the results file (grades.json), and prints the "
                    "results file's SHA-256 on stdout. With --from RESULTS --gradebook DB, "
                    "writes saved results into nbgrader's gradebook without reading "
                    "submitted/ again (run that after nbgrader autograde).")
    p.add_argument("directory", metavar="DIR", nargs="?",
                   help="nbgrader's submitted/ folder: DIR/<student>/<assignment>/<assignment>.ipynb")
    p.add_argument("--assignment", action="append", metavar="NAME",
                   help="grade only this assignment (repeatable; default: every known "
                        "assignment found in DIR)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help=f"submissions graded at once (default: all cores, here {os.cpu_count()})")
    p.add_argument("--out", default="grades.csv", metavar="PATH",
                   help="the grades table (default: grades.csv)")
    p.add_argument("--results", default="grades.json", metavar="PATH",
                   help="every result in full, for --from (default: grades.json)")
    p.add_argument("--feedback-dir", default="feedback", metavar="D",
                   help="one feedback file per student per assignment: "
                        "D/<student>/<assignment>.txt (default: feedback)")
    p.add_argument("--gradebook", metavar="PATH",
                   help="also write the scores into this nbgrader gradebook.db")
    p.add_argument("--from", dest="from_results", metavar="RESULTS",
                   help="with --gradebook, and instead of DIR: write the results a grading "
                        "run saved (its --results file) into the gradebook; submitted/ is not "
                        "read")
    p.add_argument("--sha256", metavar="HEX",
                   help="with --from: the digest the grading run printed; a results file "
                        "with any other digest is refused")
    p.add_argument("--timeout", type=float, default=Limits.wall_seconds, metavar="S",
                   help="wall-clock seconds per submission before its process is killed "
                        "(default: %(default)g)")
    p.add_argument("--cpu", type=int, default=None, metavar="S",
                   help="CPU seconds per submission (default: the --timeout)")
    p.add_argument("--memory", type=int, default=Limits.memory_bytes // 2**20, metavar="MIB",
                   help="address space per submission in MiB (default: %(default)d)")
    p.add_argument("--setup", action="append", default=[], metavar="FILE.py",
                   help="the instructor's Python file to run before grading, here and in each "
                        "grading process (e.g. to add an Assignment to ASSIGNMENTS)")
    p.add_argument("--secret", metavar="PATH",
                   help="the instructor's grading secret, which draws the shapes and data no "
                        "kernel can know (made at the first run; default: "
                        f"{default_secret_path('DIR').name} in the folder above DIR); keep it "
                        "out of every student's reach")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    from .shard import add_arguments
    add_arguments(p)
    return p


def _summary(results) -> str:
    counts = {s: sum(r.outcome.status == s for r in results) for s in STATUSES}
    return ", ".join(f"{n} {s}" for s, n in counts.items() if n)


def _merge_main(args, setup=()) -> int:
    """``--merge``: run the `setup` files (they may add the assignments merged), merge, then
    write the results file, its .sha256, grades.csv, the feedback
    files and (with --gradebook) the gradebook; print the digest on stdout. Raises
    `GradingError`."""
    from .shard import merge, refuse_grading_options

    if args.directory is not None or args.from_results is not None:
        raise GradingError("--merge takes results files only: leave out DIR and --from")
    refuse_grading_options(args, "--merge")
    run_setup_files(setup)
    results, settings = merge(args.merge, read_results)
    write_grades_csv(results, args.out)
    write_feedback(results, args.feedback_dir)
    digest = write_results(results, args.results, settings=settings)
    if args.gradebook:
        write_gradebook(results, args.gradebook)
    print(f"{len(results)} submissions merged from {len(args.merge)} files: {_summary(results)}"
          f". Grades in {args.out}, feedback in {args.feedback_dir}/, all results in "
          f"{args.results} (SHA-256 {digest}, printed on stdout)"
          + (f", scores in {args.gradebook}" if args.gradebook else ""), file=sys.stderr)
    print(digest)
    return 0


def main(argv=None) -> int:
    """The command line; returns the exit status (0: every submission has a status and a
    score; 2: the command could not run, with the reason on stderr). A grading run prints
    the results file's SHA-256 (hex) alone on stdout; its progress and summary go to
    stderr."""
    args = _parser().parse_args(argv)
    try:
        setup = [str(Path(s).resolve()) for s in args.setup]
        if args.merge:
            return _merge_main(args, setup)
        if args.from_results is not None:
            if args.directory is not None:
                raise GradingError("give DIR (to grade it) or --from RESULTS (to write saved "
                                   "results into a gradebook), not both")
            if not args.gradebook:
                raise GradingError("--from RESULTS writes saved results into a gradebook: "
                                   "add --gradebook gradebook.db")
            from .shard import refuse_grading_options
            refuse_grading_options(args, "--from")
            run_setup_files(setup)
            results = read_results(args.from_results, args.sha256)
            write_gradebook(results, args.gradebook)
            print(f"{len(results)} results from {args.from_results} ({_summary(results)}) "
                  f"written into {args.gradebook}; submitted/ was not read", file=sys.stderr)
            return 0
        if args.directory is None:
            raise GradingError("give the folder to grade (nbgrader's submitted/), or --from "
                               "RESULTS --gradebook DB")
        if args.sha256 is not None:
            raise GradingError("--sha256 goes with --from (it checks a saved results file)")
        if args.jobs is not None and args.jobs < 1:
            raise GradingError("--jobs must be 1 or more")
        try:
            limits = Limits(wall_seconds=args.timeout,
                            cpu_seconds=int(args.cpu or max(1, round(args.timeout))),
                            memory_bytes=args.memory * 2**20)
        except ValueError as exc:
            raise GradingError(str(exc)) from None
        run_setup_files(setup)
        if not Path(args.directory).is_dir():      # its message, before any secret is made
            find_submissions(args.directory, args.assignment)
        secret = load_or_create_secret(args.secret or default_secret_path(args.directory),
                                       not_inside=[args.directory])
        print(f"tilinglib.grading: {'made a new' if secret.created else 'using the'} grading "
              f"secret {secret.path} (id {secret.id})" + (": keep it; the same secret gives "
              f"the same grades" if secret.created else ""), file=sys.stderr)
        from ..toolchain.platform_support import caveats as platform_caveats
        from .cluster import sandbox_for
        from .shard import Selection, parse_shard, parse_students, run_settings
        select = Selection(parse_shard(args.shard) if args.shard else None,
                           parse_students(args.students) if args.students else None)
        with sandbox_for(args.scheduler, args.jobs) as (sandbox, jobs):
            for line in getattr(sandbox, "caveats", None) or platform_caveats():
                print(f"tilinglib.grading: {line}", file=sys.stderr)
            with TreeMemory() as memory:
                results = grade_directory(args.directory, assignments=args.assignment,
                                          jobs=jobs, limits=limits, setup=setup,
                                          progress=not args.quiet, select=select,
                                          sandbox=sandbox, secret=secret)
            settings = run_settings(select, limits, setup,
                                    unenforced=getattr(sandbox, "unenforced", None))
            settings["secret"] = results_settings(secret)
        write_grades_csv(results, args.out)
        write_feedback(results, args.feedback_dir)
        digest = write_results(results, args.results, settings=settings,
                               run={"memory": memory.figures})
        if args.gradebook:
            write_gradebook(results, args.gradebook)
    except GradingError as exc:
        print(f"python -m tilinglib.grading: {exc}", file=sys.stderr)
        return 2
    print(f"{len(results)} submissions: {_summary(results)}. Grades in {args.out}, feedback in "
          f"{args.feedback_dir}/, all results in {args.results} (SHA-256 {digest}, printed on "
          f"stdout)" + (f", scores in {args.gradebook}" if args.gradebook else "")
          + f". {memory.summary()}", file=sys.stderr)
    print(digest)
    return 0
