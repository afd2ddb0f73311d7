"""bench/ladder_sizes.py without a GPU: the dry run on the emulator, and the GPU path end to end
against stand-ins for PyCUDA and CuPy (NumPy arrays, a product computed by NumPy, fixed event
times), so that the file it writes is read back by tilinglib.tile_choice and a wrong kernel is
marked incorrect. The H200 run itself is the lead's (the command is in the script's
docstring)."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tilinglib import ladder, tile_choice

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
#: Milliseconds the stand-in's events measure after a kernel's launch and after cuBLAS's
#: (the last launch before the end event decides which).
_MS = {"kernel": 2.0, "cublas": 2.0}
_LAST = ["kernel"]


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
    def matmul(a, b, out=None):
        _LAST[0] = "cublas"
        return np.matmul(a, b, out=out)

    cp.matmul = matmul
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
        _LAST[0] = "kernel"
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
            return _MS[_LAST[0]]

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
    monkeypatch.setitem(_MS, "kernel", 2.0)
    monkeypatch.setitem(_MS, "cublas", 2.0)
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


def test_a_configuration_that_does_not_compile_is_listed_and_the_rest_run(fake_gpu, tmp_path):
    good = fake_gpu.bench.compile_cubin

    def compile_cubin(src, opts, arch):
        if "-DSPLITK=2" in opts:
            return None, {"error": "ptxas fatal: made up for the test"}
        return good(src, opts, arch)

    fake_gpu.bench.compile_cubin = compile_cubin
    out = tmp_path / "sizes.json"
    assert fake_gpu.main(["--quick", "--limit", "5", "--repeat", "2", "--out", str(out),
                          "--log", str(tmp_path / "log")]) == 0
    data = tile_choice.load_sizes(out)
    failed = [r for r in data.rows if "compile_error" in r]
    assert len(failed) == 1 and "made up" in failed[0]["compile_error"]
    assert len([r for r in data.rows if "gflops" in r]) == 4 * 2
    assert tile_choice.pick_per_size(64, data=data).source == "measured"


def test_a_second_sweep_is_merged_and_compared_with_its_own_cublas(fake_gpu, tmp_path,
                                                                    monkeypatch):
    big, odd = (256, 256, 256), (160, 264, 200)
    monkeypatch.setattr(tile_choice, "SIZES", (big, odd))
    out = tmp_path / "sizes.json"
    # run 0: kernels 4 ms, cuBLAS 1 ms (25%); run 1: kernels 2.5 ms (faster), cuBLAS 2 ms (80%)
    _MS.update(kernel=4.0, cublas=1.0)
    assert fake_gpu.main(["--quick", "--limit", "2", "--repeat", "2", "--out", str(out),
                          "--log", str(tmp_path / "first.log")]) == 0
    first = json.loads(out.read_text())
    second = [("tuned", ladder.TUNED.resolve({"BM": 64, "BN": 128, "BK": 16, "APAD": 0,
                                              "SWIZZLE": 1, "WM": 32, "WN": 64, "WMITER": 1,
                                              "WNITER": 2, "SPLITK": 2}), (big,)),
              ("tuned", ladder.TUNED.resolve({"GSWZ": 8}), (big, odd))]
    monkeypatch.setattr(tile_choice, "second_sweep_configurations", lambda: second)
    _MS.update(kernel=2.5, cublas=2.0)
    assert fake_gpu.main(["--configs", "second", "--merge-into", str(out), "--repeat", "2",
                          "--log", str(tmp_path / "second.log")]) == 0
    data = tile_choice.load_sizes(out)
    assert [r["run"] for r in data.runs] == [0, 1]
    assert data.runs[1]["command"] == "python3 bench/ladder_sizes.py --configs second"
    run0 = [r for r in data.rows if tile_choice.run_of(r) == 0]
    run1 = [r for r in data.rows if tile_choice.run_of(r) == 1]
    assert run0 == first["rows"] and len(run0) == 2 * 2     # the first run's rows as written
    assert len(run1) == 1 + 2                               # each at its own sizes only
    assert [(r["M"], r["N"], r["K"]) for r in run1 if r["params"]["BM"] == 64] == [big]
    assert [tuple(s) for s in data.sizes] == [big, odd]
    assert [tile_choice.run_of(c) for c in data.cublas_runs] == [0] * 4 + [1] * 4
    x = 2 * 256 ** 3 / 1e6                                  # GFLOP/s at 1 ms
    assert data.cublas(*big, run=0) == round(x, 1) and data.cublas(*big, run=1) == round(x / 2, 1)
    for r in data.rows:
        run = tile_choice.run_of(r)
        assert r["cublas_gflops"] == data.cublas(r["M"], r["N"], r["K"], run=run)
        assert data.percent_of_cublas(r) == pytest.approx(25.0 if run == 0 else 80.0, abs=1.0)
    # the choice is made again on both runs: run 1's rows are the faster, at 80% of run 1's
    # cuBLAS (against run 0's, or the median of both, they would read 40% or 53%)
    c = tile_choice.pick_per_size(256, data=data)
    assert c.gflops == round(x / 2.5, 1) and "in run 1" in c.reason
    assert c.percent_of_cublas == pytest.approx(80.0, abs=0.5)
    log = (tmp_path / "second.log").read_text()
    assert "as run 1: 3 rows" in log and "(run 0)" in log and "(run 1)" in log
    assert f"the course's choice: {tile_choice.shape_label(c.step, c.params)}" in log
    assert " 79.8% " in log and " 25.0% " in log


def test_merge_into_a_file_that_is_not_there_is_refused_before_any_run(fake_gpu, tmp_path,
                                                                         capsys):
    with pytest.raises(SystemExit) as e:
        fake_gpu.main(["--configs", "second", "--merge-into", str(tmp_path / "none.json")])
    assert e.value.code == 2 and "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "tilinglib-reference"}')
    with pytest.raises(SystemExit):
        fake_gpu.main(["--merge-into", str(bad)])
    assert "not a sizes data file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        fake_gpu.main(["--quick", "--configs", "second"])
    assert "choose one" in capsys.readouterr().err


def test_dry_run_of_the_second_sweep(capsys):
    script = _script()
    assert script.main(["--dry-run", "--configs", "second", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 configurations, 4 (configuration, size) pairs over 2 sizes" in out
    assert "2 of 2 exact on the emulator" in out


def test_configs_best_are_each_steps_fastest_per_size_listed_once():
    mod = _script()
    data = tile_choice.load_sizes()
    configs = mod.configurations("best")
    assert len({(n, json.dumps(p, sort_keys=True)) for n, p, _ in configs}) == len(configs)
    for size in tile_choice.SIZES:
        for step in ("vec4", "warptile", "warptile_db", "tuned"):
            r = data.best(*size, step)
            p = ladder.get(step).resolve(r["params"])
            assert [s for n, q, sizes in configs if n == step and q == p for s in sizes
                    if s == size] == [size], (step, size)
