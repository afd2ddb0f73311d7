"""What a lesson kernel started ahead of its notebook does while the notebook before it runs
(tilinglib/devtools/nbval_kernels.py sends it as one silent execute request): the imports
and first-use costs every lesson pays in its first cells, moved onto the CPU the running
notebook leaves idle.

`warm_up()` imports NumPy and the parts of tilinglib the lessons import (the emulator's
compiler and runtime, the ladder, the plots; about 0.4 s), loads the H200
reference data, and, under Jupyter's inline backend, imports pyplot, lets it pick its
backend as a lesson's first figure does, and draws one figure with text, a legend and log
axes into a PNG that is thrown away: FreeType's fonts and matplotlib's text layout are then
loaded (about 0.8 s of a lesson's first plot). It binds no name in the notebook's namespace,
leaves no figure open and shows nothing; matplotlib's settings are those the lesson's own
first plot would leave, and `figure_cache` records them as its fresh settings, as it does at
that first plot. A part that fails to import is skipped: the notebook's own import then
reports it where the student would see it.
"""

from __future__ import annotations

import importlib
import io

MODULES = ("numpy", "tilinglib", "tilinglib.emulator", "tilinglib.ladder", "tilinglib.sgemm",
           "tilinglib.plots", "tilinglib.reference", "tilinglib.figure_cache")


def warm_up() -> list:
    """Import `MODULES`, load the H200 reference and warm matplotlib (see the module's
    docstring). Returns the names of the parts that failed (an empty list normally);
    never raises."""
    failed = []
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            failed.append(name)
    try:
        from tilinglib import reference

        reference.load("h200")
    except Exception:
        failed.append("reference.load")
    try:
        _warm_matplotlib()
    except Exception:
        failed.append("matplotlib")
    return failed


def _warm_matplotlib() -> None:
    from tilinglib import figure_cache

    if not figure_cache._inline():
        return                          # another backend: a window or a file, left alone
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(3.2, 2.0))
    try:
        ax = fig.add_subplot()
        ax.loglog([1, 2, 4, 8], [8, 4, 2, 1], "o-", label="warm")
        ax.set_xlabel("TILE")
        ax.set_title("warm-up")
        ax.legend(fontsize=8)
        fig.canvas.print_png(io.BytesIO())
    finally:
        plt.close(fig)
    figure_cache._note_pristine()
