"""Grade one submission in a fresh, resource-limited process.

Input: an assignment's name, the answers read from a notebook (each the source text of a
Python literal, see `tilinglib.grading.extract`) and `Limits`. Output: an `Outcome` (status,
score, the grading process's report, seconds).

The grading process is started with `subprocess.Popen` (never a fork of anything a student
touched): ``python -s -B -m tilinglib.grading._worker``, in a new session (its own process
group), with the current directory a fresh empty temporary folder that is also its HOME, and an
environment of a few fixed variables only (PATH, PYTHONPATH to this tilinglib,
TILINGLIB_BACKEND=emulator, one BLAS thread, C.UTF-8): nothing of the instructor's environment
(tokens, HOME, proxies) is passed on. It is given a single JSON request on stdin, after which
stdin is closed, and writes a single JSON reply on stdout.

Limits, set by the grading process on itself before it reads the request (`apply_limits`):
CPU time (``RLIMIT_CPU``; SIGXCPU ends grading with status timeout, the hard limit two seconds
later kills), address space (``RLIMIT_AS``; an allocation past it is a MemoryError, status
memory), files written (``RLIMIT_FSIZE``, 1 MiB), open files, no new processes or threads
(``RLIMIT_NPROC`` 0, where the kernel enforces it: not for root), no core files. Anything the
graded code prints (the emulator's printf) is kept up to 64 KiB and otherwise discarded.
The parent adds the one limit a process cannot escape: a wall-clock deadline after which it
kills the whole process group with SIGKILL (status timeout).

Statuses: graded, compile_error (graded, the kernel did not compile), no_kernel / no_answer
(nothing to grade: decided before any process starts), timeout, memory, crashed (the grading
process died or its reply was unreadable; the message says how).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["Limits", "Outcome", "STATUSES", "apply_limits", "grade_in_sandbox"]

STATUSES = ("graded", "compile_error", "no_kernel", "no_answer", "missing_notebook",
            "bad_notebook", "timeout", "memory", "crashed")

_TAIL = 4096          # bytes of the grading process's stderr kept for a crash message


@dataclass(frozen=True)
class Limits:
    """Resource limits of one grading process.

    `wall_seconds`: wall-clock time from start to reply, after which the process group is
    killed; `cpu_seconds`: CPU time (RLIMIT_CPU); `memory_bytes`: address space (RLIMIT_AS;
    the interpreter, NumPy and the emulator take about 0.5 GiB of it before any kernel runs);
    `file_bytes`: the most it may write to any file (RLIMIT_FSIZE); `output_bytes`: how much of
    what the graded code prints is kept for the feedback.
    """

    wall_seconds: float = 120.0
    cpu_seconds: int = 120
    memory_bytes: int = 2 * 1024 ** 3
    file_bytes: int = 1024 ** 2
    output_bytes: int = 64 * 1024
    open_files: int = 256

    def __post_init__(self):
        if not self.wall_seconds > 0 or self.cpu_seconds < 1:
            raise ValueError("Limits: wall_seconds must be > 0 and cpu_seconds >= 1")
        if self.memory_bytes < 256 * 1024 ** 2:
            raise ValueError("Limits: memory_bytes under 256 MiB cannot even start Python "
                             "with NumPy")


@dataclass
class Outcome:
    """How grading one submission ended: `status` (one of `STATUSES`), `score` out of
    `max_score`, `checks` (dicts with name, points, max_points, passed, message), `notes`,
    `message` (why, for any status but graded), `output` (the start of what the graded code
    printed), `printed` (how many characters it printed in all), `seconds` (wall-clock
    time of the grading process), `cells` (points earned per nbgrader test cell, by
    grade_id, where the assignment says which cell grades what) and `inputs` (what was
    graded beyond the public inputs: {"seed", "kernels": {name: {"tile", "shapes"}}}, see
    `secret.drawing`; empty without a draw)."""

    status: str
    score: float
    max_score: float
    checks: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    message: str = ""
    output: str = ""
    seconds: float = 0.0
    printed: int = 0
    cells: dict = field(default_factory=dict)
    inputs: dict = field(default_factory=dict)


def apply_limits(limits: Limits) -> None:
    """Set `limits` on the calling process (the grading process calls this on itself first).

    Lowers soft and hard limits together, so nothing later in the process can raise them.
    A limit the system does not allow to be set (RLIMIT_NPROC on some systems) is skipped."""
    import resource

    def cap(which, value):
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    cpu = int(limits.cpu_seconds)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2 if hard == resource.RLIM_INFINITY
                                                 else min(cpu + 2, hard)))
    except (ValueError, OSError):
        pass
    cap(resource.RLIMIT_AS, int(limits.memory_bytes))
    cap(resource.RLIMIT_FSIZE, int(limits.file_bytes))
    cap(resource.RLIMIT_NOFILE, int(limits.open_files))
    cap(resource.RLIMIT_CORE, 0)
    if hasattr(resource, "RLIMIT_NPROC"):
        cap(resource.RLIMIT_NPROC, 0)


def _environment(home: str) -> dict:
    import tilinglib

    package_root = str(Path(tilinglib.__file__).resolve().parent.parent)
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": package_root,
        "PYTHONHASHSEED": "0",
        "PYTHONNOUSERSITE": "1",
        "TILINGLIB_BACKEND": "emulator",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": home,
    }


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def grade_in_sandbox(assignment: str, sources: dict, max_score: float, *,
                     limits: Limits = Limits(), setup: tuple = (), draw=None) -> Outcome:
    """Grade one submission of `assignment` in a fresh process under `limits`.

    `sources` maps answer names to the source text of their Python literals (from
    `extract.Extraction.sources`); `setup` lists Python files the grading process runs before
    grading (the instructor's own code, e.g. one that adds an `Assignment` to `ASSIGNMENTS`;
    never a student's); `draw` (a `secret.Draw`, or None) adds the inputs drawn from the
    instructor's secret (only its seed is sent). Returns an `Outcome`; never raises for
    anything the submission does.
    """
    request = json.dumps({"assignment": assignment, "answers": dict(sources),
                          "limits": asdict(limits), "setup": [str(p) for p in setup],
                          **({"draw": {"seed": int(draw.seed)}} if draw is not None else {})})
    work = tempfile.mkdtemp(prefix="tilinglib-grade-")        # the child's cwd and HOME
    private = tempfile.mkdtemp(prefix="tilinglib-grade-log-")  # its stderr, outside its cwd
    t0 = time.monotonic()
    killed = False
    try:
        with open(os.path.join(private, "stderr"), "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-s", "-B", "-m", "tilinglib.grading._worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=work,
                env=_environment(work), start_new_session=True, close_fds=True)
            try:
                out, _ = proc.communicate(request.encode(), timeout=limits.wall_seconds)
            except subprocess.TimeoutExpired:
                killed = True
                _kill_group(proc)
                out, _ = proc.communicate()
            finally:
                _kill_group(proc)          # anything it left behind in its group
        seconds = time.monotonic() - t0
        with open(os.path.join(private, "stderr"), "rb") as err:
            err.seek(0, os.SEEK_END)
            err.seek(max(0, err.tell() - _TAIL))
            tail = err.read().decode("utf-8", "replace")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)

    if killed:
        return Outcome("timeout", 0.0, max_score, seconds=seconds,
                       message=f"grading was stopped after {limits.wall_seconds:g} s of "
                               f"wall-clock time (the limit): a loop that never ends, or far "
                               f"more work than the assignment needs")
    reply = None
    if proc.returncode == 0:
        try:
            reply = json.loads(out.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            reply = None
    if isinstance(reply, dict) and reply.get("status") in STATUSES:
        return Outcome(reply["status"], float(reply.get("score", 0.0)),
                       float(reply.get("max_score", max_score)), list(reply.get("checks", [])),
                       list(reply.get("notes", [])), str(reply.get("message", "")),
                       str(reply.get("output", "")), seconds, int(reply.get("printed", 0)),
                       {str(k): float(v) for k, v in dict(reply.get("cells") or {}).items()},
                       dict(reply.get("inputs") or {}))
    rc = proc.returncode
    if rc == -signal.SIGXCPU or rc == -signal.SIGKILL:
        return Outcome("timeout", 0.0, max_score, seconds=seconds,
                       message=f"grading was stopped by the system after using "
                               f"{limits.cpu_seconds} s of CPU time (the limit)")
    if "MemoryError" in tail or "Cannot allocate memory" in tail:
        return Outcome("memory", 0.0, max_score, seconds=seconds,
                       message=f"grading ran out of memory (the limit is "
                               f"{limits.memory_bytes / 2**30:g} GiB)")
    try:
        signame = signal.Signals(-rc).name if rc < 0 else ""
    except ValueError:
        signame = str(-rc)
    how = (f"was killed by signal {signame}" if rc < 0 else
           f"exited with status {rc}" if rc else "gave no readable reply")
    last = [line for line in tail.strip().splitlines() if line.strip()][-3:]
    return Outcome("crashed", 0.0, max_score, seconds=seconds,
                   message=f"the grading process {how}" +
                           (": " + " / ".join(last) if last else ""))
