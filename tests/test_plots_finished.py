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


@pytest.mark.parametrize("value, text", [(0.01, "0.01"), (0.25, "0.25"), (1, "1"), (100, "100"),
                                         (1e4, "10000"), (1e5, "10⁵"), (2e6, "2×10⁶"),
                                         (1e-4, "10⁻⁴"), (0, "")])
def test_plain_number(value, text):
    assert tl.plots.plain_number(value) == text


def test_plain_log_ticks_label_the_ticks_the_default_labels():
    """The same ticks carry a label as with matplotlib's default log formatter (decades,
    and minor ticks only where the default labels them); only the text is plain."""
    import matplotlib.pyplot as plt

    plt.switch_backend("agg")
    labelled = []
    for plain in (False, True):
        fig, ax = plt.subplots()
        ax.loglog([1 / 64, 256], [0.05, 67])
        ax.set_ylim(15, 120)                       # under a decade: minor ticks labelled
        if plain:
            tl.plots.plain_log_ticks(ax)
        fig.canvas.draw()
        labelled.append([(round(t.get_position()[0], 6), bool(t.get_text()))
                         for t in ax.get_xticklabels() + ax.get_yticklabels(minor=True)])
        texts = [t.get_text() for t in ax.get_yticklabels(minor=True) if t.get_text()]
        plt.close(fig)
    assert labelled[0] == labelled[1]
    assert texts and not any("$" in t for t in texts)
