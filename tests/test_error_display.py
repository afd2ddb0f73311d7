"""Tests of how a tilinglib error looks in a notebook (tilinglib.errors, IPython's
``_render_traceback_`` protocol) and outside one.

Each error a student's kernel or launch can cause is raised from a real IPython shell's cell
(`InteractiveShell.run_cell`), and what IPython prints is read back: at most 12 lines, the
class name, the student's CUDA line with a caret under the place at fault, the line of the
cell that made the call, and no frame of tilinglib. ``TILINGLIB_TRACEBACK=full`` gives the
full traceback back. One test runs a small notebook in a real ipykernel through nbclient.
"""

import re
import subprocess
import sys
import textwrap
import types

import nbformat
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

from tilinglib import errors
from tilinglib.errors import (CompileError, MemoryAccessError, RaceError, find_access,
                              quote_source)

MAX_LINES = 12

OOB = """\
__global__ void copy(const float* a, float* b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    b[i] = a[i + 1];
}
"""
SHARED_OOB = """\
__global__ void k(float* out)
{
    __shared__ float s[32];
    s[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
"""
BARRIER = """\
__global__ void k(float* a)
{
    if (threadIdx.x < 16) {
        __syncthreads();
    }
    __syncthreads();
    a[threadIdx.x] = 1.0f;
}
"""
RACE = """\
__global__ void k(float* a)
{
    __shared__ float s[64];
    s[threadIdx.x] = a[threadIdx.x];
    a[threadIdx.x] = s[63 - threadIdx.x];
}
"""
LOOP = """\
__global__ void k(float* a)
{
    for (int i = 0; i < 10; ) {
        a[threadIdx.x] += 1.0f;
    }
}
"""
UNDECLARED = """\
__global__ void k(float* a)
{
    a[threadIdx.x] = b;
}
"""


@pytest.fixture(scope="module")
def ipython():
    """One IPython shell for this module (history in memory), with the emulator's names and
    the kernels above; gone afterwards, so later tests see no IPython (get_ipython() None)."""
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    sh = InteractiveShell.instance(config=config)
    sh.user_ns.update(np=np, OOB=OOB, SHARED_OOB=SHARED_OOB, BARRIER=BARRIER, RACE=RACE,
                      LOOP=LOOP, UNDECLARED=UNDECLARED)
    sh.run_cell("from tilinglib.emulator import SourceModule, In, Out, InOut\n"
                "a = np.zeros(64, np.float32)")
    yield sh
    InteractiveShell.clear_instance()


@pytest.fixture
def shell(ipython, monkeypatch):
    monkeypatch.delenv(errors.TRACEBACK_ENV, raising=False)
    return ipython


def run(shell, cell):
    """Run `cell`; returns (the exception, the lines IPython printed for it)."""
    with capture_output() as cap:
        result = shell.run_cell(cell)
    assert result.error_in_exec is not None, cap.stdout + cap.stderr
    shown = (cap.stdout + cap.stderr).rstrip("\n")
    return result.error_in_exec, shown.splitlines()


def check_short(exc, lines, cls, cell_line):
    """The shape every error shares: short, named, the cell's line, no library frames."""
    assert type(exc) is cls
    assert 1 <= len(lines) <= MAX_LINES, "\n".join(lines)
    assert lines[0].startswith(f"{cls.__name__}: ")
    assert lines[-1] == cell_line
    text = "\n".join(lines)
    assert "tilinglib/" not in text and "Traceback" not in text and "site-packages" not in text


def caret_under(lines, line_number):
    """The character the caret points at, below the quote of `line_number`."""
    prefix = f"{line_number:5d} | "
    (at,) = [i for i, text in enumerate(lines) if text.startswith(prefix)]
    caret = lines[at + 1]
    assert caret.strip() == "^", lines
    return lines[at][caret.index("^")], lines[at][len(prefix):]


# --- run-time errors: the CUDA line with a caret --------------------------------------

def test_out_of_bounds_read(shell):
    exc, lines = run(shell, "f = SourceModule(OOB).get_function('copy')\n"
                            "f(In(a), Out(a), np.int32(64), block=(64, 1, 1), grid=(1, 1))")
    check_short(exc, lines, MemoryAccessError,
                "cell line 2: f(In(a), Out(a), np.int32(64), block=(64, 1, 1), grid=(1, 1))")
    assert caret_under(lines, 4) == ("a", "    b[i] = a[i + 1];")     # the read, not b[i]
    assert "thread (63, 0, 0) in block (0, 0, 0)" in "\n".join(lines)
    assert exc.line == 4 and exc.column == 12 and exc.source_line == "    b[i] = a[i + 1];"


def test_out_of_bounds_shared_write(shell):
    exc, lines = run(shell, "SourceModule(SHARED_OOB).get_function('k')(\n"
                            "    Out(a), block=(64, 1, 1), grid=(1, 1))")
    check_short(exc, lines, MemoryAccessError,
                "cell line 1: SourceModule(SHARED_OOB).get_function('k')(")
    assert caret_under(lines, 4) == ("s", "    s[threadIdx.x] = 1.0f;")


def test_barrier_in_a_branch(shell):
    exc, lines = run(shell, "x = 1\nSourceModule(BARRIER).get_function('k')"
                            "(Out(a), block=(64, 1, 1), grid=(1, 1))")
    check_short(exc, lines, errors.BarrierError,
                "cell line 2: SourceModule(BARRIER).get_function('k')(Out(a), "
                "block=(64, 1, 1), grid=(1, 1))")
    assert caret_under(lines, 4) == ("_", "        __syncthreads();")


def test_race_quotes_both_accesses(shell):
    exc, lines = run(shell, "g = SourceModule(RACE).get_function('k')\n"
                            "g(InOut(a), block=(64, 1, 1), grid=(1, 1), hazards='raise')")
    check_short(exc, lines, RaceError,
                "cell line 2: g(InOut(a), block=(64, 1, 1), grid=(1, 1), hazards='raise')")
    assert (exc.kind, exc.array, exc.line, exc.other_line) == ("read-after-write", "s", 5, 4)
    # the write on line 4 (its left-hand side), then the read on line 5
    assert caret_under(lines, 4) == ("s", "    s[threadIdx.x] = a[threadIdx.x];")
    char, text = caret_under(lines, 5)
    assert char == "s" and text == "    a[threadIdx.x] = s[63 - threadIdx.x];"
    line5 = [t for t in lines if t.startswith("    5 | ")][0]
    assert lines[lines.index(line5) + 1].index("^") == line5.index("s[63")


def test_runaway_loop(shell):
    exc, lines = run(shell, "SourceModule(LOOP).get_function('k')"
                            "(InOut(a), block=(64, 1, 1), grid=(1, 1), max_steps=1000)")
    check_short(exc, lines, errors.StepBudgetExceeded, lines[-1])
    assert lines[-1].startswith("cell line 1: SourceModule(LOOP)")
    assert caret_under(lines, 3) == ("f", "    for (int i = 0; i < 10; ) {")
    text = " ".join(lines)
    assert "max_steps=... in the call of k" in text and "f(..." not in text


# --- errors before the kernel runs ----------------------------------------------------

def test_compile_error(shell):
    exc, lines = run(shell, "x = 1\nmod = SourceModule(UNDECLARED)")
    check_short(exc, lines, CompileError, "cell line 2: mod = SourceModule(UNDECLARED)")
    assert lines[0] == "CompileError: kernel.cu:3:22: 'b' is not declared"
    assert caret_under(lines, 3) == ("b", "    a[threadIdx.x] = b;")


def test_argument_error(shell):
    exc, lines = run(shell, "f = SourceModule(OOB).get_function('copy')\n"
                            "f(a, Out(a), np.int32(64), block=(64, 1, 1), grid=(1, 1))")
    check_short(exc, lines, errors.KernelArgumentError,
                "cell line 2: f(a, Out(a), np.int32(64), block=(64, 1, 1), grid=(1, 1))")
    assert "tl.In(a)" in " ".join(lines)


def test_launch_error(shell):
    exc, lines = run(shell, "f = SourceModule(OOB).get_function('copy')\n"
                            "f(In(a), Out(a), np.int32(64), block=(2048, 1, 1), grid=(1, 1))")
    check_short(exc, lines, errors.LaunchError, lines[-1])
    assert lines[-1].startswith("cell line 2: f(In(a)")
    assert "block.x = 2048" in lines[0]


@pytest.mark.parametrize("define, tile_sentence", [
    ("", False), ("#define TILE 33\n", True), ("#ifndef TILE\n#define TILE 8\n#endif\n", True)])
def test_a_block_over_1024_threads_speaks_of_tile_only_where_the_kernel_has_one(
        shell, define, tile_sentence):
    shell.user_ns["SRC"] = define + OOB
    exc, lines = run(shell, "f = SourceModule(SRC).get_function('copy')\n"
                            "f(In(a), Out(a), np.int32(64), block=(33, 33, 1), grid=(1, 1))")
    check_short(exc, lines, errors.LaunchError, lines[-1])
    generic = ("copy: block=(33, 33, 1) has 1,089 threads; a block holds at most 1,024 "
               "threads, e.g. 32 x 32: use a smaller block.")
    tile = (" For a TILE x TILE tile with one thread per element, TILE can be at most 32 "
            "(32 x 32 = 1,024).")
    assert str(exc) == generic + (tile if tile_sentence else "")


def test_unknown_kernel(shell):
    exc, lines = run(shell, "SourceModule(OOB).get_function('cpy')")
    check_short(exc, lines, errors.KernelNotFoundError,
                "cell line 1: SourceModule(OOB).get_function('cpy')")
    assert "kernels found: copy" in lines[0]


def test_backend_unavailable(shell, monkeypatch):
    from tilinglib import backend

    monkeypatch.setenv(backend.ENV_VAR, "gpu")
    backend.get_backend.cache_clear()
    try:
        exc, lines = run(shell, "import tilinglib as tl\ntl.backend_name()")
    finally:
        backend.get_backend.cache_clear()
    check_short(exc, lines, errors.BackendUnavailableError, "cell line 2: tl.backend_name()")
    assert "'gpu'" in " ".join(lines)


# --- the PyCUDA backend (PyCUDA faked, as in test_pycuda) ------------------------------

NVCC_THREE_ERRORS = ('kernel.cu(3): error: identifier "b" is undefined\n'
                     '      a[threadIdx.x] = b;\n'
                     '                       ^\n\n'
                     'kernel.cu(4): error: expected a ";"\n\n'
                     'kernel.cu(5): error: expected a declaration\n\n'
                     '3 errors detected in the compilation of "kernel.cu".\n')


class FakeNvccError(Exception):
    def __init__(self, msg, command_line, stdout=None, stderr=None):
        super().__init__(msg)
        self.msg, self.command_line, self.stdout, self.stderr = msg, command_line, stdout, stderr


class FakeDriverError(Exception):
    """Stands for pycuda.driver.LogicError."""


@pytest.fixture
def fake_gpu(monkeypatch):
    """PyCUDA's compiler and driver replaced: nvcc fails on UNDECLARED; launches of a kernel
    hit an illegal memory access."""
    from tilinglib.toolchain.backends import pycuda as _pycuda
    from tilinglib.launch import DeviceLimits

    class FakeFunction:
        num_regs, shared_size_bytes, local_size_bytes, max_threads_per_block = 80, 0, 0, 1024
        fail_with = "cuCtxSynchronize failed: an illegal memory access was encountered"

        def get_attribute(self, attribute):
            return 48 * 1024

        def __call__(self, *args, **kwargs):
            raise FakeDriverError(self.fail_with)

    class FakeSourceModule:
        def __init__(self, source, **kwargs):
            if "= b;" in source:
                raise FakeNvccError("nvcc compilation failed", ["nvcc"], stdout="",
                                    stderr=NVCC_THREE_ERRORS)
            self.module = self

        def get_function(self, name):
            return FakeFunction()

    pycuda = types.ModuleType("pycuda")
    compiler = types.ModuleType("pycuda.compiler")
    driver = types.ModuleType("pycuda.driver")
    compiler.SourceModule = FakeSourceModule
    driver.CompileError = FakeNvccError
    pycuda.compiler, pycuda.driver = compiler, driver
    for name, module in (("pycuda", pycuda), ("pycuda.compiler", compiler),
                         ("pycuda.driver", driver)):
        monkeypatch.setitem(sys.modules, name, module)
    drv = types.SimpleNamespace(function_attribute=types.SimpleNamespace(
        MAX_DYNAMIC_SHARED_SIZE_BYTES="maxdyn"))
    device = types.SimpleNamespace(name=lambda: "NVIDIA H200")
    session = _pycuda.CudaSession(drv, device, DeviceLimits())
    monkeypatch.setattr(_pycuda.CudaSession, "current", staticmethod(lambda: session))
    return types.SimpleNamespace(SourceModule=_pycuda.SourceModule, FakeFunction=FakeFunction)


def test_nvcc_compile_error_shows_the_first_error(shell, fake_gpu):
    shell.user_ns["GpuSourceModule"] = fake_gpu.SourceModule
    exc, lines = run(shell, "GpuSourceModule(UNDECLARED)")
    check_short(exc, lines, CompileError, "cell line 1: GpuSourceModule(UNDECLARED)")
    assert lines[1] == 'kernel.cu(3): error: identifier "b" is undefined'
    assert "and 2 more errors" in lines[2]
    assert caret_under(lines, 3) == ("b", "    a[threadIdx.x] = b;")
    assert exc.column == 22
    # all of nvcc's output stays in the message, for print() and plain Python
    assert 'expected a declaration' in str(exc) and "expected a declaration" not in "\n".join(lines)


def test_lost_context(shell, fake_gpu):
    shell.user_ns["GpuSourceModule"] = fake_gpu.SourceModule
    exc, lines = run(shell, "f = GpuSourceModule(OOB).get_function('copy')\n"
                            "f(In(a), InOut(a), np.int32(64), block=(64, 1, 1), grid=(1, 1))")
    check_short(exc, lines, errors.ContextLostError, lines[-1])
    assert lines[-1].startswith("cell line 2: f(In(a), InOut(a)")
    assert "restart the notebook kernel" in lines[0]
    exc, lines = run(shell, "f(In(a), InOut(a), np.int32(64), block=(64, 1, 1), grid=(1, 1))")
    check_short(exc, lines, errors.ContextLostError, lines[-1])
    assert len(lines) <= 4


def test_launch_the_driver_refuses(shell, fake_gpu, monkeypatch):
    monkeypatch.setattr(fake_gpu.FakeFunction, "fail_with",
                        "cuLaunchKernel failed: too many resources requested for launch")
    shell.user_ns["GpuSourceModule"] = fake_gpu.SourceModule
    exc, lines = run(shell, "f = GpuSourceModule(OOB).get_function('copy')\n"
                            "f(In(a), InOut(a), np.int32(64), block=(1024, 1, 1), grid=(1, 1))")
    check_short(exc, lines, errors.LaunchError, lines[-1])
    assert lines[-1].startswith("cell line 2: f(In(a), InOut(a)")
    # 1,024 threads x 80 registers (the fake's num_regs) = 81,920 > 65,536 per block
    assert "A block of 1,024 threads x 80 registers per thread needs 81,920 registers; a " \
           "block may have 65,536." in " ".join(lines)


# --- the developers' switch, and plain Python -----------------------------------------

def test_full_traceback_for_developers(shell, monkeypatch):
    cell = ("f = SourceModule(OOB).get_function('copy')\n"
            "f(In(a), Out(a), np.int32(64), block=(64, 1, 1), grid=(1, 1))")
    _, short = run(shell, cell)
    monkeypatch.setenv(errors.TRACEBACK_ENV, "full")
    exc, lines = run(shell, cell)
    text = "\n".join(lines)
    assert len(lines) > 2 * MAX_LINES
    assert "tilinglib/toolchain/runtime/module.py" in re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert not hasattr(exc, "_render_traceback_")           # IPython formats it itself
    monkeypatch.setenv(errors.TRACEBACK_ENV, "")
    assert hasattr(exc, "_render_traceback_")
    assert len(short) <= MAX_LINES


def test_plain_python_keeps_its_traceback_with_the_cuda_line():
    code = textwrap.dedent(f"""
        import numpy as np
        from tilinglib.emulator import SourceModule, In, Out
        a = np.zeros(64, np.float32)
        f = SourceModule({OOB!r}).get_function("copy")
        f(In(a), Out(a), np.int32(64), block=(64, 1, 1), grid=(1, 1))
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    err = done.stderr
    assert err.startswith("Traceback (most recent call last):")
    assert "tilinglib/toolchain/runtime/module.py" in err                 # Python's usual frames
    assert "tilinglib.errors.MemoryAccessError: Invalid __global__ read" in err
    assert err.rstrip().endswith("    4 |     b[i] = a[i + 1];\n"
                                 "                   ^")


def test_too_long_a_message_is_cut_but_keeps_the_quote():
    exc = CompileError("\n".join(f"note {i}" for i in range(30)), line=7, column=3,
                       source_line="  x = ;")
    lines = exc._render_traceback_()
    assert len(lines) <= MAX_LINES
    assert lines[0] == "CompileError: note 0"
    assert lines[-2:] == ["    7 |   x = ;", "          ^"]      # never raised: no caller
    # 30 notes + 2 quote lines = 32; 9 notes, the cut line and the quote make 12
    assert lines[-3] == "... (21 more lines: import sys; print(sys.last_value))"
    assert lines[1:-3] == [f"note {i}" for i in range(1, 9)] and "note 29" not in lines


def test_long_lines_wrap_without_splitting_coordinates():
    exc = errors.BarrierError("word " * 15 + "thread (12, 0, 0) in block (3, 1, 0) " + "x" * 90)
    lines = exc._render_traceback_()
    assert len(lines) == 3
    assert all(len(t) <= errors.NOTEBOOK_WIDTH for t in lines if "xxxx" not in t)
    assert any("thread (12, 0, 0)" in t for t in lines)
    assert any("block (3, 1, 0)" in t for t in lines)


# --- pieces ---------------------------------------------------------------------------

def test_quote_source_puts_the_caret_under_the_column():
    assert quote_source(4, "    b[i] = a[i + 1];", 12) == [
        "    4 |     b[i] = a[i + 1];",
        "                   ^"]
    assert quote_source(12, "\tx = y;", 6) == ["   12 |     x = y;", " " * 16 + "^"]
    assert quote_source(3, "int x;") == ["    3 | int x;"]


@pytest.mark.parametrize("text, name, write, column", [
    ("    b[i] = a[i + 1];", "a", False, 12),
    ("    b[i] = a[i + 1];", "b", True, 5),
    ("    As[ty][tx] = A[row * N + t * TILE + tx];", "As", True, 5),
    ("    sum += As[ty][k] * Bs[k][tx];", "Bs", False, 24),
    ("    s[i] += s[i + stride];", "s", True, 5),
    ("    s[i] += s[i + stride];", "s", False, 13),
    ("    if (a[i] == b[i]) c[i] = 1;", "a", True, 9),       # no write of a: the first a[
    ("    out[i] = xs[i];", "s", False, None),               # "s" only inside "xs"
])
def test_find_access(text, name, write, column):
    assert find_access(text, name, write) == column


# --- the TILE widget keeps its one-line errors ------------------------------------------

def test_tile_widget_error_stays_one_line():
    from tilinglib.emulator import In, Out, SourceModule
    from tilinglib.widgets import tile_explorer

    def measure(N, tile, source=None):
        x = np.zeros(64, np.float32)
        SourceModule(OOB).get_function("copy")(In(x), Out(x), np.int32(64),
                                               block=(64, 1, 1), grid=(1, 1))

    e = tile_explorer(64, value=16, measure=measure)
    assert 'data-state="error"' in e.status.value
    assert e.error.startswith("MemoryAccessError: Invalid __global__ read of size 4 bytes")
    assert "\n" not in e.error and " | " not in e.error


# --- a real notebook kernel -------------------------------------------------------------

def test_a_notebook_shows_a_kernel_error_in_a_few_lines(monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("TILINGLIB_BACKEND", "emulator")
    monkeypatch.delenv(errors.TRACEBACK_ENV, raising=False)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import numpy as np\nimport tilinglib as tl\n"
                                  f"OOB = {OOB!r}"),
        nbformat.v4.new_code_cell("a = np.zeros(64, np.float32)\n"
                                  "f = tl.SourceModule(OOB).get_function('copy')\n"
                                  "f(tl.In(a), tl.Out(a), np.int32(64), block=(64, 1, 1), "
                                  "grid=(1, 1))"),
    ]
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True).execute()
    (error,) = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert error.ename == "MemoryAccessError"
    shown = "\n".join(error.traceback).splitlines()
    assert 1 <= len(shown) <= MAX_LINES, "\n".join(shown)
    assert shown[0].startswith("MemoryAccessError: Invalid __global__ read")
    assert "    4 |     b[i] = a[i + 1];" in shown
    assert shown[-1] == ("cell line 3: f(tl.In(a), tl.Out(a), np.int32(64), "
                         "block=(64, 1, 1), grid=(1, 1))")
    assert "tilinglib/" not in "\n".join(shown)



# --- the same on a real GPU (PyCUDA and nvcc; run with -m gpu on the GPU machine) ------

@pytest.mark.gpu
def test_real_nvcc_compile_error_is_short_with_the_students_line(shell):
    import tilinglib as tl

    shell.user_ns["GpuSourceModule"] = tl.SourceModule
    exc, lines = run(shell, "GpuSourceModule(UNDECLARED)")
    check_short(exc, lines, CompileError, "cell line 1: GpuSourceModule(UNDECLARED)")
    # nvcc's own first error, at the student's line 3, and that line quoted with a caret
    assert lines[1].startswith("kernel.cu(3): error:") and '"b"' in lines[1], lines
    assert caret_under(lines, 3)[1] == "    a[threadIdx.x] = b;"


@pytest.mark.gpu
def test_real_launch_over_the_block_limit_is_short(shell):
    import tilinglib as tl

    shell.user_ns["GpuSourceModule"] = tl.SourceModule
    shell.user_ns["gpu_In"], shell.user_ns["gpu_InOut"] = tl.In, tl.InOut
    exc, lines = run(shell, "f = GpuSourceModule(OOB).get_function('copy')\n"
                            "f(gpu_In(a), gpu_InOut(a), np.int32(64), block=(2048, 1, 1), "
                            "grid=(1, 1))")
    check_short(exc, lines, errors.LaunchError, lines[-1])
    assert "over the limit of 1024" in " ".join(lines)


@pytest.mark.gpu
def test_real_illegal_address_is_one_short_error_then_the_same(tmp_path):
    # In a process of its own: the sticky error ends that process's CUDA context.
    script = tmp_path / "fault.py"
    script.write_text(textwrap.dedent('''
        import numpy as np
        from IPython.core.interactiveshell import InteractiveShell
        from IPython.utils.capture import capture_output
        sh = InteractiveShell.instance()
        sh.run_cell("import numpy as np, tilinglib as tl")
        sh.run_cell("src = '__global__ void k(float* a) { a[threadIdx.x + (1 << 28)] = 1.0f; }'")
        for cell in ["f = tl.SourceModule(src).get_function('k')\\n"
                     "a = np.zeros(32, np.float32)\\n"
                     "f(tl.InOut(a), block=(32, 1, 1), grid=(1, 1))",
                     "f(tl.InOut(a), block=(32, 1, 1), grid=(1, 1))"]:
            with capture_output() as cap:
                sh.run_cell(cell)
            print("=====")
            print((cap.stdout + cap.stderr).rstrip())
    '''))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300).stdout
    shown = [block.strip().splitlines() for block in out.split("=====")[1:]]
    assert len(shown) == 2, out
    for lines in shown:
        assert 1 <= len(lines) <= MAX_LINES, out
        assert lines[0].startswith("ContextLostError: "), out
        assert "Traceback" not in "\n".join(lines) and "site-packages" not in "\n".join(lines)
    assert "restart the notebook kernel" in shown[0][0]
