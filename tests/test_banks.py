"""Tests of tilinglib.banks: the 32-bank model and the per-warp bank picture.

Hand-built accesses (a namedtuple with WarpAccess's fields) pin the model; one test checks
that the emulator's trace of the seed's kernels gives the same pictures."""

from collections import namedtuple

import matplotlib
import numpy as np
import pytest

from tilinglib import banks

matplotlib.use("Agg")

Access = namedtuple("Access", "line kind space array lanes offsets words banks wavefronts sectors")


def make(words, line=33, kind="load", array="X"):
    words = tuple(words)
    return Access(line, kind, "shared", array, tuple(range(len(words))),
                  tuple(4 * w for w in words), words, tuple(w % 32 for w in words),
                  banks.wavefronts(words), 0)


def test_bank_of_and_wavefronts():
    assert [banks.bank_of(a) for a in (0, 4, 124, 128, 132)] == [0, 1, 31, 0, 1]
    assert banks.wavefronts(range(32)) == 1                   # a row: one word per bank
    assert banks.wavefronts([0] * 32) == 1                    # one word for all: broadcast
    assert banks.wavefronts(range(0, 32 * 32, 32)) == 32      # a column of [32][32]
    assert banks.wavefronts(range(0, 32 * 33, 33)) == 1       # a column of [32][33]
    assert banks.wavefronts(list(range(16)) + list(range(17, 33))) == 2   # TILE=16 padded store
    assert banks.wavefronts([]) == 0


def test_layout_puts_broadcast_in_one_cell_and_conflicts_in_rows():
    assert banks.bank_layout(make([5] * 32)) == {(5, 0): tuple(range(32))}
    column = banks.bank_layout(make(range(0, 32 * 32, 32)))
    assert column == {(0, r): (r,) for r in range(32)}
    row = banks.bank_layout(make(range(32)))
    assert row == {(b, 0): (b,) for b in range(32)}


def test_plot_draws_the_layout():
    ax = banks.plot_banks(make(list(range(16)) + list(range(17, 33)), kind="store"))
    assert ax.bank_cells[(0, 0)] == (0,) and ax.bank_cells[(0, 1)] == (31,)
    assert len(ax.patches) == 32 and ax.get_ylim() == (2, 0)
    assert "2 wavefronts" in ax.get_title()
    texts = {t.get_text() for t in banks.plot_banks(make([3] * 32)).texts}
    assert texts == {"0–31"}


def test_describe_and_find():
    trace = (make(range(32), line=27, kind="store", array="As"), make([0] * 32, array="As"))
    assert "broadcast" in banks.describe(banks.find(trace, "As"))
    assert "conflict-free" in banks.describe(banks.find(trace, "As", kind="store"))
    assert "32-way" in banks.describe(make(range(0, 1024, 32)))
    with pytest.raises(LookupError, match="shared store of As at line 27"):
        banks.find(trace, "Bs")


@pytest.mark.parametrize("tile, pad, store_ways", [(32, 0, 1), (32, 1, 1), (16, 0, 1), (16, 1, 2)])
def test_emulator_trace_of_the_tiled_kernel(tile, pad, store_ways):
    from tilinglib import kernels, sgemm
    from tilinglib.emulator import In, Out, SourceModule

    A, B = sgemm.random_matrices(64)
    C = np.zeros_like(A)
    f = SourceModule(kernels.load("sgemm_tiled"), options=[f"-DTILE={tile}", f"-DPAD={pad}"])
    f = f.get_function("sgemmTiled")
    f(np.int32(64), In(A), In(B), Out(C), block=(tile, tile, 1), grid=(64 // tile,) * 2,
      trace=True)
    a_load = banks.find(f.last_trace, "As")
    b_load = banks.find(f.last_trace, "Bs")
    assert a_load.wavefronts == 1 and b_load.wavefronts == 1   # no conflict, padded or not
    assert banks.find(f.last_trace, "As", kind="store").wavefronts == store_ways
    assert banks.wavefronts(b_load.words) == b_load.wavefronts


@pytest.mark.parametrize("pad, ways", [(0, 32), (1, 1)])
def test_emulator_trace_of_the_transpose_column_read(pad, ways):
    from tilinglib import kernels
    from tilinglib.emulator import In, Out, SourceModule

    f = SourceModule(kernels.load("transpose"), options=[f"-DPAD={pad}"])
    f = f.get_function("transposeShared")
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    out = np.zeros_like(a)
    f(np.int32(64), In(a), Out(out), block=(32, 32, 1), grid=(2, 2), trace=True)
    assert np.array_equal(out, a.T)
    column = banks.find(f.last_trace, "T")
    assert column.wavefronts == ways == banks.wavefronts(column.words)


def test_plot_colours_each_cell_by_what_it_is_and_keys_the_colours():
    from matplotlib.colors import to_rgb

    store = banks.plot_banks(make(list(range(16)) + list(range(17, 33)), kind="store"))
    key = [t.get_text() for t in store.get_legend().get_texts()]
    assert key == ["one lane, its own word",
                   "bank conflict: several words in one bank, one wavefront each"]
    colour = {(int(p.get_x()), int(p.get_y())): to_rgb(p.get_facecolor()) for p in store.patches}
    assert colour[(0, 0)] == colour[(0, 1)] == to_rgb("C3")     # bank 0 serves words 0 and 32
    assert colour[(5, 0)] == to_rgb("C0")                        # bank 5: lane 5 alone
    broadcast = banks.plot_banks(make([3] * 32))
    assert [t.get_text() for t in broadcast.get_legend().get_texts()] == [
        "one word broadcast to several lanes"]
