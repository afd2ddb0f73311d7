"""How tilinglib writes numbers for people: one rounding rule for every percentage.

Python's ``f"{87.5:.0f}"`` rounds half to even ("88"), and ``f"{62.5:.0f}"`` gives "62":
two occupancies side by side then look rounded by different rules. Every percentage the
library prints goes through `percent`, which rounds half away from zero (87.5% -> 88%,
62.5% -> 63%), the rule taught in school and used by spreadsheets.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

__all__ = ["round_half_away", "percent"]


def round_half_away(value: float, decimals: int = 0) -> float:
    """`value` rounded to `decimals` places, halves away from zero (2.5 -> 3, -2.5 -> -3).

    The decimal value Python prints for `value` (its shortest repr) is what is rounded, so
    ``round_half_away(0.125, 2)`` is 0.13 although the float 0.125 is exact and
    ``round(0.125, 2)`` gives 0.12."""
    step = Decimal(1).scaleb(-decimals)
    return float(Decimal(repr(float(value))).quantize(step, rounding=ROUND_HALF_UP))


def percent(value: float, decimals: int = 0) -> str:
    """`value` (already in percent: 87.5 for 87.5 %) as text with `decimals` places and a
    ``%`` sign, rounded half away from zero: ``percent(87.5) == "88%"``,
    ``percent(62.5) == "63%"``, ``percent(12.25, 1) == "12.3%"``."""
    return f"{round_half_away(value, decimals):.{decimals}f}%"
