"""tilinglib.recipes: each course kernel's recipe against its .cu file (function, -D macros and
their defaults), its launch shapes and refusals against hand derivations, options() formatting,
and every recipe compiled on the emulator at a tiny shape and checked against NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tilinglib import kernels, ladder, recipes
from tilinglib.errors import ArgumentError
from tilinglib.sgemm import random_inputs, reference_product, relative_error


@pytest.fixture(autouse=True)
def _emulator(monkeypatch):
    monkeypatch.setenv("TILINGLIB_BACKEND", "emulator")


# -- the registry against the files ------------------------------------------------------------

def test_every_kernel_file_has_a_recipe_and_every_recipe_a_file():
    assert {r.kernel for r in recipes.RECIPES.values()} == set(kernels.names())
    assert recipes.names() == list(recipes.RECIPES)
    assert [r.name for r in recipes.for_file("transpose")] == ["transpose_naive",
                                                                "transpose_shared"]


@pytest.mark.parametrize("name", recipes.names())
def test_the_function_and_macros_are_those_of_the_file(name):
    r = recipes.get(name)
    src = kernels.load(r.kernel)
    assert re.search(rf"__global__\s+void\s+(__launch_bounds__\([^)]*\)\s*)?{r.function}\s*\(",
                     src), r.function
    macros = {k: int(v) for k, v in
              re.findall(r"#ifndef (\w+)\s*\n\s*#define \1 (\S+)", src)}
    assert macros == {**r.defaults, **r.optional}


def test_get_refuses_an_unknown_name_listing_the_recipes():
    with pytest.raises(ArgumentError, match="no recipe 'tiledd'; the recipes are tiled, coarse"):
        recipes.get("tiledd")
    r = recipes.get("coarse")
    assert recipes.get(r) is r


def test_the_ladder_steps_are_the_recipes():
    assert ladder.Step is recipes.Recipe
    for step in ladder.STEPS + ladder.TUNING:
        assert recipes.get(step.name) is step


# -- options() ---------------------------------------------------------------------------------

def test_options_formats_each_parameter_in_order():
    assert recipes.options({"TILE": 16, "PAD": 1}) == ["-DTILE=16", "-DPAD=1"]
    assert recipes.options({}) == []
    tiled = recipes.get("tiled")
    assert tiled.options() == ["-DTILE=32"]                      # PAD only when given
    assert tiled.options({"TILE": 8, "PAD": 0}) == ["-DTILE=8", "-DPAD=0"]
    assert recipes.get("coarse").options({"TM": 4}) == ["-DBM=64", "-DBN=64", "-DBK=8", "-DTM=4"]
    assert recipes.get("coarse").defines({"TM": 4}) == recipes.get("coarse").options({"TM": 4})
    assert recipes.get("saxpy").options() == []
    with pytest.raises(ArgumentError, match="'tiled' has no parameter 'BM'"):
        tiled.options({"BM": 8})


# -- launch shapes, derived by hand ------------------------------------------------------------

@pytest.mark.parametrize("name, params, MNK, block, grid", [
    # TILE x TILE threads, one block per TILE x TILE patch of the N x N result
    ("tiled", {"TILE": 16}, (64, 64, 64), (16, 16, 1), (4, 4)),
    ("tiled_db", {"TILE": 8}, (32, 32, 32), (8, 8, 1), (4, 4)),
    # BN x (BM / TM) = 64 x 8 threads; ceil(130 / 64) = 3 across, ceil(100 / 64) = 2 down
    ("coarse", {}, (100, 130, 7), (512, 1, 1), (3, 2)),
    # (128 / 8) x (128 / 8) = 256 threads
    ("regtile2d", {}, (256, 256, 8), (256, 1, 1), (2, 2)),
    # (64 / 8) x (128 / 4) = 256 threads; ceil(300 / 128) = 3, ceil(100 / 64) = 2
    ("vec4", {}, (100, 300, 16), (256, 1, 1), (3, 2)),
    # (128 / 64) x (128 / 32) warps of 32
    ("warptile", {}, (128, 128, 8), (256, 1, 1), (1, 1)),
    # (128 / 32) x (256 / 128) warps; N = 512: 2 across, M = 512: 4 down
    ("warptile_db", {}, (512, 512, 12), (256, 1, 1), (2, 4)),
    # split-K: a third grid entry, the number of K chunks
    ("tuned", {"SPLITK": 4}, (256, 512, 96), (256, 1, 1), (2, 2, 4)),
    ("tuned", {}, (256, 512, 96), (256, 1, 1), (2, 2)),
    # 16 x 16 threads over 33 x 33: ceil(33 / 16) = 3 each way
    ("naive", {}, (33, 33, 33), (16, 16, 1), (3, 3)),
    ("transpose_shared", {"PAD": 1}, (64, 64, 64), (32, 32, 1), (2, 2)),
    # 1,000 elements in blocks of 256: 4 blocks
    ("saxpy", {}, (1000, 1, 1), (256, 1, 1), (4,)),
])
def test_launch_shape(name, params, MNK, block, grid):
    r = recipes.get(name)
    assert r.launch(*MNK, params) == (block, grid)
    assert r.threads(params) == int(np.prod(block))


def test_launch_refuses_what_the_kernel_cannot_take():
    with pytest.raises(ArgumentError, match="needs N % TILE == 0; N=40, TILE=16"):
        recipes.get("tiled").launch(40, 40, 40, {"TILE": 16})
    with pytest.raises(ArgumentError, match="lesson 06's kernel: it takes square"):
        recipes.get("tiled_db").launch(32, 64, 32, {"TILE": 8})
    with pytest.raises(ArgumentError, match="coarse with BM=64, BN=64, BK=8, TM=3 cannot launch"):
        recipes.get("coarse").launch(64, 64, 64, {"TM": 3})


# -- valid(), derived by hand ------------------------------------------------------------------

@pytest.mark.parametrize("name, params, reason", [
    ("tiled", {"TILE": 64}, "TILE=64: the tiled kernel runs one thread per output"),
    ("tiled", {"TILE": 4}, "16 threads per block is not a multiple of 32"),      # 4 x 4
    ("tiled", {"TILE": 0}, "TILE=0: every parameter must be at least 1"),
    ("tiled", {"PAD": -1}, "PAD=-1: every parameter must be at least 1 (PAD: at least 0)"),
    ("coarse", {"TM": 3}, "TM=3 does not divide BM=64"),
    ("coarse", {"X": 1}, "'coarse' has no parameter 'X'"),
    ("vec4", {"BK": 6}, "BK=6 is not a multiple of 4"),
    # lanes per warp step: (64 / 1 / 8) x (32 / 4 / 4) = 8 x 2 = 16
    ("warptile", {"TM": 8}, "= 8 x 2 = 16 lanes, not 32"),
    ("tuned", {"SWIZZLE": 1}, "APAD=4 with SWIZZLE=1"),
    # 32 x 32 = 1,024 threads x (64 + 8 + 8 + 30 = 110) registers = 112,640 > 65,536
    ("regtile2d", {"BM": 256, "BN": 256}, "about 110 registers x 1024 threads = 112,640"),
    # 2 x 32 x 48 x 4 = 12,288 B per tile pair: fine; TILE = 33 is over 1,024 threads
    ("transpose_shared", {"TILE": 33}, "TILE=33: the tiled kernel runs one thread per output"),
])
def test_valid_gives_the_reason(name, params, reason):
    why = recipes.get(name).valid(params)
    assert why is not None and reason in why, why


@pytest.mark.parametrize("name", recipes.names())
def test_the_defaults_are_valid(name):
    assert recipes.get(name).valid() is None


def test_byte_formulas():
    tiled = recipes.get("tiled")
    assert tiled.global_bytes_per_fma({"TILE": 16}) == 0.5                     # 8 / TILE
    assert tiled.shared_bytes({"TILE": 16}) == 2 * 16 * 16 * 4
    assert tiled.shared_bytes({"TILE": 16, "PAD": 1}) == 2 * 16 * 17 * 4
    assert recipes.get("tiled_db").shared_bytes({"TILE": 32}) == 16384         # the file says so
    assert recipes.get("transpose_shared").shared_bytes({"TILE": 32, "PAD": 1}) == 32 * 33 * 4
    assert recipes.get("naive").global_bytes_per_fma() == 8.0
    with pytest.raises(ArgumentError, match="no global bytes per FMA formula"):
        recipes.get("saxpy").global_bytes_per_fma()


# -- every recipe on the emulator at a tiny shape, against NumPy -------------------------------

TINY = {
    "tiled": ({"TILE": 8, "PAD": 1}, (32, 32, 32)),
    "tiled_db": ({"TILE": 8}, (32, 32, 32)),
    "naive": ({}, (20, 20, 20)),
    "coarse": ({"BM": 32, "BN": 32, "BK": 8, "TM": 4}, (40, 36, 20)),
    "regtile2d": ({"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4}, (40, 36, 20)),
    "vec4": ({"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4}, (40, 36, 20)),
}
_WARP_SMALL = {"BM": 32, "BN": 32, "BK": 8, "WM": 32, "WN": 32, "WMITER": 1, "WNITER": 1,
               "TM": 4, "TN": 8, "APAD": 4}
TINY.update({n: (_WARP_SMALL, (40, 36, 20)) for n in ("warptile", "warptile_db")})
TINY["tuned"] = ({**_WARP_SMALL, "SPLITK": 2}, (40, 36, 24))


@pytest.mark.parametrize("name", recipes.names())
def test_each_recipe_compiles_and_computes_what_numpy_does(name):
    from tilinglib.emulator import In, InOut, Out

    r = recipes.get(name)
    f = r.compile(TINY.get(name, ({}, None))[0], emulator=True)
    assert f.name == r.function
    if name.startswith("transpose"):
        N = 32
        p = {"TILE": 8, "PAD": 1}
        f = r.compile(p, emulator=True)
        A = random_inputs(N, N, N, 5)[0]
        O = np.zeros_like(A)
        block, grid = r.launch(N, N, N, p)
        f(np.int32(N), In(A), Out(O), block=block, grid=grid)
        np.testing.assert_array_equal(O, A.T)
        return
    if name == "saxpy":
        n = 300
        A, B = random_inputs(n, n, 1, 5)                  # (n x 1) and (1 x n): two vectors
        x, y = A.ravel().copy(), B.ravel().copy()
        want = 2 * x.astype(np.float64) + y
        block, grid = r.launch(n, 1, 1)
        f(np.int32(n), np.float32(2), In(x), InOut(y), block=block, grid=grid)
        np.testing.assert_allclose(y, want, rtol=1e-6)
        return
    p, (M, N, K) = TINY[name]
    A, B = random_inputs(M, N, K, 5)
    C = np.zeros((M, N), dtype=np.float32)
    block, grid = r.launch(M, N, K, p)
    sizes = (np.int32(N),) if r.square_only or name == "naive" else (np.int32(M), np.int32(N),
                                                                       np.int32(K))
    f(*sizes, In(A), In(B), InOut(C) if r.adds_into_c(p) else Out(C), block=block, grid=grid)
    assert relative_error(C, A, B) < 1e-5


def test_random_inputs_and_the_reference():
    A, B = random_inputs(3, 4, 5, seed=2)
    assert A.shape == (3, 5) and B.shape == (5, 4) and A.dtype == B.dtype == np.float32
    rng = np.random.default_rng(2)                         # A first, then B, from one stream
    np.testing.assert_array_equal(A, rng.standard_normal((3, 5), dtype=np.float32))
    np.testing.assert_array_equal(B, rng.standard_normal((5, 4), dtype=np.float32))
    ref = reference_product(A, B)
    assert ref.dtype == np.float64
    np.testing.assert_array_equal(ref, A.astype(np.float64) @ B.astype(np.float64))
