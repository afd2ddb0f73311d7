"""Grade one submission in a fresh, resource-limited process.

Input: an assignment's name, the answers read from a notebook (each the source text of a
Python literal, see `tilinglib.grading.extract`) and `Limits`. Output: an `Outcome` (status,
score, the grading process's report, seconds).

The grading process is started with `subprocess.Popen` (never a fork of anything a student
touched): ``python -s -B -m tilinglib.grading._worker``, in a new session (its own process
group), with the current directory a fresh empty temporary folder that is also its HOME, and an
environment of a few fixed variables only (PATH, PYTHONPATH to this tilinglib,
TILINGLIB_BACKEND=emulator, TILINGLIB_CACHE_DIR=off (no disk cache), one BLAS
thread, C.UTF-8): nothing of the instructor's environment
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

With `grade_notebook_in_sandbox`, the grading process also reads the notebook itself (from a
file descriptor the parent opened and checked), so nothing of a notebook's content is
parsed, transformed or kept outside these limits.

Statuses: graded, compile_error (graded, the kernel did not compile), no_kernel / no_answer
(nothing to grade), missing_notebook, bad_notebook (not a notebook that can be read),
bad_name (a student folder whose name is not valid UTF-8: decided before any process
starts), timeout, memory, crashed (the grading process died or its reply was unreadable;
the message says how).
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

from .names import capped

__all__ = ["Limits", "Outcome", "STATUSES", "apply_limits", "grade_in_sandbox",
           "grade_notebook_in_sandbox"]

STATUSES = ("graded", "compile_error", "no_kernel", "no_answer", "missing_notebook",
            "bad_notebook", "bad_name", "timeout", "memory", "crashed")

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
    time of the whole submission: reading it, its grading process, everything), `cells`
    (points earned per nbgrader test cell, by grade_id, where the assignment says which cell
    grades what), `peak_memory_bytes` (the grading process's peak resident set size,
    ``ru_maxrss``; 0 where no process ran) and `inputs` (what was graded beyond the public
    inputs: {"seed", "kernels": {name: {"tile", "shapes"}}}, see `secret.drawing`; empty
    without a draw)."""

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
    peak_memory_bytes: int = 0
    inputs: dict = field(default_factory=dict)


def apply_limits(limits: Limits) -> list:
    """Set `limits` on the calling process (the grading process calls this on itself first).

    Lowers soft and hard limits together, so nothing later in the process can raise them.
    A limit the system does not have or does not allow to be set (RLIMIT_NPROC on some
    systems, every one without the `resource` module) is skipped: returns the names of
    those skipped (`tilinglib.toolchain.platform_support.set_limit`)."""
    from ..toolchain.platform_support import set_limit

    cpu = int(limits.cpu_seconds)
    wanted = [("RLIMIT_CPU", cpu, cpu + 2),
              ("RLIMIT_AS", int(limits.memory_bytes), None),
              ("RLIMIT_FSIZE", int(limits.file_bytes), None),
              ("RLIMIT_NOFILE", int(limits.open_files), None),
              ("RLIMIT_CORE", 0, None),
              ("RLIMIT_NPROC", 0, None)]
    return [name for name, soft, hard in wanted if not set_limit(name, soft, hard)]


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
        # the disk cache off: the grading process reads no pickle it did not make itself
        "TILINGLIB_CACHE_DIR": "off",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": home,
    }


def _kill_group(proc: subprocess.Popen) -> None:
    from ..toolchain.platform_support import kill_process_tree
    kill_process_tree(proc)


WATCH_SECONDS = 0.2    # how often the memory watch looks (where the kernel has no RLIMIT_AS)


class _MemoryWatch:
    """Where the kernel does not enforce RLIMIT_AS (`platform_support.memory_limit_enforced`):
    a thread of the parent that looks at the grading process's resident memory every
    `WATCH_SECONDS` and kills its process group past `limit` bytes (`tripped` then True)."""

    def __init__(self, proc: subprocess.Popen, limit: int):
        import threading

        self.proc, self.limit, self.tripped = proc, limit, False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tilinglib-memory-watch",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from ..toolchain.platform_support import process_rss_bytes

        while not self._done.wait(WATCH_SECONDS):
            if self.proc.poll() is not None:
                return
            rss = process_rss_bytes(self.proc.pid)
            if rss is not None and rss > self.limit:
                self.tripped = True
                _kill_group(self.proc)
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def _communicate(proc: subprocess.Popen, data: bytes, limits: Limits) -> tuple:
    """Send `data`, collect stdout within the wall-clock limit: (stdout or None, "" if the
    process ended by itself, "wall" or "memory" if it was or must be killed)."""
    from ..toolchain.platform_support import memory_limit_enforced

    watch = None if memory_limit_enforced() else _MemoryWatch(proc, limits.memory_bytes)
    try:
        out = proc.communicate(data, timeout=limits.wall_seconds)[0]
    except subprocess.TimeoutExpired:
        return None, "wall"
    finally:
        if watch is not None:
            watch.stop()
    return (None, "memory") if watch is not None and watch.tripped else (out, "")


def _draw_request(draw) -> dict:
    """The request's part for a `secret.Draw` (its seed only), or {} for None."""
    return {"draw": {"seed": int(draw.seed)}} if draw is not None else {}


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
    request = {"assignment": assignment, "answers": dict(sources),
               "limits": asdict(limits), "setup": [str(p) for p in setup],
               **_draw_request(draw)}
    return _run_worker(request, max_score, limits)[0]


def grade_notebook_in_sandbox(assignment: str, fd: int, name: str, max_score: float, *,
                              limits: Limits = Limits(), setup: tuple = (),
                              draw=None) -> tuple:
    """Read and grade one submitted notebook of `assignment` in a fresh process under
    `limits`: reading the file, its JSON, IPython's transforms of every cell and the
    literals (`tilinglib.grading.extract`) happen in the grading process, under the same
    limits as grading.

    `fd`: the notebook's file descriptor, open for reading (`extract.open_notebook`; the
    grading process inherits it, and this function closes it); `name`: the file's name for
    messages; `draw`: as for `grade_in_sandbox`. Returns (`Outcome`, read_notes: the
    sentences on what was read from the notebook, at most `names.MAX_LISTED` and a count);
    never raises for anything the submission does."""
    request = {"assignment": assignment, "notebook": {"fd": int(fd), "name": str(name)},
               "limits": asdict(limits), "setup": [str(p) for p in setup],
               **_draw_request(draw)}
    try:
        outcome, reply = _run_worker(request, max_score, limits, pass_fds=(int(fd),))
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    notes = reply.get("read_notes", []) if isinstance(reply, dict) else []
    return outcome, [str(n) for n in notes] if isinstance(notes, list) else []


def _run_worker(request: dict, max_score: float, limits: Limits, pass_fds=()) -> tuple:
    """Run the grading process on `request`; returns (`Outcome`, its reply or None)."""
    request = json.dumps(request)
    work = tempfile.mkdtemp(prefix="tilinglib-grade-")        # the child's cwd and HOME
    private = tempfile.mkdtemp(prefix="tilinglib-grade-log-")  # its stderr, outside its cwd
    from ..toolchain.platform_support import session_options

    t0 = time.monotonic()
    killed = ""
    try:
        with open(os.path.join(private, "stderr"), "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-s", "-B", "-m", "tilinglib.grading._worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=work,
                env=_environment(work), close_fds=True, pass_fds=tuple(pass_fds),
                **session_options())
            try:
                out, killed = _communicate(proc, request.encode(), limits)
                if killed:
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
    outcome, reply = _outcome(proc, out, killed, seconds, tail, max_score, limits)
    return outcome, reply


def _outcome(proc, out, killed, seconds, tail, max_score, limits) -> tuple:
    """The `Outcome` of a finished grading process, and its reply (None if it sent none)."""
    from ..toolchain.platform_support import signal_number

    if killed == "memory":
        return Outcome("memory", 0.0, max_score, seconds=seconds,
                       message=f"grading was stopped past {limits.memory_bytes / 2**30:g} GiB "
                               f"of memory (the limit): far more memory than the assignment "
                               f"needs (a huge local array or launch?)"), None
    if killed:
        return Outcome("timeout", 0.0, max_score, seconds=seconds,
                       message=f"grading was stopped after {limits.wall_seconds:g} s of "
                               f"wall-clock time (the limit): a loop that never ends, or far "
                               f"more work than the assignment needs"), None
    reply = None
    if proc.returncode == 0:
        try:
            reply = json.loads(out.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            reply = None
    if isinstance(reply, dict) and reply.get("status") in STATUSES:
        return Outcome(reply["status"], float(reply.get("score", 0.0)),
                       float(reply.get("max_score", max_score)), list(reply.get("checks", [])),
                       capped(map(str, reply.get("notes", [])), what="more notes"),
                       str(reply.get("message", "")),
                       str(reply.get("output", "")), seconds, int(reply.get("printed", 0)),
                       {str(k): float(v) for k, v in dict(reply.get("cells") or {}).items()},
                       int(reply.get("peak_memory_bytes", 0)),
                       dict(reply.get("inputs") or {})), reply
    rc = proc.returncode
    if rc < 0 and -rc in {signal_number("SIGXCPU"), signal_number("SIGKILL")}:
        return Outcome("timeout", 0.0, max_score, seconds=seconds,
                       message=f"grading was stopped by the system after using "
                               f"{limits.cpu_seconds} s of CPU time (the limit)"), None
    if "MemoryError" in tail or "Cannot allocate memory" in tail:
        return Outcome("memory", 0.0, max_score, seconds=seconds,
                       message=f"grading ran out of memory (the limit is "
                               f"{limits.memory_bytes / 2**30:g} GiB)"), None
    try:
        signame = signal.Signals(-rc).name if rc < 0 else ""
    except ValueError:
        signame = str(-rc)
    how = (f"was killed by signal {signame}" if rc < 0 else
           f"exited with status {rc}" if rc else "gave no readable reply")
    last = [line for line in tail.strip().splitlines() if line.strip()][-3:]
    return Outcome("crashed", 0.0, max_score, seconds=seconds,
                   message=f"the grading process {how}" +
                           (": " + " / ".join(last) if last else "")), None
