"""One class graded on several machines: ``--shard K/N``, ``--students``, ``--merge``.

Input: the command line's selection (``--shard K/N``: the students whose name falls in shard K
of N; ``--students a,b,c``: those students) or, for ``--merge``, the results files
(``grades.json``) of several grading runs. Output: the submissions a run grades, the
``settings`` block every run writes into its results file, and, for a merge, one results file
as one run over the whole class would have written it (with grades.csv and the feedback files
made from it).

A student's shard is ``int.from_bytes(sha256(name as UTF-8)[:8], "big") % N + 1``
(`shard_of`): the same on every machine and every Python (unlike ``hash()``), and it needs no
list of the class, so N machines given the same submitted/ folder each pick their own share
with no coordination.

Every results file carries ``settings``: the assignments graded, the `Limits`, the grader's
fingerprint (`grader_fingerprint`: a SHA-256 of tilinglib's files and the versions of the
packages grading runs on), a SHA-256 of each ``--setup`` file, the class (every student folder
in DIR, graded or not), what this run selected, and which limits this system could not
enforce (`tilinglib.toolchain.platform_support.unenforced_limits`). `merge` refuses, saying what to
change: a file whose SHA-256 is not the one given (``FILE=HEX``) or the one in its
``.sha256`` file; files whose settings differ in any of those; a row that its file's own
shard or list could not hold (an edited file); a student graded in two files; a shard, or a
student of the class, that no file graded.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from ..errors import GradingError

__all__ = ["shard_of", "parse_shard", "parse_students", "Selection", "grader_fingerprint",
           "run_settings", "sha256_file_line", "merge", "add_arguments",
           "refuse_grading_options"]

# What a merge compares between results files (all must be equal), in the order the message
# names the first difference.
COMPARED = ("assignments", "limits", "grader", "setup", "class", "unenforced", "secret")


def shard_of(student: str, n: int) -> int:
    """The shard (1 to `n`) of the student folder named `student`: the first 8 bytes of the
    SHA-256 of its UTF-8 name, as a big-endian integer, modulo `n`, plus 1."""
    digest = hashlib.sha256(student.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N), 1 <= K <= N. Raises `GradingError` saying what to write."""
    try:
        k_text, n_text = text.split("/")
        k, n = int(k_text), int(n_text)
    except ValueError:
        raise GradingError(f"--shard {text!r}: write K/N, e.g. --shard 2/3 for the second "
                           f"of three machines") from None
    if not (n >= 1 and 1 <= k <= n):
        raise GradingError(f"--shard {text}: K must be 1 to N and N at least 1 (e.g. 1/3, "
                           f"2/3, 3/3 on three machines)")
    return k, n


def parse_students(text: str) -> list[str]:
    """``"a,b,c"`` -> ["a", "b", "c"] (spaces around names dropped, order kept, repeats
    dropped). Raises `GradingError` for an empty list."""
    names = list(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    if not names:
        raise GradingError("--students: give student folder names separated by commas, "
                           "e.g. --students alice,bob")
    return names


class Selection:
    """Which of DIR's submissions one run grades; called by `cli.grade_directory` with all of
    them. It records the class (every student folder) and the assignments, which every
    shard sees alike, for `run_settings`."""

    def __init__(self, shard: tuple[int, int] | None = None, students=None):
        if shard is not None and students is not None:
            raise GradingError("give --shard K/N or --students, not both")
        self.shard, self.students = shard, students
        self.class_students: list = []
        self.assignments: list = []

    def __call__(self, subs: list) -> list:
        self.class_students = sorted({s.student for s in subs})
        self.assignments = list(dict.fromkeys(s.assignment for s in subs))
        if self.students is not None:
            unknown = [s for s in self.students if s not in self.class_students]
            if unknown:
                raise GradingError(f"--students: no folder {', '.join(map(repr, unknown))} in "
                                   f"DIR (its student folders: "
                                   f"{', '.join(self.class_students[:10])}"
                                   f"{', ...' if len(self.class_students) > 10 else ''})")
            chosen = set(self.students)
            return [s for s in subs if s.student in chosen]
        if self.shard is not None:
            k, n = self.shard
            return [s for s in subs if shard_of(s.student, n) == k]
        return subs

    def describe(self) -> dict:
        return {"shard": None if self.shard is None else f"{self.shard[0]}/{self.shard[1]}",
                "students": None if self.students is None else list(self.students)}


def _version(name: str) -> str:
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


@functools.lru_cache(maxsize=1)
def grader_fingerprint() -> dict:
    """What decides a grade besides the submission: ``tilinglib``, the SHA-256 (hex) over
    every .py, .cu and .json file of the tilinglib package this process imports (each file's
    path relative to the package, then its bytes, in sorted path order), and the versions of
    Python (major.minor) and of the packages grading runs on (numpy; ziglang, whose clang is
    the front end; pcpp; pycparser). Two runs whose fingerprints differ may grade one
    notebook differently. Computed once per process (about 5 ms)."""
    import platform

    import tilinglib

    package = Path(tilinglib.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(p for p in package.rglob("*")
                       if p.suffix in (".py", ".cu", ".json") and p.is_file()
                       and "__pycache__" not in p.parts):
        rel = path.relative_to(package).as_posix().encode()
        data = path.read_bytes()
        h.update(len(rel).to_bytes(8, "big") + rel + len(data).to_bytes(8, "big") + data)
    return {"tilinglib": h.hexdigest(),
            "python": ".".join(platform.python_version_tuple()[:2]),
            **{name: _version(name) for name in ("numpy", "ziglang", "pcpp", "pycparser")}}


def run_settings(selection: Selection, limits, setup, unenforced=None) -> dict:
    """The ``settings`` block of a grading run's results file (see the module's docstring).
    `setup`: the --setup files' paths, each recorded by the SHA-256 of its bytes (paths
    differ from machine to machine, contents must not). `unenforced`: the limits the
    grading machines cannot enforce (default: this machine's, `unenforced_limits`)."""
    from ..toolchain.platform_support import unenforced_limits

    return {"assignments": list(selection.assignments),
            "limits": asdict(limits),
            "grader": grader_fingerprint(),
            "setup": [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in setup],
            "class": list(selection.class_students),
            "unenforced": unenforced_limits() if unenforced is None else list(unenforced),
            "selection": selection.describe()}


def sha256_file_line(digest: str, path) -> str:
    """The line of ``PATH.sha256``, as ``sha256sum`` writes it (``sha256sum -c`` checks it in
    the file's folder)."""
    return f"{digest}  {Path(path).name}\n"


def _read_part(spec: str):
    """(path, bytes, payload, given hex or None) of one ``FILE[=HEX]`` of --merge."""
    path_text, _, given = spec.partition("=")
    path = Path(path_text)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GradingError(f"--merge {path}: cannot read it ({exc.strerror})") from None
    digest = hashlib.sha256(data).hexdigest()
    if given:
        if given.strip().lower() != digest:
            raise GradingError(f"--merge {path}: its SHA-256 is {digest}, not the {given} "
                               f"given: the file was changed (or is another run's) since the "
                               f"grading run printed that digest; copy it again or grade that "
                               f"shard again")
    sidecar = path.with_name(path.name + ".sha256")
    if sidecar.is_file():
        recorded = sidecar.read_text(encoding="utf-8", errors="replace").split()[:1]
        if recorded and recorded[0].lower() != digest:
            raise GradingError(f"--merge {path}: its SHA-256 is {digest}, not the "
                               f"{recorded[0]} its run wrote in {sidecar.name}: the file was "
                               f"changed after it was written; grade that shard again")
    try:
        payload = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GradingError(f"--merge {path}: not a results file of this command "
                           f"({type(exc).__name__})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("settings"), dict):
        raise GradingError(f"--merge {path}: it has no settings block (written by an older "
                           f"tilinglib, or not a results file): grade that shard again with "
                           f"this version")
    return path, digest, payload


def _first_difference(a: dict, b: dict, key: str) -> str:
    va, vb = a.get(key), b.get(key)
    if isinstance(va, dict) and isinstance(vb, dict):
        for k in sorted(set(va) | set(vb)):
            if va.get(k) != vb.get(k):
                return f"{key}.{k}: {va.get(k)!r} vs {vb.get(k)!r}"
    if isinstance(va, list) and isinstance(vb, list) and key == "class":
        only_a, only_b = sorted(set(va) - set(vb)), sorted(set(vb) - set(va))
        return (f"class: students only in the first: {only_a[:5]}, only in the second: "
                f"{only_b[:5]} (the two machines' submitted/ folders differ)")
    return f"{key}: {va!r} vs {vb!r}"


_WHAT_TO_DO = {
    "assignments": "grade every shard with the same --assignment options",
    "limits": "grade every shard with the same --timeout, --cpu and --memory",
    "grader": "grade every shard with the same tilinglib and packages (the same commit and "
              "environment on every machine)",
    "setup": "give every shard the same --setup files",
    "class": "copy the same submitted/ folder to every machine",
    "unenforced": "grade every shard on systems that enforce the same limits (Linux)",
    "secret": "give every shard a copy of the same grading secret (--secret PATH)",
}


def _check_belongs(path, student: str, selection: dict, class_students: list) -> None:
    """Refuse a row that its file's own selection could not have graded (an edited file, or
    another shard rule): a student not in the class, outside the file's shard or list."""
    if student not in class_students:
        raise GradingError(f"--merge {path}: student {student!r} is not in the class its "
                           f"settings list: the file was edited; grade that shard again")
    shard, students = selection.get("shard"), selection.get("students")
    if shard:
        k, n = parse_shard(shard)
        if shard_of(student, n) != k:
            raise GradingError(f"--merge {path}: student {student!r} is in shard "
                               f"{shard_of(student, n)}/{n}, not this file's {shard}: the "
                               f"file was edited or graded by another shard rule; grade that "
                               f"shard again")
    elif students is not None and student not in students:
        raise GradingError(f"--merge {path}: student {student!r} is not in this file's "
                           f"--students list: the file was edited; grade that list again")


def merge(specs, read_results) -> tuple[list, dict]:
    """Merge the results files `specs` (each ``PATH`` or ``PATH=SHA256HEX``) of runs over one
    class into one: (the `Result`s in the order one run over the class would give: students
    sorted, then assignments in the settings' order; the merged settings block).
    `read_results`: `cli.read_results` (passed in, so that this module imports nothing of
    the command's). Raises `GradingError`, saying what to change, for any refusal of the
    module's docstring."""
    parts = [_read_part(spec) for spec in specs]
    if not parts:
        raise GradingError("--merge: give the results files of the shards")
    seen_paths = {}
    for path, digest, _ in parts:
        if digest in seen_paths:
            raise GradingError(f"--merge: {path} and {seen_paths[digest]} are the same file "
                               f"(SHA-256 {digest})")
        seen_paths[digest] = path
    first_path, _, first = parts[0]
    base = first["settings"]
    for path, _, payload in parts[1:]:
        s = payload["settings"]
        for key in COMPARED:
            if s.get(key) != base.get(key):
                raise GradingError(f"--merge: {first_path} and {path} were graded with "
                                   f"different settings ({_first_difference(base, s, key)}): "
                                   f"{_WHAT_TO_DO[key]}, then merge")
    shards = [(path, (payload["settings"].get("selection") or {}).get("shard"))
              for path, _, payload in parts]
    counts = {parse_shard(sh)[1] for _, sh in shards if sh}
    if len(counts) > 1:
        raise GradingError(f"--merge: the files split the class into different numbers of "
                           f"shards ({', '.join(f'{p}: {sh}' for p, sh in shards if sh)}): "
                           f"grade with one N on every machine")
    given = [sh for _, sh in shards if sh]
    twice = sorted({sh for sh in given if given.count(sh) > 1})
    if twice:
        raise GradingError(f"--merge: shard {twice[0]} is given twice "
                           f"({', '.join(str(p) for p, sh in shards if sh == twice[0])}): "
                           f"give each shard's results file once")
    owner, results = {}, []
    for (path, digest, payload) in parts:
        try:
            read = read_results(path, digest)
        except GradingError as exc:
            raise GradingError(str(exc).replace("--from ", "--merge ", 1)) from None
        selection = payload["settings"].get("selection") or {}
        for r in read:
            key = r.submission.student
            _check_belongs(path, key, selection, base.get("class", []))
            if key in owner and owner[key] != path:
                raise GradingError(f"--merge: student {key!r} is graded in both {owner[key]} "
                                   f"and {path}: each student must be in one shard only "
                                   f"(were two machines given the same --shard?)")
            owner[key] = path
            results.append(r)
    if counts:
        n = counts.pop()
        given = [parse_shard(sh)[0] for _, sh in shards if sh]
        missing = [k for k in range(1, n + 1) if k not in given]
        if missing:
            raise GradingError(f"--merge: shard{'s' if len(missing) > 1 else ''} "
                               f"{', '.join(f'{k}/{n}' for k in missing)} missing: add "
                               f"{'their' if len(missing) > 1 else 'its'} results file "
                               f"(grade it with --shard {missing[0]}/{n})")
    ungraded = [s for s in base.get("class", []) if s not in owner]
    if ungraded:
        raise GradingError(f"--merge: {len(ungraded)} student{'s' if len(ungraded) > 1 else ''} "
                           f"of the class graded in no file ({', '.join(ungraded[:10])}"
                           f"{', ...' if len(ungraded) > 10 else ''}): grade them (--students "
                           f"{','.join(ungraded[:3])}{',...' if len(ungraded) > 3 else ''}) "
                           f"and merge again")
    order = {a: i for i, a in enumerate(base.get("assignments", []))}
    results.sort(key=lambda r: (r.submission.student, order.get(r.submission.assignment, 0)))
    settings = {k: base.get(k) for k in COMPARED}
    settings["selection"] = {"shard": None, "students": None}
    settings["merged_from"] = [{"file": str(path), "sha256": digest,
                                **(payload["settings"].get("selection") or {})}
                               for path, digest, payload in parts]
    return results, settings


def add_arguments(p) -> None:
    """The sharding options of ``python -m tilinglib.grading`` (added by `cli._parser`)."""
    import argparse

    g = p.add_argument_group("one class on several machines")
    g.add_argument("--shard", metavar="K/N",
                   help="grade only the students of shard K of N (by a SHA-256 of the "
                        "student's name: the same on every machine); merge the N results "
                        "files with --merge")
    g.add_argument("--students", metavar="A,B,...",
                   help="grade only these students (folder names, comma-separated)")
    g.add_argument("--merge", nargs="+", metavar="FILE[=SHA256]",
                   help="instead of DIR: merge the results files of the shards into one "
                        "(-o), with grades.csv (--out) and feedback (--feedback-dir); "
                        "=SHA256 after a file refuses it unless it has that digest")
    g.add_argument("-o", dest="results", default=argparse.SUPPRESS, metavar="PATH",
                   help="the results file written (the same as --results)")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="grade on this Dask cluster (e.g. tcp://10.0.0.5:8786; needs the "
                        "'cluster' extra), each submission still in its own sandboxed "
                        "process on a worker; --jobs is then how many are in flight "
                        "(default: twice the cluster's threads)")


def refuse_grading_options(args, mode: str) -> None:
    """Raise `GradingError` if --shard, --students or --scheduler is given with `mode`
    (--merge, --from), which grade nothing."""
    for option in ("shard", "students", "scheduler"):
        if getattr(args, option, None):
            raise GradingError(f"--{option} chooses what a grading run grades; {mode} grades "
                               f"nothing: leave it out")
