"""Tests of tilinglib.sweep on the notebook's backend (the emulator in CI)."""

import matplotlib
import pytest

import tilinglib as tl
from tilinglib import sweep

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def points():
    return sweep.tile_sweep(4096, progress=False)


def test_static_shared_is_the_declared_size(points):
    assert [p.static_shared for p in points] == [2 * t * t * 4 for t in (4, 8, 16, 32)]
    padded = sweep.tile_sweep(4096, tiles=(16, 32), pad=1, progress=False)
    assert [p.static_shared for p in padded] == [2176, 8448]


def test_occupancy_beside_each_tile(points):
    by_tile = {p.tile: p.occupancy for p in points}
    assert by_tile[4].limited_by == ("blocks",) and by_tile[4].percent == 50
    assert by_tile[32].active_blocks == 2 and by_tile[32].percent == 100
    assert [p.requested_bytes for p in points] == [8 * 4096**3 // t for t in (4, 8, 16, 32)]


def test_speeds_come_from_the_gpu_or_the_labelled_reference(points):
    if tl.backend_name() == "pycuda":
        assert all(p.gflops > 0 and "measured here" in p.measured_on for p in points)
    else:
        ref = tl.reference.load()
        assert [p.gflops for p in points] == [
            ref.run("sgemm_tiled", 4096, tile=t, pad=0).gflops for t in (4, 8, 16, 32)]
        assert all(p.measured_on == ref.label for p in points)


def test_shared_memory_becomes_the_limit():
    pts = sweep.shared_sweep(4096, 16, [0, 28 * 1024, 44 * 1024], progress=False)
    assert [p.occupancy.active_blocks for p in pts] == [8, 7, 4]
    assert pts[-1].occupancy.limited_by == ("shared memory",)
    assert "shared memory" in sweep.table(pts)


def test_plots_draw_the_points(points):
    left, right = sweep.plot_tile_sweep(points)
    assert list(right.lines[0].get_ydata()) == [p.requested_bytes / 1e9 for p in points]
    if points[0].gflops is not None:
        assert list(left.lines[0].get_ydata()) == [p.gflops for p in points]
    ax = sweep.plot_shared_sweep(sweep.shared_sweep(4096, 16, [0, 44 * 1024], progress=False))
    assert list(ax.lines[0].get_ydata()) == [100.0, 50.0]


def test_progress_outside_jupyter_prints_each_step(capsys):
    with sweep.Progress(2, "demo") as bar:
        bar.step("first")
        bar.step("second")
    err = capsys.readouterr().err
    assert "demo: 1/2 first" in err and "demo: 2/2 second" in err
    with sweep.Progress(1, "quiet", enabled=False) as bar:
        bar.step()
    assert capsys.readouterr().err == ""


def test_the_right_panels_label_stays_clear_of_the_left_panel(points):
    left, right = sweep.plot_tile_sweep(points)
    fig = left.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    label = right.yaxis.label.get_window_extent(renderer)
    ticks = right.yaxis.get_tightbbox(renderer)
    assert min(label.x0, ticks.x0) > left.get_window_extent(renderer).x1
