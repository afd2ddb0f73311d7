"""Stage 2 of the front end (tilinglib/toolchain/frontend/clang.py): finding clang, running it under
limits, and its input keeping the student's line numbers."""

import os
import subprocess
import sys

import pytest

from tilinglib.emulator import SourceModule
from tilinglib.errors import CompileError
from tilinglib.toolchain.frontend import clang as C
from tilinglib.toolchain.frontend import preprocess


def test_a_missing_clang_says_pip_install_ziglang(monkeypatch):
    monkeypatch.setenv("TILINGLIB_CLANG", "/nonexistent/zig")
    with pytest.raises(CompileError, match="pip install ziglang"):
        C.clang_command()


def test_tilinglib_clang_may_name_the_zig_binary(monkeypatch):
    import ziglang

    zig = os.path.join(os.path.dirname(ziglang.__file__), "zig")
    monkeypatch.setenv("TILINGLIB_CLANG", zig)
    assert C.clang_command() == [zig, "clang"]
    root, diagnostics, offset = C.run_clang(preprocess("__global__ void k(int* a) {}\n").text)
    assert root["kind"] == "TranslationUnitDecl" and offset > 0


def test_the_students_line_l_is_line_l_after_the_prelude():
    pre = preprocess("// one\n#if 0\nskipped\n#endif\n__global__ void k(int* a) { a[0] = 1; }\n")
    text, offset = C.clang_input(pre.text)
    assert text.split("\n")[offset + 5 - 1] == "__global__ void k(int* a) { a[0] = 1; }"
    assert "#line" not in text and "#include" not in text


def test_clang_itself_finds_no_header():
    # -nostdinc -nobuiltininc: even a header clang ships is not found (our preprocessor
    # refuses #include before clang; here clang itself is asked).
    root, diagnostics, _ = C.run_clang('#include <stddef.h>\nint x;\n')
    assert C.has_errors(diagnostics) and "'stddef.h' file not found" in diagnostics


def test_a_compile_runs_under_the_graders_address_space_limit():
    code = ("import resource\n"
            "resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))\n"
            "from tilinglib.emulator import SourceModule\n"
            "m = SourceModule('template <int N> __global__ void k(float* a) { a[0] = N; }\\n'\n"
            "                 'template __global__ void k<3>(float*);')\n"
            "print(sorted(m._program.kernels))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "['k<3>']", out.stderr


def test_after_start_server_clang_runs_in_the_forked_child():
    # As the grader's worker: the server is started, then this process may start nothing
    # (Popen fails, as under RLIMIT_NPROC 0 for a non-root user); compiles still work.
    code = ("import subprocess\n"
            "from tilinglib.toolchain.frontend import clang\n"
            "clang.start_server()\n"
            "def refuse(*a, **k):\n"
            "    raise BlockingIOError(11, 'Resource temporarily unavailable')\n"
            "subprocess.Popen = refuse\n"
            "from tilinglib.emulator import SourceModule\n"
            "m = SourceModule('template <int N> __global__ void k(float* a) { a[0] = N; }\\n'\n"
            "                 'template __global__ void k<7>(float*);')\n"
            "print(sorted(m._program.kernels))\n"
            "try:\n"
            "    SourceModule('__global__ void k(float* a) { a[0] = nope; }')\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e.line)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split("\n")[:2] == ["['k<7>']", "CompileError 1"], out.stderr


def test_without_the_server_a_refused_start_is_a_compile_error_not_a_traceback():
    code = ("import subprocess\n"
            "def refuse(*a, **k):\n"
            "    raise BlockingIOError(11, 'Resource temporarily unavailable')\n"
            "subprocess.Popen = refuse\n"
            "from tilinglib.emulator import SourceModule\n"
            "try:\n"
            "    SourceModule('__global__ void k(float* a) { a[0] = 1; }')\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, str(e).split(':')[0])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == ("CompileError clang could not start ([Errno 11] Resource "
                                  "temporarily unavailable)"), out.stderr


def test_the_pre_cuda9_shuffle_is_named_with_its_replacement():
    with pytest.raises(CompileError) as info:
        SourceModule("__global__ void k(float* a) {\n  a[0] = __shfl_down(a[0], 1);\n}\n")
    assert info.value.line == 2
    assert "__shfl_down_sync(0xffffffff, ...)" in str(info.value)


def _limits_of(pid: int) -> dict:
    """{'Max address space': soft, 'Max cpu time': soft} read from /proc/PID/limits."""
    out = {}
    with open(f"/proc/{pid}/limits") as f:
        for row in f.read().splitlines()[1:]:
            name, soft = row[:26].strip(), row[26:47].strip()
            out[name] = soft
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_spare_clang_waits_with_its_limits_already_set():
    # After a compile one clang is kept started for the next; it must already run under
    # the address-space and CPU limits before any source reaches it.
    C.run_clang(preprocess("__global__ void k(int* a) { a[0] = 1; }\n").text)
    spare = C._SPARE
    assert spare is not None and spare.proc.poll() is None
    limits = _limits_of(spare.proc.pid)
    assert int(limits["Max address space"]) == C.CLANG_MEMORY_BYTES
    assert int(limits["Max cpu time"]) == int(C.CLANG_SECONDS) + 5
    C.stop_spare()
    assert C._SPARE is None and spare.proc.poll() is not None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_does_not_keep_the_parents_clang_waiting(monkeypatch):
    # A forked process (the grader's workers, multiprocessing) inherits the spare's pipes.
    # If the child kept its copy of the write end, the parent's clang would never see the
    # end of its input and the parent's next compile would run into the deadline.
    monkeypatch.setattr(C, "CLANG_SECONDS", 8.0)
    text = preprocess("__global__ void k(int* a) { a[0] = 2; }\n").text
    C.run_clang(text)
    assert C._SPARE is not None
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:                                  # the child: wait until the parent is done
        try:
            os.close(go_w)
            ok = C._SPARE is None
            os.read(go_r, 1)
        finally:
            os._exit(0 if ok else 3)
    os.close(go_r)
    try:
        root, diagnostics, _ = C.run_clang(text)  # CompileError("took more than 8 s") if held
        assert root["kind"] == "TranslationUnitDecl"
    finally:
        os.close(go_w)
        _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def _fake_clang(tmp_path, monkeypatch, script: str):
    fake = tmp_path / "fakeclang"
    fake.write_text("#!/bin/sh\ncat > /dev/null\n" + script)
    fake.chmod(0o755)
    monkeypatch.setenv("TILINGLIB_CLANG", str(fake))
    return C._Clang(C.clang_command() + C.FLAGS)


@pytest.mark.skipif(os.name != "posix", reason="the select() reader")
def test_a_complete_ast_with_no_diagnostic_does_not_wait_for_clangs_exit(tmp_path, monkeypatch):
    # clang spends ~3 ms freeing its memory after the AST's last brace; that is waited for
    # in the background. (The fake sleeps 5 s after writing: it is still running.)
    clang = _fake_clang(tmp_path, monkeypatch,
                        "printf '{\\n  \"kind\": \"TranslationUnitDecl\"\\n}'\nexec sleep 5\n")
    status, rc, out, err = clang.run(b"int x;\n")
    assert (status, rc, err) == ("ok", 0, b"")
    assert C.read_ast(out) == {"kind": "TranslationUnitDecl"}
    assert clang.proc.poll() is None
    clang.proc.kill()


@pytest.mark.skipif(os.name != "posix", reason="the select() reader")
def test_a_diagnostic_before_the_ast_waits_for_clangs_exit_status(tmp_path, monkeypatch):
    clang = _fake_clang(tmp_path, monkeypatch,
                        "echo '<stdin>:1:1: error: nope' >&2\n"
                        "printf '{\\n  \"kind\": \"TranslationUnitDecl\"\\n}'\nexit 1\n")
    status, rc, out, err = clang.run(b"int x;\n")
    assert (status, rc) == ("ok", 1) and b"error: nope" in err
    assert clang.proc.poll() == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_without_prlimit_the_limits_are_set_in_the_child_before_exec(monkeypatch):
    # macOS has setrlimit but no prlimit: there the child sets them before clang starts.
    monkeypatch.setattr(C, "_has_prlimit", lambda: False)
    clang = C._Clang(C.clang_command() + C.FLAGS)
    try:
        limits = _limits_of(clang.proc.pid)
        assert int(limits["Max address space"]) == C.CLANG_MEMORY_BYTES
        assert int(limits["Max cpu time"]) == int(C.CLANG_SECONDS) + 5
    finally:
        clang.close()
