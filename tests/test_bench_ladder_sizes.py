"""bench/ladder_sizes.py without a GPU: the dry run on the emulator, and the GPU path end to end
against stand-ins for PyCUDA and CuPy (NumPy arrays, a product computed by NumPy, fixed event
times), so that the file it writes is read back by tilinglib.tile_choice and a wrong kernel is
marked incorrect. The H200 run itself is the lead's (the command is in the script's
docstring)."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tilinglib import tile_choice

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("ladder_sizes", ROOT / "bench" / "ladder_sizes.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dry_run_lists_and_runs_the_quick_configurations_exactly(capsys):
    script = _script()
    assert script.main(["--dry-run", "--quick", "--limit", "3"]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 exact on the emulator" in out
    assert "vec4 64x128x16, thread 8x4" in out and "warptile_db 128x256x12" in out


# -- stand-ins for the GPU libraries ------------------------------------------------------

_MEMORY: dict[int, np.ndarray] = {}


class _Array(np.ndarray):
    """A NumPy array with CuPy's ``.data.ptr`` (its own address, recorded for the kernels)."""

    @property
    def data(self):
        base = self if self.base is None or not isinstance(self.base, np.ndarray) else self.base
        addr = base.__array_interface__["data"][0]
        _MEMORY[addr] = base
        return types.SimpleNamespace(ptr=addr)


def _cupy():
    cp = types.ModuleType("cupy")
    cp.__version__ = "0-test"
    cp.float32, cp.float64, cp.nan = np.float32, np.float64, np.nan
    cp.asarray = lambda a: np.array(a).view(_Array)
    cp.zeros = lambda shape, dtype=np.float32: np.zeros(shape, dtype).view(_Array)
    cp.empty = lambda shape, dtype=np.float32: np.empty(shape, dtype).view(_Array)
    cp.abs, cp.isfinite = np.abs, np.isfinite
    cp.matmul = lambda a, b, out=None: np.matmul(a, b, out=out)
    cp.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    cp.cuda = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(synchronize=lambda: None))
    return cp


class _Function:
    def __init__(self, name, wrong):
        self.name, self.wrong = name, wrong
        self.num_regs, self.local_size_bytes, self.shared_size_bytes = 96, 0, 4096

    def prepare(self, fmt):
        assert fmt == "iiiPPP"

    def prepared_call(self, grid, block, M, N, K, a, b, c):
        assert len(grid) == 3 and len(block) == 3
        A = _MEMORY[int(a)].reshape(int(M), int(K))
        B = _MEMORY[int(b)].reshape(int(K), int(N))
        C = _MEMORY[int(c)].reshape(int(M), int(N))
        if grid[2] > 1:
            C += A @ B            # split-K adds into C (zeroed by the memset before)
        else:
            C[...] = A @ B + (1.0 if self.wrong else 0.0)


def _pycuda(wrong_function):
    drv = types.ModuleType("pycuda.driver")

    class Event:
        def record(self):
            pass

        def synchronize(self):
            pass

        def time_till(self, other):
            return 2.0

    dev = types.SimpleNamespace(name=lambda: "Test GPU", compute_capability=lambda: (9, 0),
                                get_attribute=lambda attr: 132)
    drv.Context = types.SimpleNamespace(get_device=lambda: dev)
    drv.device_attribute = types.SimpleNamespace(MULTIPROCESSOR_COUNT="sms")
    drv.Event = Event
    drv.get_version = lambda: (13, 0, 0)
    drv.get_driver_version = lambda: 13000
    drv.module_from_buffer = lambda cubin: types.SimpleNamespace(
        get_function=lambda name: _Function(name, name == wrong_function))

    def memset_d32_async(ptr, value, count):
        _MEMORY[int(ptr)].reshape(-1)[:count] = value

    drv.memset_d32_async = memset_d32_async
    pycuda = types.ModuleType("pycuda")
    pycuda.VERSION_TEXT = "0-test"
    pycuda.driver = drv
    return {"pycuda": pycuda, "pycuda.driver": drv,
            "pycuda.autoprimaryctx": types.ModuleType("pycuda.autoprimaryctx")}


@pytest.fixture
def fake_gpu(monkeypatch):
    script = _script()
    monkeypatch.setitem(sys.modules, "cupy", _cupy())
    for name, mod in _pycuda("sgemmWarptile").items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(tile_choice, "SIZES", ((64, 64, 64), (40, 72, 33)))
    monkeypatch.setattr(script, "ODD", (10, 11, 9))
    monkeypatch.setattr(script.bench, "compile_cubin", lambda src, opts, arch: (
        b"cubin", {"registers": 96, "spill_stores": 0, "spill_loads": 0, "stack_bytes": 0}))
    return script


def test_the_gpu_path_writes_a_file_tile_choice_reads(fake_gpu, tmp_path, capsys):
    out, log = tmp_path / "sizes.json", tmp_path / "sizes.log"
    assert fake_gpu.main(["--quick", "--limit", "5", "--repeat", "3", "--out", str(out),
                          "--log", str(log)]) == 0
    data = tile_choice.load_sizes(out)
    assert data.device["name"] == "Test GPU" and data.sizes == ((64, 64, 64), (40, 72, 33))
    assert len(data.rows) == 5 * 2
    by_step = {}
    for r in data.rows:
        by_step.setdefault(r["step"], []).append(r)
        # 2 ms per batch of one launch (the stand-in's events): 2 M N K / 2 ms
        assert r["gflops"] == round(2 * r["M"] * r["N"] * r["K"] / 2.0 / 1e6, 1)
        assert r["registers"] == 96 and r["spill_stores"] == 0
        assert r["cublas_gflops"] == data.cublas(r["M"], r["N"], r["K"])
    # the wrong kernel (warptile's stand-in adds 1) is timed and marked incorrect
    assert all(not r["correct"] for r in by_step["warptile"])
    assert all(r["correct"] for s in ("vec4", "warptile_db", "tuned") for r in by_step[s])
    assert any(r["params"]["SPLITK"] == 2 for r in by_step["tuned"])   # split-K: zeroed, exact
    assert [c["when"] for c in data.cublas_runs] == ["before", "after"] * 2
    text = log.read_text()
    assert "the course's choice" in text and "1 timed rows incorrect" not in text
    assert "2 timed rows incorrect; 0 rows with register spills" in text
    c = tile_choice.pick_per_size(64, data=data)
    assert c.source == "measured" and c.step != "warptile"
