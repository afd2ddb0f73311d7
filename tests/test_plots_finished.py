"""The lesson plots are drawn once in Jupyter: under the inline backend a plot function's
own figure is marked drawn, so that only its PNG is made (pyplot's end-of-cell hook skips
it); a later change marks it stale again; other backends are left alone."""

from __future__ import annotations

import matplotlib
import pytest

import tilinglib as tl


@pytest.fixture
def inline_backend():
    import matplotlib.pyplot as plt

    before = matplotlib.get_backend()
    pytest.importorskip("matplotlib_inline")
    plt.switch_backend("module://matplotlib_inline.backend_inline")
    yield
    plt.close("all")
    plt.switch_backend(before)


def test_a_plot_functions_own_figure_is_marked_drawn_under_the_inline_backend(inline_backend):
    ax = tl.roofline.plot_roofline("H200 SXM", {"naive": 0.25})
    assert ax.figure.stale is False
    ax.set_title("changed")            # a student's change after the call is drawn
    assert ax.figure.stale is True


def test_a_figure_given_by_the_caller_and_other_backends_are_left_alone():
    import matplotlib.pyplot as plt

    plt.switch_backend("agg")
    ax = tl.roofline.plot_roofline("H200 SXM", {"naive": 0.25})
    assert ax.figure.stale is True
    fig, mine = plt.subplots()
    tl.plots.plot_requested_bytes(64, [1, 2], [10, 5], ax=mine)
    assert fig.stale is True
    plt.close("all")
