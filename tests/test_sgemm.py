"""Tests of tilinglib.sgemm: the lesson helpers, against the emulator's counts."""

import numpy as np
import pytest

from tilinglib import kernels, sgemm


def test_inputs_are_seeded_and_error_is_relative():
    A, B = sgemm.random_matrices(8, seed=3)
    A2, _ = sgemm.random_matrices(8, seed=3)
    assert A.dtype == np.float32 and np.array_equal(A, A2)
    C = (A.astype(np.float64) @ B).astype(np.float32)
    assert sgemm.relative_error(C, A, B) < 1e-6
    assert sgemm.relative_error(np.zeros_like(C), A, B) == pytest.approx(1.0)


def test_valid_tiles_and_launch_shapes():
    assert sgemm.valid_tiles(64) == [1, 2, 4, 8, 16, 32]
    assert sgemm.valid_tiles(48) == [1, 2, 3, 4, 6, 8, 12, 16, 24]
    assert sgemm.tiled_launch(64, 16) == ((16, 16, 1), (4, 4))
    with pytest.raises(ValueError, match="does not divide"):
        sgemm.tiled_launch(64, 12)
    with pytest.raises(ValueError, match="1 to 32"):
        sgemm.tiled_launch(128, 64)
    assert sgemm.naive_launch(100) == ((16, 16, 1), (7, 7))


def test_counts_follow_the_formulas():
    report, err = sgemm.count_naive(64)
    assert err < 1e-5
    assert report.global_load_bytes_requested == sgemm.requested_bytes_naive(64)
    assert report.global_load_bytes_requested / (report.flops / 2) == 8
    for tile in (4, 16):
        report, err = sgemm.count_tiled(64, tile)
        assert err < 1e-5
        assert report.global_load_bytes_requested == sgemm.requested_bytes_tiled(64, tile)
        assert not report.hazards


def test_without_barrier_keeps_lines_and_the_emulator_sees_the_race():
    src = kernels.load("sgemm_tiled")
    racy = sgemm.without_barrier(src, "first")
    assert racy.count("\n") == src.count("\n")
    assert racy.count("__syncthreads();") == src.count("__syncthreads();") - 1
    from tilinglib.emulator import RaceWarning

    with pytest.warns(RaceWarning):
        report, err = sgemm.count_tiled(32, 8, source=racy, hazards="warn")
    assert {h.kind for h in report.hazards} == {"read-after-write"}
    with pytest.raises(ValueError):
        sgemm.without_barrier("no barriers here")


def test_measure_tiled_on_the_emulator(monkeypatch):
    from tilinglib import backend

    monkeypatch.setattr(backend, "get_backend", backend._emulator)
    m = sgemm.measure_tiled(32, 8)
    assert m.backend == "emulator" and m.gflops is None
    assert m.requested_bytes == 8 * 32**3 // 8 and m.bytes_per_fma == 1.0


def test_a_wrong_helper_argument_is_a_short_tilinglib_error():
    from tilinglib.errors import ArgumentError

    src = kernels.load("sgemm_tiled")
    with pytest.raises(ArgumentError, match="'first' or 'second'") as info:
        sgemm.without_barrier(src, 1)
    assert isinstance(info.value, ValueError)            # what it was before, still
    lines = info.value.notebook_lines()
    assert len(lines) <= 3 and lines[0].startswith("ArgumentError: which must be")


def test_race_failure_kept_in_the_disk_cache_by_its_arguments(tmp_path, monkeypatch):
    from tilinglib import kernels, sgemm
    from tilinglib.toolchain import disk_cache

    monkeypatch.setenv("TILINGLIB_CACHE_DIR", str(tmp_path))
    racy = sgemm.without_barrier(kernels.load("sgemm_tiled"), "first")
    made = sgemm.race_failure(racy, N=32, tile=16, seeds=2)
    stored = list(tmp_path.rglob("race_failures/*"))
    assert made.found and len(stored) == 1
    again = sgemm.race_failure(racy, N=32, tile=16, seeds=2)         # read back
    assert str(again) == str(made) and again.seconds == made.seconds
    assert (again.index, again.statements, again.seed) == (made.index, made.statements, made.seed)
    sgemm.race_failure(racy, N=32, tile=16, seeds=1)                 # other arguments
    assert len(list(tmp_path.rglob("race_failures/*"))) == 2
    monkeypatch.setenv("TILINGLIB_CACHE_DIR", "off")                 # the grader's sandbox
    assert disk_cache.get("race_failures", stored[0].name) is None
