"""What tilinglib asks of the operating system, and what it does where that is missing.

Linux gives everything below; a student's macOS or Windows laptop lacks some of it. Each
function answers one question and is the only place that asks it, so the emulator and the
grader degrade the same way everywhere:

========================  ======================  =========================================
asked of the OS           used for                where it is missing
========================  ======================  =========================================
``os.fork``               the grader's clang      clang is started for each compile by the
                          server (forked before   grading process itself (`can_fork`)
                          RLIMIT_NPROC is 0)
``resource.prlimit``      limits set on a clang   the limits are set in the child before
(Linux), so Python can    started by vfork        clang starts (a ``preexec_fn``: fork, not
start clang by vfork                              vfork); without ``resource``, clang runs
                                                  under its deadline and output cap only
``resource``              the grading process's   none is set (`set_limit` says False);
(setrlimit)               CPU, memory, file,      the parent's wall-clock kill and memory
                          process limits          watch still hold (`unenforced_limits`)
RLIMIT_AS enforced by     the memory limit        the parent watches the grading process's
the kernel (Linux only)                           resident memory every 0.2 s and kills it
                                                  past the limit (`process_rss_bytes`)
``os.killpg`` /           one kill ends the       only the grading process itself is killed
``os.setsid``             grading process and     (`kill_process_tree`)
                          all it started
``signal.SIGXCPU``,       a clean stop with a     the process is ended from outside (the
``signal.setitimer``      message before the      CPU limit's hard kill, the parent's
                          hard kill               deadline): same status, plainer message
glibc's ``mallopt``       fewer page faults per   the C library's default allocator:
                          emulated launch         slower, same values (`mallopt_function`)
========================  ======================  =========================================

Nothing here runs at import time; every answer is looked up when asked.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["resource_module", "set_limit", "can_fork", "has_prlimit", "session_options",
           "kill_process_tree", "signal_number", "start_wall_timer", "stop_wall_timer",
           "memory_limit_enforced", "process_rss_bytes", "mallopt_function",
           "unenforced_limits", "caveats", "PROC"]

PROC = Path("/proc")                 # Linux's process table (`process_rss_bytes`)


def resource_module():
    """The `resource` module, or None where Python has none (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    return resource


def set_limit(name: str, soft: int, hard: int | None = None) -> bool:
    """Set the calling process's limit ``resource.<name>`` (e.g. "RLIMIT_CPU") to `soft`
    and `hard` (default `soft`), each lowered to the current hard limit where that is lower.
    Returns False, setting nothing, where `resource` or that limit is missing or the system
    refuses it; True once set."""
    resource = resource_module()
    which = getattr(resource, name, None) if resource is not None else None
    if which is None:
        return False
    hard = soft if hard is None else hard
    try:
        current = resource.getrlimit(which)[1]
        if current != resource.RLIM_INFINITY:
            soft, hard = min(soft, current), min(hard, current)
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):
        return False
    return True


def can_fork() -> bool:
    """Whether this process may fork (POSIX: Linux, macOS)."""
    return hasattr(os, "fork")


def has_prlimit() -> bool:
    """Whether limits can be set on another process (``resource.prlimit``: Linux)."""
    resource = resource_module()
    return resource is not None and hasattr(resource, "prlimit")


def session_options() -> dict:
    """`subprocess.Popen` keywords that start a child in a new session (its own process
    group, so `kill_process_tree` ends it and all it started); {} where there is no setsid."""
    return {"start_new_session": True} if hasattr(os, "setsid") else {}


def kill_process_tree(proc: subprocess.Popen) -> None:
    """SIGKILL to the process group of `proc` (started with `session_options`): it and every
    process it started. Where there is no ``os.killpg``, `proc` alone is killed (what it
    started may outlive it). Never raises for a process that has already ended."""
    if hasattr(os, "killpg") and hasattr(os, "setsid"):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return
    try:
        proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


def signal_number(name: str) -> int | None:
    """The number of ``signal.<name>`` (e.g. "SIGXCPU"), None where this system has none."""
    sig = getattr(signal, name, None)
    return int(sig) if sig is not None else None


def start_wall_timer(seconds: float) -> bool:
    """Deliver SIGALRM to this process after `seconds` of wall-clock time (setitimer).
    Returns False, starting nothing, where setitimer or SIGALRM is missing (Windows): the
    caller must have another deadline (the grader's parent kills at its own)."""
    if not (hasattr(signal, "setitimer") and hasattr(signal, "ITIMER_REAL")
            and hasattr(signal, "SIGALRM")):
        return False
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return True


def stop_wall_timer() -> None:
    """Cancel `start_wall_timer`'s timer (nothing where there is none)."""
    if hasattr(signal, "setitimer") and hasattr(signal, "ITIMER_REAL"):
        signal.setitimer(signal.ITIMER_REAL, 0)


def memory_limit_enforced() -> bool:
    """Whether the kernel enforces RLIMIT_AS, an address-space cap an allocation cannot pass
    (Linux; macOS accepts the call and ignores the limit, Windows has no `resource`)."""
    resource = resource_module()
    return (sys.platform.startswith("linux") and resource is not None
            and hasattr(resource, "RLIMIT_AS"))


def process_rss_bytes(pid: int) -> int | None:
    """The resident memory of process `pid` in bytes, from Linux's ``/proc/PID/statm``, else
    psutil where it is installed, else ``ps -o rss=`` (macOS, BSD); None where none of them
    answers (the process has ended, or Windows without psutil)."""
    statm = PROC / str(pid) / "statm"
    if PROC.is_dir():
        try:
            return int(statm.read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return None
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        try:
            return int(psutil.Process(pid).memory_info().rss)
        except Exception:              # psutil.NoSuchProcess, AccessDenied
            return None
    try:
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True,
                             text=True, timeout=5).stdout.strip()
        return int(out) * 1024 if out else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def mallopt_function():
    """glibc's ``mallopt(int, int) -> int`` through ctypes, or None on a C library other
    than glibc (macOS, Windows, musl) or where the symbol is missing."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return None
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt


# key -> what cannot be enforced, and what still holds
_CAVEATS = {
    "memory": "the memory limit (--memory) is not enforced by this system and this "
              "machine's resident memory of a process cannot be read: a submission may use "
              "all of the machine's memory (the time limits still stop it)",
    "memory_watched": "the memory limit (--memory) is not enforced by the kernel here "
                      "(RLIMIT_AS is Linux's): each grading process's resident memory is "
                      "watched every 0.2 s instead, and one past the limit is killed (status "
                      "memory); a burst between two looks can pass it",
    "cpu": "the CPU-time limit (--cpu) cannot be set here (no resource module): the "
           "wall-clock limit (--timeout) still stops every submission",
    "files": "the limits on files written and open cannot be set here (no resource module)",
    "processes": "a grading process is not kept from starting processes here (no "
                 "RLIMIT_NPROC)",
    "process_group": "a grading process cannot be killed with all it started (no killpg): "
                     "only the process itself is killed at its limit",
}


def unenforced_limits() -> list[str]:
    """Keys of the grading limits this system cannot enforce as Linux does (empty on Linux):
    "memory" or "memory_watched", "cpu", "files", "processes", "process_group". The grader
    records them in every results file (runs on systems that differ are not merged) and
    prints `caveats`."""
    resource = resource_module()
    out = []
    if not memory_limit_enforced():
        out.append("memory_watched" if _rss_readable() else "memory")
    if resource is None or not hasattr(resource, "RLIMIT_CPU"):
        out.append("cpu")
    if resource is None or not hasattr(resource, "RLIMIT_FSIZE"):
        out.append("files")
    if resource is None or not hasattr(resource, "RLIMIT_NPROC"):
        out.append("processes")
    if not (hasattr(os, "killpg") and hasattr(os, "setsid")):
        out.append("process_group")
    return out


def _rss_readable() -> bool:
    return process_rss_bytes(os.getpid()) is not None


def caveats(keys=None) -> list[str]:
    """One sentence per key of `keys` (default: `unenforced_limits()`, this system's): what
    is not enforced and what still holds (the grading command prints them on stderr before
    it grades)."""
    return [_CAVEATS[k] for k in (unenforced_limits() if keys is None else keys)]
