"""Tests of tilinglib.widgets: drive the sliders from Python and read what they show."""

import threading
import time

import pytest

from tilinglib.roofline import ridge_point
from tilinglib.sgemm import TiledMeasurement
from tilinglib.widgets import (WidgetArgumentError, ladder_explorer, read_values,
                               roofline_explorer, tile_explorer)


def fake_measure(N, tile, source=None):
    """Stands for tilinglib.sgemm.measure_tiled on the emulator: the tiled kernel's counts."""
    return TiledMeasurement(N, tile, "emulator", 1e-7, 2 * N**3, 8 * N**3 // tile,
                            2 * N**3 // (32 * tile), 8 * N**3 // (32 * tile), None, None, None)


def test_roofline_slider_moves_the_point():
    e = roofline_explorer("H200 SXM", value=32)
    assert e.slider.continuous_update is False
    assert list(e.slider.options) == [1, 2, 4, 8, 16, 32]
    shown = read_values(e.readout.value)
    assert shown["tile"] == "32" and float(shown["intensity"]) == 8.0
    assert float(shown["bound_tflops"]) == pytest.approx(38.4)   # 8 FLOP/B x 4.8 TB/s
    assert shown["regime"] == "memory-bound"

    e.slider.value = 4                      # as a student releasing the slider at 4
    shown = read_values(e.readout.value)
    assert shown["tile"] == "4" and float(shown["intensity"]) == 1.0
    assert float(shown["bound_tflops"]) == pytest.approx(4.8)
    assert float(shown["bytes_per_fma"]) == 2.0
    assert float(shown["ridge"]) == pytest.approx(ridge_point("H200 SXM"), abs=0.01)


def test_roofline_gpu_menu_changes_the_ridge():
    e = roofline_explorer("H200 SXM", value=16)
    e.gpu.value = "A100 SXM 80GB"
    assert e.values["ridge"] == pytest.approx(9.56, abs=0.01)
    assert e.values["bound_tflops"] == pytest.approx(4 * 2.039, abs=1e-3)


def test_roofline_compute_bound_when_past_the_ridge():
    e = roofline_explorer("A100 SXM 80GB", tiles=(8, 16, 32, 64), value=64)
    assert e.values["regime"] == "compute-bound"
    assert e.values["bound_tflops"] == pytest.approx(19.5)


def test_tile_slider_offers_only_valid_tiles():
    e = tile_explorer(96, measure=fake_measure)
    assert list(e.slider.options) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
    assert e.slider.continuous_update is False
    with pytest.raises(ValueError, match="divisor"):
        tile_explorer(64, tiles=[5], measure=fake_measure)
    with pytest.raises(ValueError):
        e.select(64)


def test_tile_slider_recounts_on_the_emulator():
    e = tile_explorer(64, value=16)          # the real thing: emulator counts at N=64
    shown = read_values(e.readout.value)
    assert shown["backend"] == "emulator"
    assert int(shown["requested_bytes"]) == 8 * 64**3 // 16
    assert float(shown["relative_error"]) < 1e-5
    e.select(8)
    shown = read_values(e.readout.value)
    assert shown["tile"] == "8"
    assert int(shown["requested_bytes"]) == 8 * 64**3 // 8
    assert float(shown["bytes_per_fma"]) == 1.0
    # 2 loads per thread per tile step, one request per full warp
    assert int(shown["global_load_requests"]) == 2 * 64**3 // (32 * 8)
    assert int(shown["global_load_sectors"]) == 4 * int(shown["global_load_requests"])


def test_a_students_mistake_is_one_short_line():
    broken = "__global__ void sgemmTiled(int N, const float* A) { int x = ; }"
    e = tile_explorer(64, value=8, source=broken)
    assert 'data-state="error"' in e.status.value
    assert "CompileError" in e.status.value and "Traceback" not in e.status.value
    assert e.values == {} and read_values(e.readout.value) == {}
    # a later good recompute clears the error
    e.source = None
    e.select(16)
    assert 'data-state="idle"' in e.status.value and e.values["tile"] == 16


def test_busy_indicator_shows_during_a_slow_recompute():
    seen = []

    def slow(N, tile, source=None):
        if tile == 8:
            time.sleep(0.4)
            seen.append(e.status.value)
        return fake_measure(N, tile)

    e = tile_explorer(64, value=16, measure=slow, busy_after=0.1)
    e.select(8)
    assert 'data-state="busy"' in seen[0] and "TILE=8" in seen[0]
    assert 'data-state="idle"' in e.status.value       # cleared when done
    assert e.values["tile"] == 8


def test_no_busy_indicator_for_a_quick_recompute():
    e = tile_explorer(64, value=16, measure=fake_measure, busy_after=0.5)
    e.select(8)
    time.sleep(0.6)
    assert 'data-state="idle"' in e.status.value


def test_read_values_unescapes():
    assert read_values('<td data-name="a" data-value="x&amp;y">') == {"a": "x&y"}


# -- interactive polish: what a student can get wrong, and the status line's timing ---------

def test_sliders_offer_valid_tiles_smallest_first():
    e = roofline_explorer("H200 SXM", tiles=(32, 8, 16, 8), value=16, plot=False)
    assert list(e.slider.options) == [8, 16, 32]
    e = tile_explorer(64, tiles=[32.0, 16], value=16, measure=fake_measure)
    assert list(e.slider.options) == [16, 32]
    for bad in ([0, 8], [8, 2.5], [True], ["x"], []):
        with pytest.raises(WidgetArgumentError):
            roofline_explorer("H200 SXM", tiles=bad, value=8, plot=False)


def test_a_wrong_argument_is_one_line_in_a_notebook():
    """WidgetArgumentError uses IPython's _render_traceback_ hook: one line, no traceback."""
    cases = [lambda: tile_explorer(64, value=5, measure=fake_measure),
             lambda: tile_explorer(64, tiles=[3], measure=fake_measure),
             lambda: tile_explorer(0, measure=fake_measure),
             lambda: tile_explorer("64", measure=fake_measure),
             lambda: roofline_explorer("H300", plot=False),
             lambda: tile_explorer(64, value=16, measure=fake_measure).select(5)]
    for make in cases:
        with pytest.raises(WidgetArgumentError) as info:
            make()
        assert isinstance(info.value, ValueError)          # still a ValueError
        lines = info.value._render_traceback_()
        assert len(lines) == 1 and lines[0].startswith("WidgetArgumentError: ")
        assert "Traceback" not in lines[0]
    with pytest.raises(WidgetArgumentError, match="no GPU named 'H300'"):
        roofline_explorer("H300", plot=False)


def test_a_late_busy_timer_does_not_hide_the_result():
    """The timer can fire just as the recompute ends: it must not leave "working" on show."""
    e = tile_explorer(64, value=16, measure=fake_measure, busy_after=60)
    done = threading.Event()
    done.set()                                  # the recompute has finished ...
    e._show_busy(8, done)                       # ... when the timer's action runs
    assert 'data-state="idle"' in e.status.value
    e._show_busy(8, threading.Event())          # still running: "working" shows
    assert 'data-state="busy"' in e.status.value


def test_no_busy_timer_left_behind():
    before = threading.active_count()
    e = tile_explorer(64, value=16, measure=fake_measure, busy_after=30)
    for tile in (8, 4, 32):
        e.select(tile)
    time.sleep(0.1)
    assert threading.active_count() <= before


def test_an_interrupt_clears_working_and_says_so():
    def interrupted(N, tile, source=None):
        if tile == 8:
            raise KeyboardInterrupt
        return fake_measure(N, tile)

    e = tile_explorer(64, value=16, measure=interrupted, busy_after=0.05)
    with pytest.raises(KeyboardInterrupt):
        e.select(8)
    time.sleep(0.2)                              # long past busy_after: no late "working"
    assert 'data-state="error"' in e.status.value and "interrupted" in e.status.value
    e.select(16)
    assert 'data-state="idle"' in e.status.value and e.error is None


def test_a_long_warning_is_cut_to_one_short_line():
    import warnings

    def noisy(N, tile, source=None):
        warnings.warn("Race " + "x" * 1000 + "\nsecond line", RuntimeWarning)
        return fake_measure(N, tile)

    e = tile_explorer(64, value=16, measure=noisy)
    text = e.status.value
    assert 'data-state="idle"' in text and "Warning: Race" in text
    assert "second line" not in text and len(text) < 500


# -- lesson 08: the warp layout as one control (Step.joint), APAD = 0 ------------------------

WARP_NAMES = ("WM", "WN", "WMITER", "WNITER", "TM", "TN")


def fake_step_measure(step, N, params):
    """Stands for tilinglib.ladder.measure: the step's formulas, no kernel run."""
    from tilinglib import ladder
    from tilinglib.occupancy import occupancy

    s = ladder.get(step)
    p = s.resolve(params)
    g, sh = s.global_bytes_per_fma(p), s.shared_bytes_per_fma(p)
    return ladder.StepMeasurement(
        step=s.name, params=p, N=N, backend="fake", relative_error=0.0, threads=s.threads(p),
        static_shared_bytes=s.shared_bytes(p), formula_global_bytes_per_fma=g,
        formula_shared_bytes_per_fma=sh, counted_global_bytes_per_fma=g,
        counted_shared_bytes_per_fma=sh, registers=None, local_bytes=None,
        registers_source=None, occupancy=occupancy(s.threads(p), static_shared=s.shared_bytes(p)),
        median_ms=None, gflops=None)


def hand_warp_layouts(BM, BN, WMs=(16, 32, 64, 128, 256), ITERs=(1, 2, 4),
                      Ts=(1, 2, 4, 8, 16)):
    """The warp layouts the kernel's rules allow, derived by hand from sgemm_warptile.cu's
    #error lines and the block limits, not through Step.valid."""
    import itertools

    out = set()
    for WM, WN, WMITER, WNITER, TM, TN in itertools.product(WMs, WMs, ITERs, ITERs, Ts, Ts):
        if BM % WM or BN % WN or WM % (WMITER * TM) or WN % (WNITER * TN):
            continue
        if (WM // WMITER // TM) * (WN // WNITER // TN) != 32 or TM % 4 or TN % 4:
            continue
        threads = (BM // WM) * (BN // WN) * 32
        RM, RN = WMITER * TM, WNITER * TN
        registers = RM * RN + RM + RN + 30
        if threads > 1024 or registers > 255 or registers * threads > 65536:
            continue
        out.add((WM, WN, WMITER, WNITER, TM, TN))
    return out


def test_the_warp_layout_is_one_joint_group():
    from tilinglib import ladder

    for name in ("warptile", "warptile_db"):
        (group,) = ladder.get(name).joint
        assert group.parameters == WARP_NAMES and group.name == "warp layout"
    assert ladder.get("regtile2d").joint == ()
    assert (ladder.WARP_LAYOUT.describe(ladder.get("warptile").defaults)
            == "warp 64x32, 1x4 iterations, thread 4x4")


def test_warp_layout_dropdown_offers_every_valid_layout_and_only_those():
    from tilinglib import ladder

    e = ladder_explorer("warptile", 128, measure=fake_step_measure)
    assert set(e.sliders) == {"BM", "BN", "BK", "APAD"}     # the six are not sliders any more
    d = e.joints["warp layout"]
    assert list(e.controls) == ["BM", "BN", "BK", "warp layout", "APAD"]
    assert d.value == (64, 32, 1, 4, 4, 4)
    assert d.label == "warp 64x32, 1x4 iterations, thread 4x4"
    offered = [values for _, values in d.options]
    assert len(offered) == len(set(offered)) == 102
    assert set(offered) == hand_warp_layouts(128, 128)
    # lesson 08's printed list (WM, WN in 32, 64; iterations 1, 2, 4; TM, TN in 4, 8): 30
    assert len([o for o in offered if o[0] in (32, 64) and o[1] in (32, 64)
                and o[4] in (4, 8) and o[5] in (4, 8)]) == 4 + 8 + 8 + 10
    wt = ladder.get("warptile")
    for label, values in d.options:
        p = {**e.params, **dict(zip(WARP_NAMES, values))}
        assert wt.valid(p) is None
        WM, WN, WMITER, WNITER, TM, TN = values
        assert label == f"warp {WM}x{WN}, {WMITER}x{WNITER} iterations, thread {TM}x{TN}"
    # the block sliders move with the layout, and the layout with them
    assert list(e.sliders["BM"].options) == [64, 128]         # WM = 64 must divide BM
    e.select(BM=64)
    assert set(v for _, v in d.options) == hand_warp_layouts(64, 128)
    assert d.value == (64, 32, 1, 4, 4, 4) and e.values["BM"] == 64
    e.joints["warp layout"].value = (16, 32, 1, 1, 4, 4)      # as a student picking it
    assert e.params["WM"] == 16 and e.values["threads"] == (64 // 16) * (128 // 32) * 32
    assert list(e.sliders["BM"].options) == [16, 32, 64, 128]


def test_a_warp_layout_is_chosen_whole():
    e = ladder_explorer("warptile", 128, measure=fake_step_measure)
    with pytest.raises(WidgetArgumentError, match="change together") as info:
        e.select(WM=32)                        # 8 x 2 = 16 lanes per warp step
    assert len(info.value._render_traceback_()) == 1
    e.select(WM=32, WNITER=2)                  # 8 x 4 = 32: offered
    assert e.params == {"BM": 128, "BN": 128, "BK": 8, "WM": 32, "WN": 32, "WMITER": 1,
                        "WNITER": 2, "TM": 4, "TN": 4, "APAD": 4}
    assert e.values["threads"] == 16 * 32
    with pytest.raises(WidgetArgumentError, match="no parameter 'WK'"):
        e.select(WK=8)


def test_apad_zero_is_offered_where_the_step_allows_it():
    e = ladder_explorer("warptile", 128, measure=fake_step_measure)
    assert list(e.sliders["APAD"].options) == [0, 4, 8]
    e = ladder_explorer("warptile", 128, candidates={"APAD": (0, 12)}, measure=fake_step_measure)
    assert list(e.sliders["APAD"].options) == [0, 4, 12]
    e.select(APAD=0)
    assert e.values["shared_bytes"] == 8 * (128 + 0 + 128) * 4
    with pytest.raises(WidgetArgumentError, match="0 or more"):
        ladder_explorer("warptile", 128, candidates={"APAD": (-4,)}, measure=fake_step_measure)
    with pytest.raises(WidgetArgumentError, match="1 or more"):
        ladder_explorer("warptile", 128, candidates={"BK": (0, 8)}, measure=fake_step_measure)


def test_the_warp_layout_recounts_on_the_emulator():
    """The real thing at N = 128 (one 128 x 128 block): the counted bytes per FMA follow the
    layout as 4 (RM + RN) / (RM RN) with RM = WMITER TM, RN = WNITER TN, and the global
    ones stay 4 (BM + BN) / (BM BN) = 1/16."""
    e = ladder_explorer("warptile", 128)
    assert e.values["backend"] == "emulator" and e.values["relative_error"] < 1e-5
    assert e.values["shared_counted"] == 4 * (4 + 16) / (4 * 16)          # 1.25
    e.joints["warp layout"].value = (32, 64, 2, 2, 4, 4)                   # RM = RN = 8
    assert 'data-state="idle"' in e.status.value
    assert e.values["WM"] == 32 and e.values["WNITER"] == 2
    assert e.values["shared_counted"] == e.values["shared_formula"] == 4 * 16 / 64   # 1.0
    assert e.values["global_counted"] == 4 * 256 / 128 ** 2
    e.select(WM=16, WN=32, WMITER=1, WNITER=1, TM=4, TN=4)                 # RM = RN = 4
    assert e.values["threads"] == 8 * 4 * 32
    assert e.values["shared_counted"] == 4 * 8 / 16                        # 2.0


def test_ladder_explorer_says_occupancy_is_a_bound_when_no_register_count_is_known():
    """Lesson 07's explorer: a shape ptxas's table has (64 registers) gives the occupancy;
    one it lacks (BK = 16) gives what threads and shared memory allow, said to be an upper
    bound with registers unknown, never a plain "occupancy 100%"."""
    from tilinglib import ladder

    e = ladder_explorer("regtile2d", 64, value={"BM": 64, "BN": 64, "BK": 8, "TM": 4,
                                                        "TN": 4})
    assert ladder.ptxas_registers("regtile2d", e.params)["registers"] == 64
    assert "occupancy" in e.values and "occupancy_bound" not in e.values
    assert e.values["registers"] == 64
    e.select(BK=16)
    assert ladder.ptxas_registers("regtile2d", e.params) is None
    assert "occupancy" not in e.values and "registers" not in e.values
    shown = read_values(e.readout.value)
    assert "occupancy_bound" in shown
    assert "at most 100%" in e.readout.value and "registers unknown" in e.readout.value
    assert "an upper bound" in e.readout.value
