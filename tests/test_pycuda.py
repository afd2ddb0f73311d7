"""Tests of tilinglib.toolchain.backends.pycuda, the PyCUDA backend.

Without a GPU, PyCUDA's pieces are replaced by small fakes that behave as PyCUDA 2026.1 did on
the H200 (docs/h200-measurements.md). Tests marked `gpu` run the real thing.
"""

import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from tilinglib.toolchain.backends import pycuda as _pycuda
from tilinglib.errors import (CompileError, ContextLostError, KernelArgumentError,
                              KernelNotFoundError, LaunchError)
from tilinglib.launch import DeviceLimits

SOURCE = textwrap.dedent("""\
    __global__ void scale(int n, float a, float* x)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = a * y[i];
    }
    """)

NVCC_UNDEFINED = ('kernel.cu(4): error: identifier "y" is undefined\n'
                  '      if (i < n) x[i] = a * y[i];\n'
                  '                            ^\n\n'
                  '1 error detected in the compilation of "kernel.cu".\n')


class FakeNvccError(Exception):
    """Stands for pycuda.driver.CompileError."""

    def __init__(self, msg, command_line, stdout=None, stderr=None):
        super().__init__(msg)
        self.msg, self.command_line, self.stdout, self.stderr = msg, command_line, stdout, stderr


class FakeLogicError(Exception):
    """Stands for pycuda.driver.LogicError."""


# --- source wrapping and compile errors -----------------------------------------------

def test_wrapped_source_keeps_the_students_line_numbers():
    wrapped = _pycuda.wrap_source(SOURCE)
    lines = wrapped.splitlines()
    assert lines[0] == 'extern "C" {'
    assert lines[1] == "#line 1"
    # After '#line 1' the next line is line 1 again, so nvcc's line 4 is the student's line 4.
    assert lines[2:2 + len(SOURCE.splitlines())] == SOURCE.splitlines()
    assert lines[-1] == "}"
    assert _pycuda.wrap_source(SOURCE, no_extern_c=True) == SOURCE


def test_compile_error_names_the_line_and_keeps_nvcc_text():
    exc = FakeNvccError("nvcc compilation of /tmp/x/kernel.cu failed",
                        ["nvcc", "--cubin", "kernel.cu"], stdout="", stderr=NVCC_UNDEFINED)
    error = _pycuda.compile_error_from_nvcc(SOURCE, exc)
    assert isinstance(error, CompileError)
    assert error.line == 4
    assert error.source_line.strip() == "if (i < n) x[i] = a * y[i];"
    text = str(error)
    assert "first error at line 4 of your source" in text
    assert 'identifier "y" is undefined' in text
    assert "    4 |     if (i < n) x[i] = a * y[i];" in text
    assert error.command_line == ["nvcc", "--cubin", "kernel.cu"]


def test_too_much_shared_data_gets_the_numbers_in_bytes():
    stderr = ("ptxas error   : Entry function 'big' uses too much shared data "
              "(0x10000 bytes, 0xc000 max)\n")
    error = _pycuda.compile_error_from_nvcc(SOURCE, FakeNvccError("failed", [], stderr=stderr))
    assert error.line is None
    assert "65,536 bytes" in str(error) and "49,152 bytes (48 KiB)" in str(error)


# --- sticky errors and the context ----------------------------------------------------

@pytest.mark.parametrize("text, sticky", [
    ("cuCtxSynchronize failed: an illegal memory access was encountered", True),
    ("cuMemAlloc failed: an illegal memory access was encountered", True),
    ("cuCtxSynchronize failed: unspecified launch failure", True),
    ("cuCtxSynchronize failed: misaligned address", True),
    ("cuLaunchKernel failed: invalid argument", False),
    ("cuModuleGetFunction failed: named symbol not found", False),
])
def test_sticky_errors_are_recognised(text, sticky):
    assert _pycuda.is_sticky_error(FakeLogicError(text)) is sticky


class FakeDevice:
    def name(self):
        return "NVIDIA H200"


def fake_session():
    drv = types.SimpleNamespace(
        function_attribute=types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="maxdyn"))
    return _pycuda.CudaSession(drv, FakeDevice(), DeviceLimits())


def test_lost_context_is_reported_once_then_short():
    session = fake_session()
    with pytest.raises(ContextLostError) as first:
        with session.guard("running sgemmTiled"):
            raise FakeLogicError("cuCtxSynchronize failed: an illegal memory access was encountered")
    assert "restart the notebook kernel" in str(first.value)
    assert "illegal memory access" in str(first.value)
    assert "emulator" in str(first.value)
    ran = []
    with pytest.raises(ContextLostError) as later:
        with session.guard("compiling the module"):
            ran.append(True)
    assert ran == []                                   # nothing reached the driver
    assert "(earlier: running sgemmTiled" in str(later.value)
    assert len(str(later.value)) < len(str(first.value))


def test_other_errors_pass_through_the_guard():
    session = fake_session()
    with pytest.raises(FakeLogicError, match="invalid argument"):
        with session.guard("running k"):
            raise FakeLogicError("cuLaunchKernel failed: invalid argument")
    assert session.lost is None


# --- the checked function -------------------------------------------------------------

class FakeFunction:
    """Stands for pycuda.driver.Function (attributes as on the H200 for sgemmTiled)."""

    num_regs = 31
    shared_size_bytes = 8192
    local_size_bytes = 0
    max_threads_per_block = 1024

    def __init__(self, fail_with=None, max_dynamic=49152 - 8192):
        self.calls = []
        self.fail_with = fail_with
        self.max_dynamic = max_dynamic

    def get_attribute(self, attribute):
        assert attribute == "maxdyn"
        return self.max_dynamic

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        if self.fail_with:
            raise FakeLogicError(self.fail_with)


def sgemm_params():
    from tilinglib.toolchain.model.c_types import FLOAT, INT, Pointer
    from tests.test_launch import Param

    return [Param("N", INT), Param("A", Pointer(FLOAT)), Param("B", Pointer(FLOAT)),
            Param("C", Pointer(FLOAT))]


class In:
    def __init__(self, array):
        self.array = array


class Out(In):
    pass


def args(n=64, dtype=np.float32):
    a = np.ones((n, n), dtype)
    return [np.int32(n), In(a), In(a), Out(np.zeros((n, n), np.float32))]


def test_checked_function_exposes_pycuda_attributes():
    f = _pycuda.CheckedFunction(FakeFunction(), "sgemmTiled", sgemm_params(), fake_session())
    assert (f.num_regs, f.shared_size_bytes, f.local_size_bytes, f.max_threads_per_block) == \
        (31, 8192, 0, 1024)
    assert f.name == "sgemmTiled"


def test_checked_function_checks_before_pycuda_runs():
    raw = FakeFunction()
    f = _pycuda.CheckedFunction(raw, "sgemmTiled", sgemm_params(), fake_session())
    with pytest.raises(KernelArgumentError, match="A.astype"):
        f(*args(dtype=np.float64), block=(32, 32, 1), grid=(2, 2))
    with pytest.raises(LaunchError, match="2,048 threads"):
        f(*args(), block=(64, 32, 1), grid=(2, 2))
    with pytest.raises(LaunchError, match="8,192 static"):
        f(*args(), block=(32, 32, 1), grid=(2, 2), shared=48 * 1024)
    assert raw.calls == []
    f(*args(), block=[32, 32, 1], grid=(np.int64(2), 2), stream=None)
    (_, kwargs), = raw.calls
    assert kwargs["block"] == (32, 32, 1) and kwargs["grid"] == (2, 2)
    assert all(type(v) is int for v in kwargs["grid"])
    assert kwargs["stream"] is None


def test_opted_in_shared_memory_is_allowed():
    raw = FakeFunction(max_dynamic=200 * 1024)
    f = _pycuda.CheckedFunction(raw, "sgemmTiled", sgemm_params(), fake_session())
    f(*args(), block=(32, 32, 1), grid=(2, 2), shared=100 * 1024)
    assert len(raw.calls) == 1


def test_checked_function_after_a_crash():
    session = fake_session()
    raw = FakeFunction(fail_with="cuCtxSynchronize failed: an illegal memory access was encountered")
    f = _pycuda.CheckedFunction(raw, "sgemmTiled", sgemm_params(), session)
    with pytest.raises(ContextLostError, match="restart the notebook kernel"):
        f(*args(), block=(32, 32, 1), grid=(2, 2))
    with pytest.raises(ContextLostError, match="earlier: running sgemmTiled"):
        f(*args(), block=(32, 32, 1), grid=(2, 2))
    assert len(raw.calls) == 1


# --- the source module, with PyCUDA faked ---------------------------------------------

@pytest.fixture
def fake_pycuda(monkeypatch):
    """pycuda.compiler / pycuda.driver stand-ins; returns the list of compiled sources."""
    compiled = []

    class FakeModule:
        def get_function(self, name):
            if name != "scale":
                raise FakeLogicError("cuModuleGetFunction failed: named symbol not found")
            return FakeFunction()

    class FakeSourceModule:
        def __init__(self, source, nvcc="nvcc", options=None, keep=False, no_extern_c=False,
                     arch=None, code=None, cache_dir=None, include_dirs=[]):
            compiled.append(dict(source=source, options=options, no_extern_c=no_extern_c))
            if "y[i]" in source:
                raise FakeNvccError("nvcc compilation failed", ["nvcc"], stdout="",
                                    stderr=NVCC_UNDEFINED)
            self.module = FakeModule()

        def get_function(self, name):
            return self.module.get_function(name)

    pycuda = types.ModuleType("pycuda")
    compiler = types.ModuleType("pycuda.compiler")
    driver = types.ModuleType("pycuda.driver")
    compiler.SourceModule = FakeSourceModule
    driver.CompileError = FakeNvccError
    pycuda.compiler, pycuda.driver = compiler, driver
    for name, module in (("pycuda", pycuda), ("pycuda.compiler", compiler),
                         ("pycuda.driver", driver)):
        monkeypatch.setitem(sys.modules, name, module)
    session = fake_session()
    monkeypatch.setattr(_pycuda.CudaSession, "current", staticmethod(lambda: session))
    return compiled


def test_source_module_reports_compile_errors_at_the_students_line(fake_pycuda):
    with pytest.raises(CompileError) as err:
        _pycuda.SourceModule(SOURCE, options=["-DX=1"])
    assert err.value.line == 4
    sent = fake_pycuda[0]
    assert sent["no_extern_c"] is True
    assert sent["source"] == _pycuda.wrap_source(SOURCE)
    assert sent["options"] == ["-DX=1"]


def test_source_module_gives_checked_functions(fake_pycuda):
    good = SOURCE.replace("y[i]", "x[i]")
    mod = _pycuda.SourceModule(good)
    f = mod.get_function("scale")
    assert isinstance(f, _pycuda.CheckedFunction)
    assert [p.name for p in f.params] == ["n", "a", "x"]      # read by the emulator's parser
    with pytest.raises(KernelArgumentError, match=r"np\.float32\(2\.0\)"):
        f(np.int32(4), 2.0, In(np.ones(4, np.float32)), block=(4, 1, 1), grid=(1,))
    with pytest.raises(KernelNotFoundError, match="kernels: scale"):
        mod.get_function("scael")


# --- on a GPU -------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_compile_error_line_numbers():
    import tilinglib as tl

    with pytest.raises(CompileError) as err:
        tl.SourceModule(SOURCE)
    assert err.value.line == 4


@pytest.mark.gpu
def test_gpu_naive_sgemm_matches_numpy():
    import tilinglib as tl

    n = 64
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    f = tl.SourceModule(tl.kernels.load("sgemm_naive")).get_function("sgemmNaive")
    f(np.int32(n), tl.In(a), tl.In(b), tl.Out(c), block=(16, 16, 1), grid=tl.grid_for((n, n), (16, 16)))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(KernelArgumentError):
        f(np.int32(n), tl.In(a.astype(np.float64)), tl.In(b), tl.Out(c), block=(16, 16, 1), grid=(4, 4))


@pytest.mark.gpu
def test_gpu_illegal_access_is_reported_once():
    # In a process of its own: a lost context cannot be recovered.
    code = textwrap.dedent("""
        import numpy as np, tilinglib as tl
        from tilinglib.errors import ContextLostError
        src = "__global__ void bad(float* x) { x[threadIdx.x + 100000000] = 1.0f; }"
        f = tl.SourceModule(src).get_function("bad")
        x = np.zeros(32, np.float32)
        for attempt in range(2):
            try:
                f(tl.InOut(x), block=(32, 1, 1), grid=(1,))
            except ContextLostError as e:
                print("LOST", attempt, len(str(e)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    lines = out.split("\n")
    assert lines[0].startswith("LOST 0") and lines[1].startswith("LOST 1")


def test_missing_nvcc_says_how_to_get_it(fake_pycuda, monkeypatch):
    def no_nvcc(*args, **kwargs):
        raise OSError("error invoking 'nvcc --version': [Errno 2] No such file or directory")

    monkeypatch.setattr(sys.modules["pycuda.compiler"], "SourceModule", no_nvcc)
    with pytest.raises(CompileError, match="PATH"):
        _pycuda.SourceModule(SOURCE)
