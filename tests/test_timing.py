"""Tests of tilinglib.timing: rates, the emulator path, and the GPU path with PyCUDA faked."""

import sys
import types

import numpy as np
import pytest

from tilinglib.timing import EMULATOR_NOTE, Timing, gbps, gflops, time_kernel


def test_rates_in_decimal_units():
    # The tiled kernel on the H200: 2 * 4096^3 FLOP in 15.55 ms.
    assert gflops(2 * 4096**3, 15.55) == pytest.approx(8838.5, rel=1e-4)
    # SAXPY on 2^28 floats, 12 bytes each, in 0.96 ms (docs/h200-measurements.md).
    assert gbps(12 * 2**28, 0.96) == pytest.approx(3355.4, rel=1e-4)
    assert gflops(1e9, 1000.0) == 1.0
    with pytest.raises(ValueError):
        gflops(1, 0)
    with pytest.raises(ValueError):
        gbps(1, -1.0)


class FakeEmulatorFunction:
    """Stands for tilinglib.emulator's Function: has `last_report`, set by each call."""

    name = "sgemmNaive"

    def __init__(self):
        self.last_report = None
        self.calls = 0

    def __call__(self, *args, block, grid, shared=0):
        self.calls += 1
        self.last_report = f"report of call {self.calls}"


def test_emulator_gives_counters_and_no_time():
    f = FakeEmulatorFunction()
    t = time_kernel(f, np.int32(4), block=(4, 4, 1), grid=(1, 1), flops=128, warmup=3, repeat=10)
    assert f.calls == 1
    assert t.backend == "emulator" and t.device == "CPU emulator"
    assert t.times_ms is None and t.median_ms is None and t.iqr_ms is None
    assert t.gflops is None and t.percent_of_peak_flops is None
    assert t.report == "report of call 1"
    assert "says nothing about a GPU" in t.note and t.note == EMULATOR_NOTE
    text = str(t)
    assert "sgemmNaive" in text and "128 FLOP per launch" in text and "report of call 1" in text
    assert "<table>" in t._repr_html_()


def test_bad_counts_are_refused():
    with pytest.raises(ValueError):
        time_kernel(FakeEmulatorFunction(), block=(1, 1, 1), grid=(1,), warmup=0)
    with pytest.raises(ValueError):
        time_kernel(FakeEmulatorFunction(), block=(1, 1, 1), grid=(1,), repeat=0)


# --- the GPU path, with pycuda.driver faked --------------------------------------------

class Clock:
    """Fake GPU clock: each launch takes the next duration from a list."""

    def __init__(self, durations):
        self.durations = list(durations)
        self.now = 0.0


@pytest.fixture
def fake_driver(monkeypatch):
    clock = Clock([])
    copies = []

    class Event:
        def record(self, stream=None):
            self.t = clock.now

        def synchronize(self):
            pass

        def time_till(self, other):
            return other.t - self.t

    class Allocation:
        def __init__(self, nbytes):
            self.nbytes, self.freed = nbytes, False

        def free(self):
            self.freed = True

    driver = types.ModuleType("pycuda.driver")
    driver.Event = Event
    driver.mem_alloc = Allocation
    driver.memcpy_htod = lambda dest, src: copies.append((dest, src.copy()))
    driver.Context = types.SimpleNamespace(
        get_device=lambda: types.SimpleNamespace(name=lambda: "NVIDIA H200"))
    pycuda = types.ModuleType("pycuda")
    pycuda.driver = driver
    monkeypatch.setitem(sys.modules, "pycuda", pycuda)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    return clock, copies


class In:
    def __init__(self, array):
        self.array = array


class FakeGpuFunction:
    """A checked PyCUDA function: the full call, and `_launch_unchecked` for timed runs."""

    name = "sgemmTiled"

    def __init__(self, clock):
        self.clock = clock
        self.checked_calls = []
        self.launches = []

    def __call__(self, *args, **kw):
        self.checked_calls.append(args)
        self.clock.now += 100.0        # copies and all: must not be timed

    def _launch_unchecked(self, *args, **kw):
        self.launches.append(args)
        self.clock.now += self.clock.durations.pop(0)


def test_gpu_times_each_launch_between_events(fake_driver):
    clock, copies = fake_driver
    n = 4096
    warm = [50.0, 50.0]                               # warm-ups 2 and 3
    timed = [15.6, 15.5, 15.55, 15.7, 15.5, 15.6, 15.5, 15.55, 15.6, 15.4]
    clock.durations = warm + timed
    f = FakeGpuFunction(clock)
    a = np.ones(8, np.float32)
    t = time_kernel(f, np.int32(n), In(a), block=(32, 32, 1), grid=(128, 128),
                    flops=2 * n**3, bytes=3 * 4 * n * n)
    assert isinstance(t, Timing)
    assert len(f.checked_calls) == 1                  # the first warm-up, with the caller's args
    assert len(f.launches) == 2 + 10
    # Timed launches get device memory instead of the In wrapper, copied in once.
    assert not isinstance(f.launches[0][1], In)
    assert len(copies) == 1 and np.array_equal(copies[0][1], a)
    assert f.launches[0][1].freed
    assert t.times_ms == pytest.approx(tuple(timed))
    assert t.median_ms == pytest.approx(15.55)
    assert t.min_ms == pytest.approx(15.4) and t.max_ms == pytest.approx(15.7)
    assert t.q1_ms == pytest.approx(np.percentile(timed, 25))
    assert t.iqr_ms == pytest.approx(np.percentile(timed, 75) - np.percentile(timed, 25))
    assert t.gflops == pytest.approx(2 * n**3 / 15.55e-3 / 1e9)
    assert t.device == "NVIDIA H200" and t.peak_gpu == "H200 SXM"
    assert t.percent_of_peak_flops == pytest.approx(100 * t.gflops * 1e9 / 67e12)
    assert t.percent_of_peak_bandwidth == pytest.approx(100 * t.gbps * 1e9 / 4.8e12)
    assert t.report is None
    text = str(t)
    assert "median 15.55 ms" in text and "% of the H200 SXM's FP32 peak" in text


@pytest.mark.gpu
def test_gpu_time_kernel_runs():
    import tilinglib as tl

    n = 256
    a = np.ones((n, n), np.float32)
    c = np.zeros_like(a)
    f = tl.SourceModule(tl.kernels.load("sgemm_tiled")).get_function("sgemmTiled")
    t = tl.time_kernel(f, np.int32(n), tl.In(a), tl.In(a), tl.Out(c), block=(32, 32, 1),
                       grid=(n // 32, n // 32), flops=2 * n**3, repeat=5)
    assert t.backend == "pycuda" and len(t.times_ms) == 5
    assert t.median_ms > 0 and t.gflops > 0
    np.testing.assert_allclose(c, a @ a)
