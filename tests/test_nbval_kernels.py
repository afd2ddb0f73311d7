"""tilinglib.devtools.nbval_kernels: the next notebook's kernel started ahead, in the
environment nbval would start it in, and used only by that notebook; every kernel stopped by
the session's end."""

import importlib.util
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("nbval") is None,
                                reason="nbval not installed")

# A driver that runs pytest on the given notebooks with the plugin, and prints how many
# kernels nbval's own start made (the rest were started ahead and taken).
_DRIVER = r"""
import sys
import nbval.kernel
import pytest
import tilinglib.devtools.nbval_kernels as plugin

made = []
own = nbval.kernel.start_new_kernel
def counted(*args, **kwargs):
    made.append(kwargs.get("cwd"))
    return own(*args, **kwargs)
nbval.kernel.start_new_kernel = counted
code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "tilinglib.devtools.nbval_kernels",
                    "--nbval-lax", "--nbval-current-env", *sys.argv[1:]])
print("MADE", len(made), "PENDING", bool(plugin._state["pending"]))
import os
children = []
if os.path.isdir("/proc"):                 # processes this one started that still run
    for stat in os.listdir("/proc"):
        try:
            fields = open(f"/proc/{stat}/stat").read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            children.append(stat)
print("LEFT", len(children))
sys.exit(code)
"""


def _notebook(path, name):
    """A notebook whose checked output is the test its kernel was started for and the
    kernel's working directory."""
    code = ("# NBVAL_CHECK_OUTPUT\nimport os\n"
            "print(os.environ['PYTEST_CURRENT_TEST'].split('::')[0].rsplit('/', 1)[-1])\n"
            "print(os.path.basename(os.getcwd()))")
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": code,
            "outputs": [{"name": "stdout", "output_type": "stream",
                         "text": f"{name}\n{path.parent.name}\n"}]}
    nb = {"cells": [cell], "metadata": {"kernelspec": {"name": "python3",
                                                       "display_name": "Python 3"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))
    return path


def _env(ahead: bool, **extra):
    import os

    return {**os.environ, "TILINGLIB_NBVAL_AHEAD": "" if ahead else "0", **extra}


def _run(tmp_path, *names, extra=(), ahead=False):
    paths = [str(_notebook(tmp_path / name, name)) for name in names]
    proc = subprocess.run([sys.executable, "-c", _DRIVER, *paths, *extra], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300, env=_env(ahead))
    return proc


def test_later_kernels_started_ahead_same_environment(tmp_path):
    folder = tmp_path / "lessons"
    folder.mkdir()
    proc = _run(folder, "a.ipynb", "b.ipynb", "c.ipynb")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "3 passed" in proc.stdout
    # nbval made the first kernel; the second and third were started ahead and taken,
    # none is left over, and every kernel has exited by the session's end
    assert "MADE 1 PENDING False" in proc.stdout
    assert "LEFT 0" in proc.stdout


def test_one_notebook_nothing_started_ahead(tmp_path):
    proc = _run(tmp_path, "only.ipynb")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "MADE 1 PENDING False" in proc.stdout


needs_two_cpus = pytest.mark.skipif((__import__("os").cpu_count() or 1) < 2,
                                    reason="notebooks run ahead only with two CPUs or more")


@needs_two_cpus
def test_notebooks_run_ahead_in_their_own_environment(tmp_path):
    # every notebook run ahead (nbval starts none), each in a kernel started as nbval
    # would start it for that notebook, and nothing is left running
    folder = tmp_path / "lessons"
    folder.mkdir()
    proc = _run(folder, "a.ipynb", "b.ipynb", "c.ipynb", ahead=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "3 passed" in proc.stdout
    assert "MADE 0 PENDING False" in proc.stdout
    assert "LEFT 0" in proc.stdout


def _cells_notebook(path, cells):
    """A notebook of (source, stored stdout or None) cells; a cell with stored stdout is
    checked against it."""
    nb_cells = []
    for source, text in cells:
        outputs = [] if text is None else [{"name": "stdout", "output_type": "stream",
                                             "text": text}]
        nb_cells.append({"cell_type": "code", "execution_count": 1, "metadata": {},
                         "source": ("# NBVAL_CHECK_OUTPUT\n" if text is not None else "")
                         + source, "outputs": outputs})
    nb = {"cells": nb_cells, "metadata": {"kernelspec": {"name": "python3",
                                                          "display_name": "Python 3"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))
    return str(path)


def _drive(tmp_path, paths, ahead, *extra, timeout=300):
    return subprocess.run([sys.executable, "-c", _DRIVER, *paths, *extra], capture_output=True,
                          text=True, cwd=tmp_path, timeout=timeout, env=_env(ahead))


@needs_two_cpus
@pytest.mark.parametrize("ahead", [False, True])
def test_run_ahead_checks_the_same_cells_as_nbval(tmp_path, ahead):
    # the same verdicts both ways: state kept from cell to cell, a skipped cell not run, an
    # exception reported at its cell with the cells after it still run, and a cell whose
    # output differs from the stored one failed (the outputs compared are the kernel's)
    first = _cells_notebook(tmp_path / "a.ipynb", [
        ("x = 1", None),
        ("# NBVAL_SKIP\nx = 99", None),
        ("print(x)", "1\n"),
        ("raise ValueError('cell 3')", None),
        ("x += 1\nprint(x)", "2\n"),
        ("print('not what is stored')", "stored\n")])
    second = _cells_notebook(tmp_path / "b.ipynb", [("print(6 * 7)", "42\n")])
    proc = _drive(tmp_path, [first, second], ahead, "-rf")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "2 failed, 4 passed, 1 skipped" in proc.stdout
    failed = sorted(line.split()[1] for line in proc.stdout.splitlines()
                    if line.startswith("FAILED"))
    assert failed == ["a.ipynb::Cell", "a.ipynb::Cell"]
    assert "a.ipynb::Cell 3" in proc.stdout and "a.ipynb::Cell 5" in proc.stdout
    assert "ValueError" in proc.stdout and "cell 3" in proc.stdout
    assert "LEFT 0" in proc.stdout


@needs_two_cpus
def test_two_notebooks_run_at_once(tmp_path):
    # b's cell starts before a's 2-second cell ends: b ran while nbval waited for a
    a = _cells_notebook(tmp_path / "a.ipynb", [
        ("import time\ntime.sleep(2)\nopen('a_end', 'w').write(repr(time.time()))", None)])
    b = _cells_notebook(tmp_path / "b.ipynb", [
        ("import time\nopen('b_start', 'w').write(repr(time.time()))", None)])
    proc = _drive(tmp_path, [a, b], True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert float((tmp_path / "b_start").read_text()) < float((tmp_path / "a_end").read_text())


@needs_two_cpus
def test_a_cell_past_the_timeout_is_interrupted_when_run_ahead(tmp_path):
    # nbval's --nbval-cell-timeout still holds: the cell is interrupted, reported, and the
    # session ends without waiting for the sleep
    a = _cells_notebook(tmp_path / "a.ipynb", [("import time\ntime.sleep(60)", None),
                                               ("print('after')", "after\n")])
    import time

    start = time.monotonic()
    proc = _drive(tmp_path, [a], True, "--nbval-cell-timeout=2", timeout=120)
    assert time.monotonic() - start < 40
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "Timeout of 2 seconds exceeded" in proc.stdout
    assert "1 failed, 1 xpassed" in proc.stdout      # (nbval: the cells after a timeout)
    assert "LEFT 0" in proc.stdout


def test_an_nbval_without_the_expected_functions_is_left_alone(monkeypatch):
    # another nbval release may name its kernel start otherwise: then nothing is patched
    import sys
    import types

    from tilinglib.devtools import nbval_kernels

    fake_kernel = types.ModuleType("nbval.kernel")
    fake = types.ModuleType("nbval")
    fake.kernel = fake_kernel
    monkeypatch.setitem(sys.modules, "nbval", fake)
    monkeypatch.setitem(sys.modules, "nbval.kernel", fake_kernel)
    monkeypatch.setitem(nbval_kernels._state, "original", None)
    nbval_kernels.pytest_configure(None)
    assert nbval_kernels._state["original"] is None
    assert not hasattr(fake_kernel, "start_new_kernel")


# A cell that says whether the kernel was warmed (kernel_warmup imports tilinglib's
# emulator before the cell runs) and which names the notebook's namespace holds.
_PROBE = ("# NBVAL_CHECK_OUTPUT\nimport sys  # tilinglib: this notebook imports it\n"
          "print('tiling' 'lib.emulator' in sys.modules, 'matplotlib.pyplot' in sys.modules)\n"
          "print(sorted(k for k in globals() if not k.startswith('_')\n"
          "             and k not in ('In', 'Out', 'exit', 'quit', 'get_ipython', 'open')))\n"
          "import matplotlib.pyplot as plt\nprint(plt.get_fignums())")


def _probe_notebook(path, warmed: bool, mentions_tilinglib: bool = True):
    code = _PROBE if mentions_tilinglib else _PROBE.replace("  # tilinglib: this notebook imports it", "")
    assert mentions_tilinglib == ("tilinglib" in code)
    text = f"{warmed} {warmed}\n['sys']\n[]\n"
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": code,
            "outputs": [{"name": "stdout", "output_type": "stream", "text": text}]}
    nb = {"cells": [cell], "metadata": {"kernelspec": {"name": "python3",
                                                       "display_name": "Python 3"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))
    return str(path)


def test_kernels_started_ahead_are_warmed_only_for_notebooks_that_use_tilinglib(tmp_path):
    # the first kernel is nbval's own (not warmed); the second and third are started ahead:
    # the one whose notebook names tilinglib has the lesson stack and pyplot imported, with
    # no name bound in its namespace and no figure left open; the other is a plain kernel
    paths = [_probe_notebook(tmp_path / "a.ipynb", False),
             _probe_notebook(tmp_path / "b.ipynb", True),
             _probe_notebook(tmp_path / "c.ipynb", False, mentions_tilinglib=False)]
    proc = subprocess.run([sys.executable, "-c", _DRIVER, *paths], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300,
                          env=_env(False, MPLBACKEND="module://matplotlib_inline.backend_inline"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "3 passed" in proc.stdout
    assert "MADE 1 PENDING False" in proc.stdout


def test_warm_up_leaves_matplotlib_as_a_first_plot_would(tmp_path):
    # in a fresh process under the inline backend: nothing fails, no figure stays open, and
    # the figure cache takes the settings as a fresh kernel's (so its pictures are used)
    code = ("from tilinglib.devtools import kernel_warmup\n"
            "failed = kernel_warmup.warm_up()\n"
            "import matplotlib, matplotlib.pyplot as plt\n"
            "from tilinglib import figure_cache\n"
            "print(failed, plt.get_fignums(), figure_cache._fresh_settings(),\n"
            "      'inline' in matplotlib.get_backend())")
    env = {**__import__("os").environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["[]", "[]", "True", "True"]
