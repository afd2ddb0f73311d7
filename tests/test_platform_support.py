"""`tilinglib.toolchain.platform_support`: each thing the emulator and the grader ask of the OS, taken
away here as a laptop without it lacks it (monkeypatch in this process; in the grading
process, a wrapper that deletes it before the worker starts), and the fallback checked: it is
taken, it still enforces what it can, and what it cannot is said in words.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tilinglib.toolchain import platform_support as ps
from tilinglib.toolchain.frontend import clang
from tilinglib.grading import assignments as assignments_module
from tilinglib.grading.cli import run_setup_files
from tilinglib.grading.sandbox import Limits, apply_limits, grade_in_sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="simulates other systems' absences from Linux's")

LIMIT_NAMES = ["RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE",
               "RLIMIT_NPROC"]

SETUP = '''
import time
from tilinglib.grading import Check, GradeReport
from tilinglib.grading.assignments import ASSIGNMENTS, Answer, Assignment

def spin(a):
    while True:
        pass

def sleep(a):
    time.sleep(3600)

def hog(a):
    blocks = []
    while True:
        blocks.append(b"\\x01" * (32 * 2**20))      # written, so resident
        time.sleep(0.05)                              # 640 MB/s: the watch looks in time

def fine(a):
    return GradeReport("fine", (Check("fine", 1.0, 1.0, True, "ok"),))

ANSWERS = (Answer("X", "fake-answer", (int,)),)
for name, grader in [("spin", spin), ("sleep", sleep), ("hog", hog), ("fine", fine)]:
    ASSIGNMENTS["fake_" + name] = Assignment("fake_" + name, ANSWERS, 1.0, grader)
'''

KERNEL = """
__global__ void scale(int n, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
"""


@pytest.fixture
def setup_file(tmp_path, monkeypatch):
    monkeypatch.setattr(assignments_module, "ASSIGNMENTS", dict(assignments_module.ASSIGNMENTS))
    path = tmp_path / "fakes.py"
    path.write_text(SETUP)
    run_setup_files([path])
    return path


def without_in_worker(tmp_path, monkeypatch, prelude: str) -> None:
    """Start every grading process through a wrapper that runs `prelude` (which deletes
    something) and then the worker: the sandbox runs ``sys.executable -s -B -m
    tilinglib.grading._worker``, and sys.executable is the wrapper."""
    wrapper = tmp_path / "python-without"
    wrapper.write_text(f"#!{sys.executable}\n"
                       "import runpy, signal, sys\n"
                       f"{prelude}\n"
                       "sys.argv = ['tilinglib.grading._worker']\n"
                       "runpy.run_module('tilinglib.grading._worker', run_name='__main__')\n")
    wrapper.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(wrapper))


def grade_fake(name, setup, **limits):
    limits = Limits(**{"wall_seconds": 20.0, "cpu_seconds": 20, **limits})
    return grade_in_sandbox(f"fake_{name}", {"X": "1"}, 1.0, limits=limits, setup=(str(setup),))


def run_kernel():
    import tilinglib.emulator as emu

    f = emu.SourceModule(KERNEL).get_function("scale")
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    f(np.int32(100), emu.In(x), emu.Out(y), block=(64, 1, 1), grid=(2, 1))
    return x, y


def limits_of(pid: int) -> dict:
    """Soft limits of a Linux process, from /proc/PID/limits: {'Max cpu time': '35', ...}."""
    out = {}
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines()[1:]:
        out[line[:26].strip()] = line[26:47].split()[0]
    return out


# ------------------------------------------------------------------------------ Linux has it all
def test_on_linux_nothing_is_missing():
    assert ps.resource_module() is not None and ps.can_fork() and ps.has_prlimit()
    assert ps.memory_limit_enforced()
    assert ps.unenforced_limits() == [] and ps.caveats() == []
    assert ps.session_options() == {"start_new_session": True}
    assert ps.signal_number("SIGXCPU") == signal.SIGXCPU
    assert callable(ps.mallopt_function())


# ------------------------------------------------------------------------------ resource
def test_without_resource_no_limit_is_set_and_the_grader_says_what_still_holds(monkeypatch):
    monkeypatch.setitem(sys.modules, "resource", None)       # `import resource` fails
    assert ps.resource_module() is None
    assert not ps.set_limit("RLIMIT_CPU", 10)
    assert apply_limits(Limits()) == LIMIT_NAMES
    assert ps.unenforced_limits() == ["memory_watched", "cpu", "files", "processes"]
    words = " ".join(ps.caveats())
    assert "watched every 0.2 s" in words and "wall-clock limit (--timeout) still stops" in words
    # clang runs without limits of its own, under its deadline: a compile still works
    assert clang._clang_limits() == [] and not clang._has_prlimit()
    clang.stop_spare()
    x, y = run_kernel()
    np.testing.assert_array_equal(y, 2 * x + 1)
    clang.stop_spare()


def test_a_grading_process_without_resource_is_stopped_by_the_wall_clock_and_memory_watch(
        tmp_path, monkeypatch, setup_file):
    without_in_worker(tmp_path, monkeypatch, "sys.modules['resource'] = None")
    monkeypatch.setattr(ps, "memory_limit_enforced", lambda: False)
    t0 = time.monotonic()
    spun = grade_fake("spin", setup_file, wall_seconds=4.0, cpu_seconds=1)
    # no CPU limit in the process: its own wall-clock timer stops it (before the parent's
    # kill at 4 s), not the CPU limit of 1 s
    assert spun.status == "timeout" and "wall-clock" in spun.message
    assert 1.5 < time.monotonic() - t0 < 8
    hog = grade_fake("hog", setup_file, memory_bytes=512 * 2**20)
    assert hog.status == "memory" and "stopped past 0.5 GiB" in hog.message
    assert grade_fake("fine", setup_file).status == "graded"


def test_memory_watch_kills_past_the_limit_where_rlimit_as_is_not_enforced(tmp_path,
                                                                           monkeypatch,
                                                                           setup_file):
    """macOS: RLIMIT_AS is accepted and ignored. Simulated by a grading process that cannot
    set it (the name deleted from its `resource`) and a parent that knows it is not
    enforced: the parent's watch of its resident memory kills it."""
    without_in_worker(tmp_path, monkeypatch, "import resource; del resource.RLIMIT_AS")
    monkeypatch.setattr(ps, "memory_limit_enforced", lambda: False)
    looks = []
    real = ps.process_rss_bytes
    monkeypatch.setattr(ps, "process_rss_bytes", lambda pid: looks.append(pid) or real(pid))
    t0 = time.monotonic()
    hog = grade_fake("hog", setup_file, memory_bytes=512 * 2**20)
    assert hog.status == "memory" and "stopped past 0.5 GiB" in hog.message
    assert time.monotonic() - t0 < 15 and looks           # the watch looked, and killed
    # a request larger than a pipe's buffer still reaches the process under the watch
    big = grade_in_sandbox("fake_fine", {"X": "1" + " " * 300_000}, 1.0,
                           limits=Limits(wall_seconds=20.0, cpu_seconds=20),
                           setup=(str(setup_file),))
    assert big.status == "graded" and big.score == 1.0
    # on Linux the kernel's limit stops it (a MemoryError in the process): no watch
    monkeypatch.undo()
    monkeypatch.setattr(assignments_module, "ASSIGNMENTS", dict(assignments_module.ASSIGNMENTS))
    run_setup_files([setup_file])
    monkeypatch.setattr(ps, "process_rss_bytes", lambda pid: looks.append("linux"))
    looks.clear()
    hog = grade_fake("hog", setup_file, memory_bytes=512 * 2**20)
    assert hog.status == "memory" and "ran out of memory" in hog.message and looks == []


def test_resident_memory_is_read_without_proc(monkeypatch):
    """A child holding 64 MiB of touched memory (a fresh process: in this one, memory freed
    by earlier tests may be reused without the resident size growing) is read as resident
    by /proc, psutil and ps alike."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys, time, numpy as np\n"
         "big = np.ones(64 * 2**20 // 8)\nprint('ready', flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        now = ps.process_rss_bytes(child.pid)
        assert now > 64 * 2**20
        monkeypatch.setattr(ps, "PROC", Path("/nonexistent-proc"))
        try:
            import psutil  # noqa: F401
            by_psutil = ps.process_rss_bytes(child.pid)
            assert abs(by_psutil - now) < 16 * 2**20
        except ImportError:
            pass
        monkeypatch.setitem(sys.modules, "psutil", None)      # macOS without psutil: ps
        by_ps = ps.process_rss_bytes(child.pid)
        assert abs(by_ps - now) < 16 * 2**20
        assert ps.process_rss_bytes(2**22 + 12345) is None     # no such process
    finally:
        child.stdin.close()
        child.wait(timeout=30)


# ------------------------------------------------------------------------------ prlimit, fork
def test_without_prlimit_clang_gets_its_limits_before_it_starts(monkeypatch):
    """Where there is no prlimit (macOS), clang's limits are set in the child before exec
    (fork, not vfork): the clang process has them all the same."""
    cmd = clang.clang_command() + clang.FLAGS
    want = {"Max cpu time": str(int(clang.CLANG_SECONDS) + 5),
            "Max address space": str(clang.CLANG_MEMORY_BYTES)}
    for absent in (False, True):
        if absent:
            monkeypatch.delattr(ps.resource_module(), "prlimit")
        assert clang._has_prlimit() is not absent
        c = clang._Clang(cmd)
        try:
            got = limits_of(c.proc.pid)
            assert {k: got[k] for k in want} == want, absent
        finally:
            c.close()
    clang.stop_spare()
    x, y = run_kernel()
    np.testing.assert_array_equal(y, 2 * x + 1)
    clang.stop_spare()


def test_without_fork_there_is_no_clang_server_and_clang_runs_directly(monkeypatch):
    monkeypatch.delattr(os, "fork")
    monkeypatch.setattr(clang, "_SERVER", None)
    assert not ps.can_fork()
    clang.start_server()
    assert clang._SERVER is None
    x, y = run_kernel()
    np.testing.assert_array_equal(y, 2 * x + 1)


# ------------------------------------------------------------------------------ killpg, setsid
def test_without_killpg_the_grading_process_alone_is_killed(tmp_path, monkeypatch, setup_file):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            **ps.session_options())
    monkeypatch.delattr(os, "killpg")
    assert ps.unenforced_limits() == ["process_group"]
    assert "only the process itself is killed" in ps.caveats()[0]
    ps.kill_process_tree(proc)
    assert proc.wait(10) == -signal.SIGKILL
    ps.kill_process_tree(proc)                            # ended already: no error
    t0 = time.monotonic()
    assert grade_fake("sleep", setup_file, wall_seconds=3.0).status == "timeout"
    assert time.monotonic() - t0 < 10
    monkeypatch.delattr(os, "setsid")
    assert ps.session_options() == {}
    assert grade_fake("fine", setup_file).status == "graded"


# ------------------------------------------------------------------------------ SIGXCPU, setitimer
def test_without_a_sigxcpu_handler_the_cpu_limit_still_ends_grading(tmp_path, monkeypatch,
                                                                    setup_file):
    without_in_worker(tmp_path, monkeypatch, "del signal.SIGXCPU")
    spun = grade_fake("spin", setup_file, wall_seconds=30.0, cpu_seconds=2)
    # no clean stop in the process: the kernel's SIGXCPU ends it, the parent says so
    assert spun.status == "timeout"
    assert "stopped by the system after using 2 s of CPU time" in spun.message
    assert spun.seconds < 15


def test_without_setitimer_the_parents_deadline_ends_grading(tmp_path, monkeypatch,
                                                             setup_file):
    monkeypatch.delattr(signal, "setitimer")
    assert ps.start_wall_timer(1.0) is False
    ps.stop_wall_timer()
    monkeypatch.undo()
    without_in_worker(tmp_path, monkeypatch, "del signal.setitimer")
    slept = grade_fake("sleep", setup_file, wall_seconds=8.0)
    # the worker's own timer would stop it 2 s before the limit, with its reply; without it
    # the parent kills it at the limit: the same status
    assert slept.status == "timeout" and "8 s of wall-clock time" in slept.message
    assert slept.seconds >= 8.0
    monkeypatch.undo()
    monkeypatch.setattr(assignments_module, "ASSIGNMENTS", dict(assignments_module.ASSIGNMENTS))
    run_setup_files([setup_file])
    slept = grade_fake("sleep", setup_file, wall_seconds=8.0)
    assert slept.status == "timeout" and slept.seconds < 7.9


# ------------------------------------------------------------------------------ mallopt
def test_without_glibcs_mallopt_the_emulator_keeps_the_default_allocator(monkeypatch):
    from tilinglib.toolchain.runtime import execute

    import ctypes
    import platform

    class NoMallopt:
        def __init__(self, name):
            pass

    monkeypatch.setattr(ctypes, "CDLL", NoMallopt)
    assert ps.mallopt_function() is None
    monkeypatch.undo()
    monkeypatch.setattr(platform, "libc_ver", lambda *a, **k: ("", ""))     # musl, macOS
    assert ps.mallopt_function() is None
    monkeypatch.setattr(execute, "_malloc_tuned", None)
    assert execute.keep_temporaries_in_process() is False
    x, y = run_kernel()
    np.testing.assert_array_equal(y, 2 * x + 1)


# ------------------------------------------------------------------------------ what is said
def test_the_command_says_what_this_system_cannot_enforce_and_records_it(tmp_path,
                                                                        monkeypatch, capsys):
    import json

    from tilinglib.grading.cli import main

    (tmp_path / "submitted" / "ada" / "a1_tiled_sgemm").mkdir(parents=True)
    monkeypatch.setattr(ps, "memory_limit_enforced", lambda: False)      # macOS
    monkeypatch.delattr(os, "killpg")
    argv = [str(tmp_path / "submitted"), "--quiet", "--results", str(tmp_path / "g.json"),
            "--out", str(tmp_path / "g.csv"), "--feedback-dir", str(tmp_path / "fb")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "tilinglib.grading: the memory limit (--memory) is not enforced by the kernel" in err
    assert "only the process itself is killed" in err
    settings = json.loads((tmp_path / "g.json").read_text())["settings"]
    assert settings["unenforced"] == ["memory_watched", "process_group"]
    monkeypatch.undo()
    assert main(argv) == 0
    assert "tilinglib.grading: the" not in capsys.readouterr().err
    assert json.loads((tmp_path / "g.json").read_text())["settings"]["unenforced"] == []
