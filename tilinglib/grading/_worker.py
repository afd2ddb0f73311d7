"""The grading process: ``python -m tilinglib.grading._worker`` (started by `sandbox`).

Input, on stdin (read once, then closed): one JSON object ``{"assignment": name, "answers":
{answer name: source text of a Python literal}, "limits": Limits fields, "setup": [paths of
the instructor's Python files to run first]}``, or with ``"notebook": {"fd": an inherited file
descriptor open on the submitted notebook, "name": its name}`` instead of "answers": then the
notebook is read here, under the limits (`extract.read_notebook_fd`, IPython's transforms,
`extract.extract_from_notebook`); and ``"draw": {"seed": int}`` where the command grades
on inputs drawn from the instructor's secret (`tilinglib.grading.secret`; the secret itself
never comes here). Output, on the stdout it was started with: one JSON object
``{"status", "score", "max_score", "checks": [{name, points, max_points, passed, message}],
"notes", "message", "output", "printed", "cells", "read_notes", "peak_memory_bytes",
"inputs"}`` (`inputs`: the seed and the shapes graded, per kernel, with a draw).
Nothing else ever reaches that stdout: file descriptor 1 is pointed at /dev/null before
anything is graded, and Python-level printing (the emulator's printf) goes to a buffer that
keeps the first `output_bytes`.

The answers are re-read with `ast.literal_eval`, so no student code runs here either; what
runs is the assignment's grader (the CPU emulator executing the student's CUDA C).
"""

from __future__ import annotations

import ast
import io
import json
import os
import signal
import sys


class _Stop(BaseException):
    """Raised by the CPU-time and wall-clock signals; a BaseException, so that no grader's
    ``except Exception`` can swallow it."""


class _CappedText(io.TextIOBase):
    """A text sink that keeps the first `limit` characters written to it and counts the rest."""

    def __init__(self, limit: int):
        self.limit = limit
        self.parts: list = []
        self.kept = 0
        self.total = 0

    def writable(self):
        return True

    def write(self, s):
        s = str(s)
        self.total += len(s)
        if self.kept < self.limit:
            piece = s[: self.limit - self.kept]
            self.parts.append(piece)
            self.kept += len(piece)
        return len(s)

    def text(self) -> str:
        return "".join(self.parts)


def _reply(fd: int, payload: dict) -> None:
    data = json.dumps(payload).encode()
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def main() -> int:
    from .sandbox import Limits, apply_limits

    report_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    raw = sys.stdin.buffer.read(64 * 1024 * 1024)
    sys.stdin.close()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sys.stdin = open(os.devnull)
    request = json.loads(raw.decode("utf-8"))
    limits = Limits(**request["limits"])
    # clang (the C++ front end) runs in a child forked now: past apply_limits, RLIMIT_NPROC 0
    # forbids this process to start one.
    from ..toolchain.frontend.clang import start_server
    from ..toolchain.platform_support import signal_number, start_wall_timer, stop_wall_timer
    start_server()
    # the adversarial warp schedule's threads (a racy kernel is re-run under it), likewise
    from ..toolchain.runtime.schedule import reserve_threads
    reserve_threads(one_arena=True)
    apply_limits(limits)        # where one cannot be set, the parent's deadline still holds
    sigxcpu = signal_number("SIGXCPU")

    def stop(signum, frame):
        raise _Stop("cpu" if signum == sigxcpu else "wall")

    for sig in (sigxcpu, signal_number("SIGALRM")):
        if sig is not None:
            signal.signal(sig, stop)
    # A clean stop a little before the parent's hard kill, so the reply says what happened
    # (where there is no setitimer, the parent's kill alone: status timeout all the same).
    start_wall_timer(max(1.0, limits.wall_seconds - 2.0))

    captured = _CappedText(limits.output_bytes)
    sys.stdout = captured
    sys.stderr = _CappedText(limits.output_bytes)
    name = request["assignment"]
    reply = {"status": "crashed", "score": 0.0, "max_score": 0.0, "checks": [], "notes": [],
             "message": "", "output": ""}
    try:
        import runpy

        for path in request.get("setup", []):
            runpy.run_path(path, run_name="tilinglib_grading_setup")
        from .assignments import ASSIGNMENTS

        spec = ASSIGNMENTS[name]
        reply["max_score"] = float(spec.max_score)
        if "notebook" in request:
            sources, why = _read_answers(request["notebook"], spec, reply)
        else:
            sources, why = request["answers"], None
        if why is not None:
            reply["status"], reply["message"] = why
        else:
            _grade(spec, sources, reply, request.get("draw"), limits)
    except _Stop as exc:
        reply["status"] = "timeout"
        reply["message"] = (f"grading was stopped after {limits.cpu_seconds} s of CPU time "
                            f"(the limit)" if str(exc) == "cpu" else
                            f"grading was stopped after {limits.wall_seconds:g} s of wall-clock "
                            f"time (the limit)") + (": a loop that never ends, or far more work "
                                                    "than the assignment needs")
    except MemoryError:
        reply["status"] = "memory"
        reply["message"] = (f"grading ran out of memory (the limit is "
                            f"{limits.memory_bytes / 2**30:g} GiB): far more memory than the "
                            f"assignment needs (a huge local array or launch, or an answer "
                            f"cell with far more code than the answer?)")
    except RecursionError:
        reply["status"] = "crashed"
        reply["message"] = ("the grader ran out of stack on this submission (a very deeply "
                            "nested expression?); ask your instructor")
    except BaseException as exc:          # the grader's own failure: report it, never hang
        reply["status"] = "crashed"
        reply["message"] = f"the grader failed on this submission: {type(exc).__name__}: " \
                           f"{str(exc)[:500]}"
    finally:
        stop_wall_timer()
        if sigxcpu is not None:
            signal.signal(sigxcpu, signal.SIG_IGN)
    return _finish(report_fd, reply, captured)


def _grade(spec, sources: dict, reply: dict, draw=None, limits=None) -> None:
    """Grade the answers `sources` (name -> source text of a literal) with `spec`, on the
    inputs of `draw` ({"seed": int}) as well when given; fills `reply`."""
    from .names import capped

    answers = {k: ast.literal_eval(v) for k, v in sources.items()}
    report, cells = _grade_with_draw(spec, answers, draw, reply, limits)
    reply["cells"] = {str(k): float(v) for k, v in cells.items()}
    reply["checks"] = [{"name": str(c.name), "points": float(c.points),
                        "max_points": float(c.max_points), "passed": bool(c.passed),
                        "message": str(c.message)} for c in report.checks]
    reply["notes"] = capped([str(n) for n in report.notes], what="more notes")
    reply["score"] = float(report.score)
    reply["max_score"] = float(report.max_score)
    compile_failed = any(not c["passed"] and "the source does not compile" in c["message"]
                         for c in reply["checks"])
    reply["status"] = "compile_error" if compile_failed else "graded"


def _grade_with_draw(spec, answers, draw, reply, limits):
    """`spec.grade_cells(answers)`, inside `secret.drawing` when the request has a draw, with
    the graders' time limit this process's own less 5 s (their time box, 1.5 s past it, then
    ends before this process's alarm, 2 s before the parent's kill): a slow machine costs a
    submission points only where the command's --timeout would stop it anyway. The shapes
    graded go into reply["inputs"] as they are run."""
    if not draw:
        return spec.grade_cells(answers)
    from .secret import Draw, drawing

    with drawing(Draw(int(draw["seed"])),
                 time_limit=max(1.0, limits.wall_seconds - 5.0)) as record:
        reply["inputs"] = record
        return spec.grade_cells(answers)


def _finish(report_fd: int, reply: dict, captured) -> int:
    """Send `reply`, with what was printed and this process's peak memory (0 where Python
    has no `resource` module)."""
    from ..toolchain.platform_support import resource_module

    resource = resource_module()

    reply["output"] = captured.text()
    reply["printed"] = captured.total
    # ru_maxrss: KiB on Linux, bytes on macOS
    scale = 1 if sys.platform == "darwin" else 1024
    reply["peak_memory_bytes"] = (int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale)
                                  if resource is not None else 0)
    _reply(report_fd, reply)
    return 0


def _read_answers(notebook: dict, spec, reply: dict):
    """Read `spec`'s answers from the notebook whose open file descriptor the request names
    (`extract.read_notebook_fd`, `extract.extract_from_notebook`); puts what was read in
    ``reply["read_notes"]``. Returns (sources, None), or (None, (status, message)) when
    there is nothing to grade."""
    from .extract import BadNotebook, extract_from_notebook, read_notebook_fd

    try:
        nb = read_notebook_fd(int(notebook["fd"]), str(notebook["name"]))
    except BadNotebook as exc:
        return None, ("bad_notebook", str(exc))
    ex = extract_from_notebook(nb, spec)
    del nb
    reply["read_notes"] = ex.notes
    if ex.sources:
        return ex.sources, None
    kernels = all(a.name.endswith("KERNEL") for a in spec.answers)
    what = "kernel" if kernels else "answer"
    return None, ("no_kernel" if kernels else "no_answer",
                  f"no literal {what} was found in the notebook, so nothing was graded "
                  f"(see above)")


if __name__ == "__main__":
    sys.exit(main())
