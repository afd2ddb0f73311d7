"""Tests of tilinglib.formatting: one rounding rule (half away from zero) for percentages."""

import pytest

from tilinglib.formatting import percent, round_half_away
from tilinglib.occupancy import occupancy


@pytest.mark.parametrize("value, decimals, text", [
    (87.5, 0, "88%"), (62.5, 0, "63%"),          # f"{x:.0f}" gives 88 and 62 (half to even)
    (12.5, 0, "13%"), (0.5, 0, "1%"), (100.0, 0, "100%"), (0.0, 0, "0%"),
    (12.25, 1, "12.3%"), (12.35, 1, "12.4%"), (49.99, 1, "50.0%"), (-2.5, 0, "-3%"),
    (100 * 56 / 64, 0, "88%"), (100 * 40 / 64, 0, "63%"), (100 * 7 / 24, 1, "29.2%"),
])
def test_percent_rounds_half_away_from_zero(value, decimals, text):
    assert percent(value, decimals) == text


def test_round_half_away_uses_the_printed_decimal():
    assert round_half_away(0.125, 2) == 0.13 and round(0.125, 2) == 0.12
    assert round_half_away(2.5) == 3.0 and round_half_away(-2.5) == -3.0
    assert round_half_away(2.4999) == 2.0


def test_occupancy_text_uses_the_rule():
    # 256 threads with 2,048 B static + 28 / 36 KiB shared=: 7 / 5 blocks of 8 warps of 64
    seven = occupancy(256, static_shared=2048, dynamic_shared=28 * 1024)
    five = occupancy(256, static_shared=2048, dynamic_shared=36 * 1024)
    assert (seven.active_warps, seven.percent) == (56, 87.5)
    assert (five.active_warps, five.percent) == (40, 62.5)
    assert "(88% occupancy)" in str(seven) and "(63% occupancy)" in str(five)


def test_sweep_table_uses_the_rule():
    from tilinglib import sweep

    points = sweep.shared_sweep(64, 16, [28 * 1024, 36 * 1024], progress=False)
    rows = sweep.table(points).splitlines()[1:3]
    assert [row.split()[-2] for row in rows] == ["88%", "63%"]
    assert len(rows[0]) == len(sweep.table(points).splitlines()[0])   # columns still line up
