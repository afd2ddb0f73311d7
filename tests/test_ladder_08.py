"""Lesson 08's rungs of tilinglib.ladder (vec4, warptile, warptile_db) on the emulator: the
product against NumPy at shapes that take every edge path, the bytes-per-FMA formulas against
the emulator's counters, the bank conflicts the transposed and padded A tile avoids, the
double-buffered kernel's freedom from races, and valid's refusals."""

from __future__ import annotations

import numpy as np
import pytest

from tilinglib import ladder
from tilinglib.errors import ArgumentError
from tilinglib.sgemm import relative_error

# Small tile shapes keep the emulator quick. "warptile" shapes: one warp step of 8 x 4 lanes
# (TM = TN = 4), either one step per warp or 2 x 2 steps per warp.
SMALL = {
    "vec4": {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4},
    "warptile": {"BM": 32, "BN": 32, "BK": 8, "WM": 32, "WN": 16, "WMITER": 1, "WNITER": 1,
                 "TM": 4, "TN": 4, "APAD": 4},
    "warptile_db": {"BM": 64, "BN": 32, "BK": 8, "WM": 64, "WN": 32, "WMITER": 2, "WNITER": 2,
                    "TM": 4, "TN": 4, "APAD": 4},
}
LESSON08 = list(SMALL)
# (1,1,1): one element; K % 4 != 0: A read one float at a time; N % 4 != 0: B and C so;
# (36, 44, 20): float4 everywhere but tiles cut by the edges; (40, 1, 70): one column.
ODD_SHAPES = [(1, 1, 1), (33, 35, 29), (36, 44, 20), (65, 47, 13), (40, 1, 70), (3, 64, 64)]


@pytest.fixture(autouse=True)
def _emulator(monkeypatch):
    monkeypatch.setenv("TILINGLIB_BACKEND", "emulator")


def _inputs(M, N, K, seed=2):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K), dtype=np.float32),
            rng.standard_normal((K, N), dtype=np.float32))


def test_lesson08_steps_follow_lesson07s_in_order():
    assert ladder.names() == ["tiled", "coarse", "regtile2d", "vec4", "warptile", "warptile_db"]
    for name in LESSON08:
        step = ladder.get(name)
        assert step.lesson == 8
        assert step.valid() is None, name          # the defaults can launch
        assert step.valid(SMALL[name]) is None, name


@pytest.mark.parametrize("name", LESSON08)
@pytest.mark.parametrize("M,N,K", ODD_SHAPES)
def test_odd_shapes_match_numpy(name, M, N, K):
    A, B = _inputs(M, N, K)
    C = ladder.run(name, A, B, SMALL[name])
    assert C.shape == (M, N) and C.dtype == np.float32
    assert relative_error(C, A, B) < 1e-5


@pytest.mark.parametrize("name,M,N,K", [("vec4", 70, 130, 20), ("warptile", 130, 70, 21),
                                        ("warptile_db", 70, 260, 19)])
def test_default_tile_shape_matches_numpy(name, M, N, K):
    A, B = _inputs(M, N, K)
    assert relative_error(ladder.run(name, A, B), A, B) < 1e-5


def test_a_warp_sweeping_several_steps_matches_numpy():
    # 2 x 2 warp steps per warp in warptile too, and 1 x 4 in warptile_db.
    A, B = _inputs(70, 40, 24)
    p = dict(SMALL["warptile_db"])
    assert relative_error(ladder.run("warptile", A, B, p), A, B) < 1e-5
    q = {"BM": 32, "BN": 64, "BK": 8, "WM": 32, "WN": 64, "WMITER": 1, "WNITER": 4,
         "TM": 4, "TN": 4, "APAD": 0}
    assert relative_error(ladder.run("warptile_db", A, B, q), A, B) < 1e-5


@pytest.mark.parametrize("name", LESSON08)
def test_bytes_per_fma_formulas_equal_the_emulator(name):
    step = ladder.get(name)
    p = SMALL[name]
    report = ladder.count(step, 64, 64, 32, p)
    # every shared load of these kernels is a float4: 16 bytes per lane
    g, s = ladder.measured_bytes_per_fma(report, shared_bytes_per_load=16)
    assert g == pytest.approx(step.global_bytes_per_fma(p), rel=1e-12)
    assert s == pytest.approx(step.shared_bytes_per_fma(p), rel=1e-12)
    # hand derivations: 4 (BM + BN) / (BM BN) and 4 (RM + RN) / (RM RN)
    assert step.global_bytes_per_fma(p) == 4 * (p["BM"] + p["BN"]) / (p["BM"] * p["BN"])
    rm = p.get("WMITER", 1) * p["TM"]
    rn = p.get("WNITER", 1) * p["TN"]
    assert step.shared_bytes_per_fma(p) == 4 * (rm + rn) / (rm * rn)


def test_defaults_formulas():
    # the H200's best shape: 128 x 256 blocks, 16 x 8 outputs per lane
    db = ladder.get("warptile_db")
    assert db.threads() == 256
    assert db.global_bytes_per_fma() == 4 * (128 + 256) / (128 * 256) == 0.046875
    assert db.shared_bytes_per_fma() == 4 * (16 + 8) / (16 * 8) == 0.75
    assert db.shared_bytes() == 2 * 12 * (128 + 4 + 256) * 4 == 37248
    assert ladder.launch("warptile_db", 4096, 4096, 4096) == ((256, 1, 1), (16, 32))


def test_transposed_a_tile_reads_without_bank_conflicts():
    # Same tile shape: lesson 07's kernel reads As[m][k] one float at a time, vec4 reads the
    # transposed tile As[k][m..m+3] as float4.
    p = {"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4}
    before = ladder.count("regtile2d", 64, 64, 64, p)
    after = ladder.count("vec4", 64, 64, 64, p)
    assert before.shared_load_bank_conflicts > 0
    assert after.shared_load_bank_conflicts == 0
    # a quarter of the shared load instructions (each 4 floats), for the same bytes
    assert after.shared_load_instructions * 4 == before.shared_load_instructions
    assert after.shared_load_wavefronts < before.shared_load_wavefronts


def test_apad_spreads_the_transposed_stores_over_the_banks():
    p = dict(ladder.get("warptile").defaults)
    padded = ladder.count("warptile", 128, 128, 16, p)
    unpadded = ladder.count("warptile", 128, 128, 16, {**p, "APAD": 0})
    assert padded.shared_load_bank_conflicts == unpadded.shared_load_bank_conflicts == 0
    assert unpadded.shared_store_bank_conflicts > 0
    assert padded.shared_store_bank_conflicts == 0


def test_double_buffered_kernel_has_no_race():
    # hazards="raise": a shared-memory race between barriers would raise RaceError
    report = ladder.count("warptile_db", 64, 64, 40, SMALL["warptile_db"], hazards="raise")
    assert report.hazards == ()
    # one barrier per tile plus the one after the first tile: K / BK + 1 per block
    blocks = report.grid[0] * report.grid[1]
    assert report.barriers == blocks * (40 // 8 + 1)


@pytest.mark.parametrize("name,params,words", [
    ("vec4", {"TN": 2, "BN": 64}, "multiple of 4"),
    ("vec4", {"BM": 60}, "does not divide"),
    ("warptile", {"WMITER": 2}, "32"),
    ("warptile", {"APAD": 1}, "APAD=1"),
    ("warptile", {"WN": 48}, "does not divide"),
    ("warptile_db", {"BK": 32, "BM": 256}, "shared memory"),
    ("warptile", {"XX": 1}, "no parameter"),
])
def test_valid_refuses_with_the_reason(name, params, words):
    why = ladder.get(name).valid(params)
    assert why is not None and words in why
    with pytest.raises(ArgumentError, match=words):
        ladder.launch(name, 64, 64, 64, params)


def test_sliders_offer_only_valid_values():
    ks = ladder.choices("warptile", "WNITER", [1, 2, 3, 4, 8])
    # WM = 64, TM = 4 and WMITER = 1 give 16 lanes down: 2 across, WN / WNITER / TN = 2
    assert ks == [4]
    # BK = 16: 2 x 16 x (128 + 4 + 256) x 4 = 49,664 bytes, over 48 KiB
    assert ladder.choices("warptile_db", "BK", [4, 8, 12, 16, 32]) == [4, 8, 12]
