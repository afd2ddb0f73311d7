"""Tests of tilinglib.tileloop: the tiles one block loads, and the schematic timeline."""

import matplotlib
import pytest

from tilinglib import tileloop

matplotlib.use("Agg")


def test_tiles_loaded_walks_a_row_of_a_and_a_column_of_b():
    step = tileloop.tiles_loaded(128, 16, 3, block=(1, 2))
    assert step.steps == 8
    assert step.a_tile == (2, 3) and step.b_tile == (3, 1) and step.c_tile == (2, 1)
    assert step.a_done == ((2, 0), (2, 1), (2, 2)) and step.b_done == ((0, 1), (1, 1), (2, 1))
    with pytest.raises(ValueError, match="does not divide"):
        tileloop.tiles_loaded(100, 16, 0)
    with pytest.raises(ValueError, match="0..7"):
        tileloop.tiles_loaded(128, 16, 8)


def test_plot_tile_loads_marks_the_current_and_earlier_tiles():
    axes = tileloop.plot_tile_loads(64, 16, 2, block=(0, 1))
    assert axes[0].tile_step.a_tile == (1, 2)
    assert len(axes[0].patches) == 3 and len(axes[1].patches) == 3   # 2 earlier + 1 now
    assert len(axes[2].patches) == 1
    assert "step t = 2 of the loop's t = 0 … 3" in axes[0].figure._suptitle.get_text()


def test_phases_plain_and_double_buffered():
    plain = tileloop.phases(3)
    assert [p.what for p in plain[:4]] == ["load", "barrier", "compute", "barrier"]
    assert sum(p.what == "barrier" for p in plain) == 6
    db = tileloop.phases(3, double_buffered=True)
    assert sum(p.what == "barrier" for p in db) == 4          # 1 after the prologue + 1 per tile
    loads = [p for p in db if p.what == "load"]
    computes = [p for p in db if p.what == "compute"]
    # Tile t+1's load runs during tile t's compute.
    assert all(l.start == c.start for l, c in zip(loads[1:], computes))
    assert db[-1].end < plain[-1].end
    ax = tileloop.plot_phases(3)
    assert set(ax.timelines) == {"plain (2 barriers per tile)",
                                 "double-buffered (1 barrier per tile)"}
