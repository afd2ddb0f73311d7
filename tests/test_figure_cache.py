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
    finally:
        client._cleanup_kernel()
    return [[json.dumps([o.get("output_type"), o.get("data"), o.get("metadata"), o.get("text")], sort_keys=True)
             for o in cell.outputs] for cell in nb.cells]


def test_cached_picture_is_a_fresh_draws_keyed_by_arguments(tmp_path):
    cache = tmp_path / "cache"
    fresh = _run("off", tmp_path)
    first = _run(str(cache), tmp_path)          # misses: drawn, sent, stored
    second = _run(str(cache), tmp_path)         # hits: sent from the disk cache
    for cell in (1, 2, 3, 5):
        assert "image/png" in fresh[cell][-1]
        assert first[cell] == fresh[cell] and second[cell] == fresh[cell], cell
    assert fresh[1] != fresh[2]                  # other arguments, another picture
    assert len(fresh[3]) == 2 and "<Axes: " in fresh[3][0] and fresh[3][1] == fresh[1][0]
    assert fresh[5] != fresh[1]                  # the caller's change is drawn
    assert "True" in fresh[4][0] and "True" in first[4][0]
    assert "False" in second[4][0]               # a hit imports no matplotlib
    stored = [p for p in cache.rglob("*") if p.is_file() and p.parent.name == "figures"]
    assert len(stored) == 2                      # one per arguments; the changed one not kept


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
