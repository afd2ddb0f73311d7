"""Tests of tilinglib.backend: the choice between PyCUDA and the CPU emulator."""

import importlib.util
import os
import subprocess
import sys

import pytest

from tilinglib import backend as be
from tilinglib.errors import BackendUnavailableError
from tilinglib.launch import DeviceLimits

HAS_PYCUDA = importlib.util.find_spec("pycuda") is not None


@pytest.fixture
def fresh_choice():
    """Forget the process's backend choice before and after the test."""
    be.get_backend.cache_clear()
    yield
    be.get_backend.cache_clear()


def fake_backend(name):
    return be.Backend(name, f"{name}.SourceModule", "In", "Out", "InOut",
                      "a device", DeviceLimits(), "")


def no_gpu():
    raise ImportError("No module named 'pycuda'")


def broken_driver():
    raise RuntimeError("cuInit failed: no CUDA-capable device is detected")


@pytest.mark.parametrize("value, expected", [
    (None, None), ("", None), ("  ", None), ("emulator", "emulator"), (" PyCUDA ", "pycuda")])
def test_requested_reads_the_environment(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(be.ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(be.ENV_VAR, value)
    assert be._requested() == expected


def test_unknown_backend_name_is_refused(monkeypatch):
    monkeypatch.setenv(be.ENV_VAR, "cuda")
    with pytest.raises(BackendUnavailableError) as err:
        be._requested()
    assert "'cuda'" in str(err.value)
    assert "'pycuda' or 'emulator'" in str(err.value)


def test_auto_falls_back_to_the_emulator_and_says_why():
    chosen = be._decide(None, no_gpu, lambda: fake_backend("emulator"))
    assert chosen.name == "emulator"
    assert "PyCUDA is not installed" in chosen.reason
    chosen = be._decide(None, broken_driver, lambda: fake_backend("emulator"))
    assert "no CUDA device could be opened" in chosen.reason
    assert "no CUDA-capable device" in chosen.reason


def test_auto_prefers_the_gpu():
    chosen = be._decide(None, lambda: fake_backend("pycuda"), lambda: fake_backend("emulator"))
    assert chosen.name == "pycuda"
    assert chosen.reason == "PyCUDA opened a CUDA device"


def test_forced_pycuda_without_gpu_explains_how_to_fix():
    with pytest.raises(BackendUnavailableError) as err:
        be._decide("pycuda", no_gpu, lambda: fake_backend("emulator"))
    message = str(err.value)
    assert "TILINGLIB_BACKEND=pycuda, but PyCUDA is not installed" in message
    assert 'pip install -e ".[gpu]"' in message
    assert "TILINGLIB_BACKEND=emulator" in message


def test_forced_emulator_never_touches_the_gpu():
    def must_not_run():
        raise AssertionError("the GPU was probed")

    chosen = be._decide("emulator", must_not_run, lambda: fake_backend("emulator"))
    assert chosen.name == "emulator" and chosen.reason == "TILINGLIB_BACKEND=emulator"


def test_choice_is_made_once_per_process(monkeypatch, fresh_choice):
    monkeypatch.setenv(be.ENV_VAR, "emulator")
    first = be.get_backend()
    monkeypatch.setenv(be.ENV_VAR, "no-such-backend")
    assert be.get_backend() is first            # not decided again
    assert be.backend_name() == "emulator"


def test_a_failed_choice_is_not_kept(monkeypatch, fresh_choice):
    monkeypatch.setenv(be.ENV_VAR, "gpu")
    with pytest.raises(BackendUnavailableError):
        be.backend_name()
    monkeypatch.setenv(be.ENV_VAR, "emulator")
    assert be.backend_name() == "emulator"


def test_emulator_backend_objects(monkeypatch, fresh_choice):
    import tilinglib as tl
    from tilinglib import emulator

    monkeypatch.setenv(be.ENV_VAR, "emulator")
    assert tl.SourceModule is emulator.SourceModule
    assert (tl.In, tl.Out, tl.InOut) == (emulator.In, emulator.Out, emulator.InOut)
    assert be.get_backend().device_name == "CPU emulator"
    with pytest.raises(AttributeError):
        tl.NoSuchName


@pytest.mark.skipif(HAS_PYCUDA, reason="this machine has PyCUDA")
def test_real_probe_without_pycuda(monkeypatch, fresh_choice):
    monkeypatch.delenv(be.ENV_VAR, raising=False)
    assert be.backend_name() == "emulator"
    assert "PyCUDA is not installed" in be.get_backend().reason
    be.get_backend.cache_clear()
    monkeypatch.setenv(be.ENV_VAR, "pycuda")
    with pytest.raises(BackendUnavailableError, match="PyCUDA is not installed"):
        be.get_backend()


def test_the_pycuda_probe_builds_its_backend_from_the_session(monkeypatch, fresh_choice):
    # backend.py builds the Backend from _pycuda.backend_fields() (_pycuda imports no
    # backend): with a stand-in pycuda.driver and session, the fields land where they belong.
    import types

    from tilinglib.toolchain.backends import pycuda as _pycuda

    driver = types.SimpleNamespace(In="drv.In", Out="drv.Out", InOut="drv.InOut")
    monkeypatch.setitem(sys.modules, "pycuda", types.ModuleType("pycuda"))
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    sys.modules["pycuda"].driver = driver
    limits = DeviceLimits(max_shared_per_block=1234)
    session = types.SimpleNamespace(device_name="NVIDIA Test GPU", limits=limits)
    monkeypatch.setattr(_pycuda.CudaSession, "current", staticmethod(lambda: session))
    monkeypatch.setenv(be.ENV_VAR, "pycuda")
    got = be.get_backend()
    assert got == be.Backend("pycuda", _pycuda.SourceModule, "drv.In", "drv.Out",
                             "drv.InOut", "NVIDIA Test GPU", limits, f"{be.ENV_VAR}=pycuda")


def test_import_does_no_work():
    code = ("import sys, tilinglib; "
            "print(tilinglib.backend.get_backend.cache_info().currsize, "
            "'pycuda' in sys.modules, 'tilinglib.emulator' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != be.ENV_VAR}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env).stdout.split()
    assert out == ["0", "False", "False"]


@pytest.mark.gpu
def test_gpu_backend_is_pycuda(fresh_choice):
    import pycuda.driver as drv
    import tilinglib as tl

    assert tl.backend_name() == "pycuda"
    assert tl.In is drv.In and tl.Out is drv.Out and tl.InOut is drv.InOut
    assert be.get_backend().limits.max_threads_per_block == 1024
    # Choosing again (a re-run notebook cell) keeps the same context.
    be.get_backend.cache_clear()
    assert tl.backend_name() == "pycuda"


def test_submodules_are_reachable_from_the_package():
    import tilinglib as tl

    assert tl.roofline.naive_sgemm_intensity() == 0.25
    assert tl.occupancy.occupancy(1024).active_blocks == 2
    assert tl.launch.grid_for(10, 4) == (3,)
    assert sorted(tl.__all__) == sorted(["backend_name", "SourceModule", "In", "Out", "InOut",
                                         "grid_for", "time_kernel", "Timing", "gflops", "gbps",
                                         "errors", "kernels", "find_race_failure"])
