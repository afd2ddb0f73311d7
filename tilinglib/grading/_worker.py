"""The grading process: ``python -m tilinglib.grading._worker`` (started by `sandbox`).

Input, on stdin (read once, then closed): one JSON object ``{"assignment": name, "answers":
{answer name: source text of a Python literal}, "limits": Limits fields, "setup": [paths of
the instructor's Python files to run first]}``. Output, on the stdout it was started with:
one JSON object ``{"status", "score", "max_score", "checks": [{name, points, max_points,
passed, message}], "notes", "message", "output"}``. Nothing else ever reaches that stdout:
file descriptor 1 is pointed at /dev/null before anything is graded, and Python-level
printing (the emulator's printf) goes to a buffer that keeps the first `output_bytes`.

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
    from ..frontend.clang import start_server
    start_server()
    # the adversarial warp schedule's threads (a racy kernel is re-run under it), likewise
    from ..emulator.schedule import reserve_threads
    reserve_threads(one_arena=True)
    apply_limits(limits)

    def stop(signum, frame):
        raise _Stop("cpu" if signum == signal.SIGXCPU else "wall")

    signal.signal(signal.SIGXCPU, stop)
    signal.signal(signal.SIGALRM, stop)
    # A clean stop a little before the parent's hard kill, so the reply says what happened.
    signal.setitimer(signal.ITIMER_REAL, max(1.0, limits.wall_seconds - 2.0))

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
        answers = {k: ast.literal_eval(v) for k, v in request["answers"].items()}
        report, cells = spec.grade_cells(answers)
        reply["cells"] = {str(k): float(v) for k, v in cells.items()}
        reply["checks"] = [{"name": str(c.name), "points": float(c.points),
                            "max_points": float(c.max_points), "passed": bool(c.passed),
                            "message": str(c.message)} for c in report.checks]
        reply["notes"] = [str(n) for n in report.notes]
        reply["score"] = float(report.score)
        reply["max_score"] = float(report.max_score)
        compile_failed = any(not c["passed"] and "the source does not compile" in c["message"]
                             for c in reply["checks"])
        reply["status"] = "compile_error" if compile_failed else "graded"
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
                            f"assignment needs (a huge local array or launch?)")
    except RecursionError:
        reply["status"] = "crashed"
        reply["message"] = ("the grader ran out of stack on this submission (a very deeply "
                            "nested expression?); ask your instructor")
    except BaseException as exc:          # the grader's own failure: report it, never hang
        reply["status"] = "crashed"
        reply["message"] = f"the grader failed on this submission: {type(exc).__name__}: " \
                           f"{str(exc)[:500]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    reply["output"] = captured.text()
    reply["printed"] = captured.total
    _reply(report_fd, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
