"""The per-warp trace (f(..., trace=True) -> f.last_trace) against hand-derived banks."""

import numpy as np

from tilinglib import kernels
from tilinglib.emulator import In, Out, SourceModule


def _trace(tile, pad, N=64):
    f = SourceModule(kernels.load("sgemm_tiled"), options=[f"-DTILE={tile}", f"-DPAD={pad}"]
                     ).get_function("sgemmTiled")
    rng = np.random.default_rng(0)
    A = rng.standard_normal((N, N), dtype=np.float32)
    B = rng.standard_normal((N, N), dtype=np.float32)
    C = np.empty_like(A)
    f(np.int32(N), In(A), In(B), Out(C), block=(tile, tile, 1), grid=(N // tile, N // tile),
      trace=True)
    return {(a.kind, a.array, a.space): a for a in f.last_trace}


def test_tiled_32_reads_are_a_broadcast_and_a_row():
    t = _trace(32, 0)
    a_read = t[("load", "As", "shared")]
    b_read = t[("load", "Bs", "shared")]
    # Warp 0 is row ty = 0: As[0][k=0] is one word for all lanes (broadcast).
    assert a_read.lanes == tuple(range(32))
    assert set(a_read.words) == {0}
    assert a_read.wavefronts == 1
    # Bs[0][tx]: 32 consecutive words in 32 distinct banks. Bs starts after As (1024 words).
    assert b_read.words == tuple(1024 + tx for tx in range(32))
    assert sorted(b_read.banks) == list(range(32))
    assert b_read.wavefronts == 1
    assert t[("load", "A", "global")].sectors == 4


def test_tiled_16_padded_store_is_a_two_way_conflict():
    t = _trace(16, 1)
    store = t[("store", "As", "shared")]
    # Lanes 0-15 are row 0 (words 0..15), lanes 16-31 row 1 (words 17..32): word 32 shares
    # bank 0 with word 0.
    assert store.words == tuple(range(16)) + tuple(17 + tx for tx in range(16))
    assert store.banks[0] == store.banks[31] == 0
    assert store.wavefronts == 2


def test_transpose_column_read_is_32_way_unless_padded():
    for pad, ways in ((0, 32), (1, 1)):
        f = SourceModule(kernels.load("transpose"), options=[f"-DPAD={pad}"]
                         ).get_function("transposeShared")
        A = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
        O = np.empty_like(A)
        f(np.int32(64), In(A), Out(O), block=(32, 32, 1), grid=(2, 2), trace=True)
        (col_read,) = [a for a in f.last_trace if a.kind == "load" and a.space == "shared"]
        assert col_read.wavefronts == ways
        assert col_read.offsets == tuple(4 * tx * (32 + pad) for tx in range(32))
        assert np.array_equal(O, A.T)
