"""Plots the lessons share (matplotlib is imported only when one is drawn).

Introduced in lesson 03 (`plot_requested_bytes`). The roofline plot lives in
`tilinglib.roofline.plot_roofline`.
"""

from __future__ import annotations

from typing import Sequence

from .errors import ArgumentError
from .figure_cache import cached

__all__ = ["plot_requested_bytes", "finished", "plain_log_ticks", "plain_number"]

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def plain_number(value: float, pos=None) -> str:
    """A log axis's tick label as plain text: 0.01, 0.25, 1, 100, 1000, then 10⁵, 2×10⁶
    (Unicode superscripts). `pos` is matplotlib's tick position, unused."""
    import math

    if not value > 0 or not math.isfinite(value):
        return ""
    exponent = math.floor(math.log10(value) + 1e-9)
    if -3 <= exponent <= 4:
        return f"{value:g}"
    mantissa = value / 10 ** exponent
    head = "" if abs(mantissa - round(mantissa)) < 1e-6 and round(mantissa) == 1 else \
        f"{mantissa:.3g}×"
    return f"{head}10{str(exponent).translate(_SUPERSCRIPT)}"


def plain_log_ticks(ax) -> None:
    """Label the log-scaled axes of `ax` in plain text (`plain_number`) instead of
    matplotlib's default mathtext (10 with a raised exponent): the same ticks labelled, the
    same reading, without the math text machinery, whose first use in a notebook costs most
    of a second."""
    from matplotlib import ticker

    class Plain(ticker.Formatter):
        """The default log formatter's choice of which ticks to label, in plain text."""

        def __init__(self, inner):
            self.inner = inner

        def set_axis(self, axis):
            super().set_axis(axis)
            self.inner.set_axis(axis)

        def set_locs(self, locs):
            super().set_locs(locs)
            self.inner.set_locs(locs)

        def __call__(self, x, pos=None):
            return plain_number(x) if self.inner(x, pos) else ""

    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() != "log":
            continue
        for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                         (axis.get_minor_formatter, axis.set_minor_formatter)):
            if isinstance(get(), ticker.LogFormatterSciNotation):
                put(Plain(get()))


def finished(fig) -> None:
    """Say that the lesson plot `fig` (made by the plot function itself) is complete.

    Under IPython's inline backend (Jupyter's default) the figure is drawn into a PNG when
    the cell ends; pyplot's end-of-cell hook would first draw every figure marked stale
    once more, for nothing (a third of a plot's time). A finished figure is marked drawn so
    that only the PNG is made; any later change marks it stale again. Other backends (a
    window, ipympl) are left as they are."""
    import matplotlib

    if "inline" in matplotlib.get_backend():
        fig.stale = False


@cached("ax")
def plot_requested_bytes(N: int, tiles: Sequence[int], counted: Sequence[int], ax=None):
    """Counted global-load bytes of the tiled kernel against TILE, with the 8·N³/TILE curve.

    `tiles` and `counted` are matching sequences (e.g. from `tilinglib.sgemm.count_tiled`);
    both axes are logarithmic, so the formula is a straight line of slope -1. The naive
    kernel's 8·N³ is drawn as a dashed line. Returns the Axes."""
    import matplotlib.pyplot as plt
    import numpy as np

    if len(tiles) != len(counted):
        raise ArgumentError(f"{len(tiles)} tiles but {len(counted)} counts")
    own = ax is None
    if own:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    t = np.geomspace(min(tiles), max(tiles), 64)
    ax.loglog(t, 8 * N**3 / t, color="grey", lw=1, label="formula 8·N³/TILE")
    ax.loglog(list(tiles), list(counted), "o", color="C0", label="counted by the emulator")
    ax.axhline(8 * N**3, color="C3", ls="--", lw=1, label="naive kernel: 8·N³")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(tiles), [str(x) for x in tiles])
    ax.set_xlabel("TILE")
    ax.set_ylabel("global-load bytes requested")
    ax.set_title(f"Bytes requested by the tiled kernel, N = {N}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    plain_log_ticks(ax)
    if own:
        finished(ax.figure)
    return ax
