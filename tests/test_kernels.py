"""Tests of tilinglib.kernels: the course's sources load, and compute what they claim
(run on the CPU emulator, so these need no GPU)."""

import numpy as np
import pytest

from tilinglib import kernels


def test_names_and_load():
    assert kernels.names() == ["saxpy", "sgemm_coarse", "sgemm_naive", "sgemm_regtile2d",
                               "sgemm_tiled", "sgemm_tiled_db", "sgemm_tuned", "sgemm_vec4",
                               "sgemm_warptile", "sgemm_warptile_db", "transpose"]
    assert "__global__ void sgemmNaive(int N, const float* A, const float* B, float* C)" in \
        kernels.load("sgemm_naive")
    assert kernels.load("saxpy.cu") == kernels.load("saxpy")
    with pytest.raises(KeyError, match="sgemm_tiled"):
        kernels.load("sgemm_fast")


def test_tiled_source_has_the_knobs():
    src = kernels.load("sgemm_tiled")
    for text in ("#ifndef TILE", "#define TILE 32", "#ifndef PAD", "#define PAD 0",
                 "__shared__ float As[TILE][TILE + PAD];", "__shared__ float Bs[TILE][TILE + PAD];"):
        assert text in src
    assert src.count("__syncthreads();") == 2


def _sgemm(name, kernel, n, block, grid, options=None):
    from tilinglib import emulator

    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    f = emulator.SourceModule(kernels.load(name), options=options).get_function(kernel)
    f(np.int32(n), emulator.In(a), emulator.In(b), emulator.Out(c), block=block, grid=grid)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    return f


def test_naive_kernel_handles_any_n():
    from tilinglib import grid_for

    _sgemm("sgemm_naive", "sgemmNaive", 20, (8, 8, 1), grid_for((20, 20), (8, 8)))


@pytest.mark.parametrize("tile, pad, static_bytes", [(8, 0, 512), (8, 1, 576), (4, 1, 160)])
def test_tiled_kernel_and_its_shared_memory(tile, pad, static_bytes):
    n = 2 * tile
    f = _sgemm("sgemm_tiled", "sgemmTiled", n, (tile, tile, 1), (2, 2),
               options=[f"-DTILE={tile}", f"-DPAD={pad}"])
    # 2 arrays of TILE x (TILE + PAD) floats, as in docs/h200-measurements.md.
    assert f.shared_size_bytes == static_bytes


def test_saxpy():
    from tilinglib import emulator, grid_for

    n = 100
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    f = emulator.SourceModule(kernels.load("saxpy")).get_function("saxpy")
    f(np.int32(n), np.float32(2.0), emulator.In(x), emulator.InOut(y), block=(32, 1, 1),
      grid=grid_for(n, 32))
    np.testing.assert_array_equal(y, 2 * np.arange(n, dtype=np.float32) + 1)


@pytest.mark.parametrize("tile", [8, 16, 32])
def test_double_buffered_equals_plain_tiled_and_is_race_free(tile):
    """Same additions in the same k order as the plain tiled kernel: identical bits."""
    from tilinglib import emulator

    n = 64
    rng = np.random.default_rng(2)
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    out = []
    for name, kernel in (("sgemm_tiled", "sgemmTiled"), ("sgemm_tiled_db", "sgemmTiledDB")):
        f = emulator.SourceModule(kernels.load(name), options=[f"-DTILE={tile}"]).get_function(kernel)
        C = np.full_like(A, np.nan)
        f(np.int32(n), emulator.In(A), emulator.In(B), emulator.Out(C), block=(tile, tile, 1),
          grid=(n // tile, n // tile), hazards="raise")
        out.append(C)
    assert np.array_equal(out[0], out[1])
    assert f.shared_size_bytes == 2 * 2 * tile * tile * 4
    assert f.last_report.barriers == (n // tile) ** 2 * (n // tile + 1)


@pytest.mark.parametrize("pad", [0, 1])
def test_transposes(pad):
    from tilinglib import emulator

    n = 64
    A = np.random.default_rng(3).standard_normal((n, n), dtype=np.float32)
    mod = emulator.SourceModule(kernels.load("transpose"), options=[f"-DPAD={pad}"])
    for name in ("transposeNaive", "transposeShared"):
        f = mod.get_function(name)
        O = np.full_like(A, np.nan)
        f(np.int32(n), emulator.In(A), emulator.Out(O), block=(32, 32, 1), grid=(2, 2),
          hazards="raise")
        assert np.array_equal(O, A.T)
    r = f.last_report
    warps = n * n // 32
    assert r.shared_load_instructions == warps
    # Reading a column of an unpadded 32 x 32 tile: 32 words in one bank, 32 wavefronts.
    assert r.shared_load_wavefronts == warps * (1 if pad else 32)
