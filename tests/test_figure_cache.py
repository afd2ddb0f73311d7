"""tilinglib.figure_cache: a lesson plot's picture from the disk cache is the one a fresh draw
sends, keyed by the plot's arguments, redrawn when the caller changes the figure, and off
where the disk cache is off (the grader's sandbox) or outside a notebook kernel."""

import json
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

CELLS = [
    "import sys\nimport tilinglib as tl",
    "tl.tileloop.plot_phases(4);",
    "tl.tileloop.plot_phases(3);",
    "tl.tileloop.plot_phases(4)",              # its value shown too (text/plain of the Axes)
    "print('matplotlib' in sys.modules)",
    "ax = tl.tileloop.plot_phases(4)\nax.set_title('changed after the call');",
    # kept only where the picture goes to this cell's output: not inside an Output widget
    "import ipywidgets\nfrom tilinglib import figure_cache\nout = ipywidgets.Output()\n"
    "with out:\n    inside = figure_cache.key_for(tl.tileloop.plot_phases, (4,), {})\n"
    "print(inside is None, figure_cache.key_for(tl.tileloop.plot_phases, (4,), {}) is None)",
    # show_now: for an Output's `with` block, shown at once (and kept)
    "shown = ipywidgets.Output()\nwith shown:\n    figure_cache.show_now(tl.tileloop.plot_phases, 2)\n"
    "print('matplotlib' in sys.modules)",
    # a student's pyplot in the namespace: drawn, so that plt.savefig / plt.gcf() see it
    "import matplotlib.pyplot as plt\n"
    "print(figure_cache.key_for(tl.tileloop.plot_phases, (4,), {}) is None)",
]


def _run(cache: str, tmp_path: Path) -> list:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    env = dict(os.environ, TILINGLIB_CACHE_DIR=cache, TILINGLIB_BACKEND="emulator")
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("MPLBACKEND", None)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=120,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.km = client.create_kernel_manager()
    client.km.extra_env = env            # jupyter_client passes `env` on to the kernel
    client.start_new_kernel(env=env)
    try:
        client.start_new_kernel_client()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        client.set_widgets_metadata()
    finally:
        client._cleanup_kernel()
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    widgets = sorted(json.dumps(v["state"].get("outputs"), sort_keys=True)
                     for v in state.get("state", {}).values() if v.get("model_name") == "OutputModel")
    return [widgets] + [[json.dumps([o.get("output_type"), o.get("data"), o.get("metadata"), o.get("text")], sort_keys=True)
             for o in cell.outputs] for cell in nb.cells]


def test_cached_picture_is_a_fresh_draws_keyed_by_arguments(tmp_path):
    cache = tmp_path / "cache"
    fresh = _run("off", tmp_path)
    first = _run(str(cache), tmp_path)          # misses: drawn, sent, stored
    second = _run(str(cache), tmp_path)         # hits: sent from the disk cache
    (fresh_widgets, *fresh), (first_widgets, *first), (second_widgets, *second) = \
        fresh, first, second
    # show_now's picture, in the Output widget: the same in the three runs
    assert len(fresh_widgets) == 2 and "image/png" in fresh_widgets[1] + fresh_widgets[0]
    assert first_widgets == fresh_widgets and second_widgets == fresh_widgets
    for cell in (1, 2, 3, 5):
        assert "image/png" in fresh[cell][-1]
        assert first[cell] == fresh[cell] and second[cell] == fresh[cell], cell
    assert fresh[1] != fresh[2]                  # other arguments, another picture
    assert len(fresh[3]) == 2 and "<Axes: " in fresh[3][0] and fresh[3][1] == fresh[1][0]
    assert fresh[5] != fresh[1]                  # the caller's change is drawn
    assert "True" in fresh[4][0] and "True" in first[4][0]
    assert "False" in second[4][0]               # a hit imports no matplotlib
    assert "True False" in first[6][0]
    assert "True" in first[8][0] and "True" in second[8][0]
    stored = [p for p in cache.rglob("*") if p.is_file() and p.parent.name == "figures"]
    assert len(stored) == 3                      # one per arguments; the changed one not kept


def test_off_outside_a_kernel_and_where_the_disk_cache_is_off(monkeypatch):
    from tilinglib import figure_cache, tileloop
    from tilinglib.toolchain import disk_cache

    assert figure_cache.key_for(tileloop.plot_phases, (4,), {}) is None    # no kernel here
    monkeypatch.setenv("TILINGLIB_CACHE_DIR", "off")                        # the sandbox's
    assert disk_cache.cache_dir() is None
    assert figure_cache.key_for(tileloop.plot_phases, (4,), {}) is None
    import matplotlib

    matplotlib.use("Agg")
    ax = tileloop.plot_phases(4)                 # the real Axes, as before
    assert type(ax).__name__ == "Axes"
    import matplotlib.pyplot as plt

    plt.close(ax.figure)


_PNG = r"""
import os, sys
from tilinglib import figure_cache
calls = []
def render():
    calls.append(1)
    import io
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1], [0, int(sys.argv[1])])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()
png = figure_cache.cached_png("test", (int(sys.argv[1]),), render)
print(len(calls), "matplotlib" in sys.modules, __import__("hashlib").sha256(png).hexdigest())
"""


def _png(tmp_path, cache, value):
    import subprocess
    import sys

    env = dict(os.environ, TILINGLIB_CACHE_DIR=cache)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent) + os.pathsep + \
        env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", _PNG, str(value)], env=env, check=True,
                          capture_output=True, text=True, cwd=tmp_path).stdout.split()


def test_cached_png_is_the_rendered_bytes_keyed_by_its_parts(tmp_path):
    cache = str(tmp_path / "cache")
    fresh = _png(tmp_path, "off", 1)
    first, second = _png(tmp_path, cache, 1), _png(tmp_path, cache, 1)
    other = _png(tmp_path, cache, 2)
    assert fresh[:2] == ["1", "True"] and first[:2] == ["1", "True"]
    assert second[:2] == ["0", "False"]          # from the disk cache: nothing drawn
    assert fresh[2] == first[2] == second[2]
    assert other[0] == "1" and other[2] != fresh[2]
