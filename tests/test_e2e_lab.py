"""The lessons in a real browser: JupyterLab, driven by Playwright in Debian's Chromium.

What a student does, checked end to end on the CPU emulator (no GPU needed):

1. lesson 03: open it, run all cells, move the TILE slider with the keyboard, and see the
   readout change to the counts tilinglib computes for the new TILE;
2. lesson 01: the same with the roofline slider, and the plot redrawn;
3. a scratch notebook: a slow recompute shows "working", and a kernel that fails for one
   TILE shows a one-line message in the status line, never a traceback;
4. lesson 03's exercise 03.1: a wrong tile load typed into the cell gives a short message that
   quotes the faulting CUDA line, and the right one is accepted.

The server is started here, on 127.0.0.1 with a free port and a random token, serving
COPIES of the notebooks from a temporary folder, with throw-away Jupyter config, data and
runtime folders (the kernel is this interpreter, installed there as "python3") and
TILINGLIB_BACKEND=emulator. It is stopped when the module ends, whatever happened.
Screenshots and the server's log go to artifacts/e2e/ (git-ignored).

Run alone:  .venv/bin/python -m pytest -m e2e
Needs:      Debian's chromium (/usr/bin/chromium, or TILINGLIB_CHROMIUM=<path>) and the
            "e2e" extra (pip install -e ".[e2e]"). Without them the tests skip with the
            reason, except under CI=true, where they fail: CI must not skip them silently.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts" / "e2e"
CHROMIUM = os.environ.get("TILINGLIB_CHROMIUM", "/usr/bin/chromium")
# Flags that let Chromium run headless as root on a machine with no network beyond loopback.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
SERVER_START_S = 90       # JupyterLab answering /api/status
UI_TIMEOUT_MS = 90_000    # a page element appearing, a notebook finishing
RECOMPUTE_TIMEOUT_MS = 30_000


# -- what the test needs, and what to do without it ----------------------------------------

def missing_requirements() -> list[str]:
    """Why the browser test cannot run here (empty when it can)."""
    missing = []
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing.append(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; "
                       f"or set TILINGLIB_CHROMIUM)")
    for module, what in (("playwright.sync_api", "Playwright for Python"),
                         ("jupyterlab", "JupyterLab"), ("ipykernel", "ipykernel")):
        try:
            __import__(module)
        except ImportError:
            missing.append(f'{what} is not installed (pip install -e ".[e2e]")')
    return missing


def in_ci(environ=os.environ) -> bool:
    return environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def skip_or_fail(missing: list[str], environ=os.environ) -> None:
    """Skip with the reasons; under CI=true fail instead, so CI cannot skip silently."""
    if not missing:
        return
    reason = "browser test cannot run: " + "; ".join(missing)
    if in_ci(environ):
        pytest.fail(reason + " (CI=true: failing instead of skipping)", pytrace=False)
    pytest.skip(reason)


# -- the JupyterLab server ---------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """A JupyterLab server of our own in `home`; `stop()` ends it and its kernels."""

    def __init__(self, home: Path, log_path: Path):
        self.home = home
        self.notebooks = home / "notebooks"
        self.runtime = home / "runtime"
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for key in list(env):
            if key.startswith(("JUPYTER_", "JPY_")):
                del env[key]
        env.update(JUPYTER_CONFIG_DIR=str(self.home / "config"),
                   JUPYTER_DATA_DIR=str(self.home / "data"),
                   JUPYTER_RUNTIME_DIR=str(self.runtime),
                   JUPYTER_PLATFORM_DIRS="1",
                   IPYTHONDIR=str(self.home / "ipython"),
                   MPLBACKEND="module://matplotlib_inline.backend_inline",
                   TILINGLIB_BACKEND="emulator")
        return env

    def prepare(self) -> None:
        self.notebooks.mkdir(parents=True)
        for path in sorted((ROOT / "notebooks").glob("0*.ipynb")):
            shutil.copy2(path, self.notebooks / path.name)       # never the repo's own files
        labconfig = self.home / "config" / "labconfig"
        labconfig.mkdir(parents=True)
        # No "would you like news?" toast over the page.
        (labconfig / "page_config.json").write_text(json.dumps(
            {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        # The kernel: this interpreter (the one with tilinglib), as the notebooks' "python3".
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--user",
                        "--name", "python3", "--display-name", "Python 3 (ipykernel)"],
                       env=self.env(), check=True, capture_output=True, text=True)

    def start(self) -> None:
        self.prepare()
        command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
                   "--ip=127.0.0.1", f"--port={self.port}", "--port-retries=0",
                   f"--ServerApp.token={self.token}",
                   f"--ServerApp.root_dir={self.notebooks}",
                   "--LabApp.news_url=", "--LabApp.check_for_updates_class="
                   "jupyterlab.NeverCheckForUpdate"]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "w")
        self.proc = subprocess.Popen(command, env=self.env(), cwd=self.home, stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)   # its own process group
        log.close()
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n"
                                   + self.log_tail())
            try:
                with urllib.request.urlopen(f"{self.base}/api/status?token={self.token}",
                                            timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"jupyter lab did not answer in {SERVER_START_S} s:\n"
                           + self.log_tail())

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def url(self, notebook: str) -> str:
        """The notebook in a workspace of its own (no tabs restored from an earlier test)."""
        workspace = re.sub(r"\W", "-", Path(notebook).stem) + "-" + secrets.token_hex(4)
        return f"{self.base}/lab/workspaces/{workspace}/tree/{notebook}?token={self.token}"

    def _kernel_pids(self) -> list[int]:
        """Processes whose command line names our runtime folder: the kernels we started
        (jupyter_client puts each kernel in a session of its own)."""
        pids, marker = [], str(self.runtime).encode()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if marker in (entry / "cmdline").read_bytes():
                        pids.append(int(entry.name))
                except OSError:
                    pass
        return pids

    def stop(self) -> None:
        if self.proc is None:
            return
        kernels = self._kernel_pids()
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)   # the server shuts its kernels down
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        for pid in set(kernels) | set(self._kernel_pids()):     # any kernel left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc = None


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    skip_or_fail(missing_requirements())
    server = LabServer(tmp_path_factory.mktemp("lab"), ARTIFACTS / "jupyter-server.log")
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    try:
        yield page
    finally:
        try:
            page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-last.png"))
        finally:
            context.close()


# -- driving JupyterLab ------------------------------------------------------------------

NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"      # the notebook on show

def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


def menu(page, top: str, item: str) -> None:
    """Click a menu bar entry, then one of its items (as a student does)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{top}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def wait_kernel_idle(page) -> None:
    """Wait for the status bar to say "<kernel name> | Idle". (The toolbar's execution
    indicator says idle already while the page reads "No Kernel | Initializing".)"""
    page.locator(".jp-StatusBar-TextItem",
                 has_text=re.compile(r"^(?!No Kernel).+ \| Idle$")).wait_for()


def open_and_run_all(lab: LabServer, page, notebook: str) -> None:
    """Open `notebook`, clear the saved outputs, run all cells, wait until all have run."""
    page.goto(lab.url(notebook))
    page.locator(f"{NB} .jp-Cell").first.wait_for()
    wait_kernel_idle(page)
    # The saved outputs include old widget views: clear them, so that whatever shows up
    # next comes from this run's kernel.
    menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_function(f"document.querySelectorAll('{NB} .jupyter-widgets').length === 0")
    menu(page, "Run", "Run All Cells")
    # Every code cell shows "[n]:" once it has run; "[*]:" while queued or running.
    try:
        page.wait_for_function(
            """nb => {
                const prompts = [...document.querySelectorAll(
                    nb + ' .jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent);
                return prompts.length > 0
                       && prompts.every(t => /^\\[\\d+\\]:$/.test(t.trim()));
            }""", arg=NB, timeout=UI_TIMEOUT_MS)
    except Exception as exc:
        raise AssertionError(f"{notebook}: not every cell ran: {cell_states(page)}") from exc
    wait_kernel_idle(page)


def cell_states(page) -> str:
    """Prompts of the code cells, and the text of any error output (for failure messages)."""
    prompts = page.locator(f"{NB} .jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
    errors = page.locator(f'{NB} .jp-OutputArea-output[data-mime-type='
                          f'"application/vnd.jupyter.stderr"]').all_inner_texts()
    return f"prompts {' '.join(p.strip() for p in prompts)}; stderr/errors: {errors}"


def no_traceback(page) -> None:
    text = page.locator(NB).inner_text()
    assert "Traceback" not in text, "a traceback is shown in the notebook"


def readout(page, widget: str) -> dict[str, str]:
    """{data-name: data-value} of the readout `widget` shows in the page."""
    return page.locator(f'{NB} .tl-readout[data-widget="{widget}"] td.tl-value').evaluate_all(
        "cells => Object.fromEntries(cells.map(c => [c.dataset.name, c.dataset.value]))")


def explorer(page, widget: str):
    """The ipywidgets box that holds the readout `widget`."""
    return page.locator(f"{NB} .widget-vbox",
                        has=page.locator(f'.tl-readout[data-widget="{widget}"]')).last


def wait_shown(page, widget: str, name: str, value) -> None:
    page.locator(f'{NB} .tl-readout[data-widget="{widget}"] '
                 f'td.tl-value[data-name="{name}"][data-value="{value}"]'
                 ).wait_for(timeout=RECOMPUTE_TIMEOUT_MS)


def press(box, key: str) -> None:
    """Focus the slider's noUiSlider handle and press `key` (ipywidgets 8)."""
    handle = box.locator(".widget-slider .noUi-handle")
    handle.focus()
    handle.press(key)


def emulator_measurement(N: int, tile: int) -> dict:
    """tilinglib.sgemm.measure_tiled(N, tile) on the emulator, in a process of its own (this
    one might have picked the GPU)."""
    code = ("import dataclasses, json, sys\n"
            "from tilinglib.sgemm import measure_tiled\n"
            "m = measure_tiled(int(sys.argv[1]), int(sys.argv[2]))\n"
            "print(json.dumps(dict(dataclasses.asdict(m), bytes_per_fma=m.bytes_per_fma)))")
    out = subprocess.run([sys.executable, "-c", code, str(N), str(tile)], check=True,
                         capture_output=True, text=True,
                         env=dict(os.environ, TILINGLIB_BACKEND="emulator")).stdout
    return json.loads(out.strip().splitlines()[-1])


def check_tile_readout(shown: dict[str, str], N: int, tile: int) -> None:
    m = emulator_measurement(N, tile)
    assert shown["tile"] == str(tile)
    assert shown["backend"] == "emulator"
    for name in ("requested_bytes", "global_load_requests", "global_load_sectors",
                 "shared_load_instructions"):
        assert int(shown[name]) == m[name], name
    assert float(shown["bytes_per_fma"]) == pytest.approx(m["bytes_per_fma"])
    assert float(shown["relative_error"]) == pytest.approx(m["relative_error"], rel=0.05)
    assert int(shown["requested_bytes"]) == 8 * N**3 // tile     # lesson 01's formula


# -- the tests ---------------------------------------------------------------------------

@pytest.mark.e2e
def test_lesson_03_tile_slider_recounts(lab, page):
    open_and_run_all(lab, page, "03_tiled_kernel.ipynb")
    box = explorer(page, "tile-explorer")
    box.scroll_into_view_if_needed()
    label = box.locator(".widget-slider .widget-label").inner_text()
    N = int(re.search(r"N=(\d+)", label).group(1))
    shown = readout(page, "tile-explorer")
    start = int(shown["tile"])
    check_tile_readout(shown, N, start)
    no_traceback(page)
    shot(page, "03-before.png")

    from tilinglib.sgemm import valid_tiles

    tiles = valid_tiles(N)
    assert tiles.index(start) + 1 < len(tiles) and tiles.index(start) >= 1
    up, down = tiles[tiles.index(start) + 1], tiles[tiles.index(start) - 1]

    press(box, "ArrowRight")
    wait_shown(page, "tile-explorer", "tile", up)
    assert box.locator(".widget-readout").inner_text().strip() == str(up)
    check_tile_readout(readout(page, "tile-explorer"), N, up)
    shot(page, f"03-after-right-TILE{up}.png")

    press(box, "ArrowLeft")
    wait_shown(page, "tile-explorer", "tile", start)
    press(box, "ArrowLeft")
    wait_shown(page, "tile-explorer", "tile", down)
    check_tile_readout(readout(page, "tile-explorer"), N, down)
    assert box.locator('.tl-status[data-state="idle"]').count() == 1
    no_traceback(page)
    shot(page, f"03-after-left-TILE{down}.png")


@pytest.mark.e2e
def test_lesson_01_roofline_slider_moves_the_point(lab, page):
    from tilinglib.roofline import (attainable, gpu_spec, naive_sgemm_intensity,
                                    tiled_sgemm_intensity)

    open_and_run_all(lab, page, "01_reuse_argument.ipynb")
    box = explorer(page, "roofline-explorer")
    box.scroll_into_view_if_needed()
    plot = box.locator(".widget-output img")
    plot.wait_for()
    before_png = plot.get_attribute("src")
    start = int(readout(page, "roofline-explorer")["tile"])
    gpu = box.locator("select").input_value()
    no_traceback(page)
    shot(page, "01-before.png")

    tiles = [1, 2, 4, 8, 16, 32]
    new = tiles[tiles.index(start) - 1]
    press(box, "ArrowLeft")
    wait_shown(page, "roofline-explorer", "tile", new)
    page.wait_for_function("([img, old]) => img.src !== old",
                           arg=[plot.element_handle(), before_png], timeout=RECOMPUTE_TIMEOUT_MS)
    shown = readout(page, "roofline-explorer")
    spec = gpu_spec(gpu)
    intensity = tiled_sgemm_intensity(new)
    bound = attainable(intensity, spec)
    assert float(shown["intensity"]) == pytest.approx(intensity)
    assert float(shown["bytes_per_fma"]) == pytest.approx(8 / new)
    assert float(shown["ridge"]) == pytest.approx(spec.ridge_point, abs=0.01)
    assert float(shown["bound_tflops"]) == pytest.approx(bound / 1e12, abs=1e-3)
    assert float(shown["speedup_bound"]) == pytest.approx(
        bound / attainable(naive_sgemm_intensity(), spec), abs=1e-3)
    assert shown["regime"] == ("memory-bound" if intensity < spec.ridge_point
                               else "compute-bound")
    assert plot.get_attribute("src").startswith("data:image/png")
    assert box.locator(".widget-output img").count() == 1        # redrawn, not appended
    no_traceback(page)
    shot(page, f"01-after-left-TILE{new}.png")


def exercise_cell(page, exercise_id: str):
    """The code cell that ends with tl.exercises.check("<exercise_id>", ...)."""
    return page.locator(f"{NB} .jp-CodeCell",
                        has=page.locator(".jp-InputArea-editor",
                                         has_text=f'tl.exercises.check("{exercise_id}"')).first


def type_and_run(page, cell, code: str) -> str:
    """Replace `cell`'s text with `code` as a student would (click, select all, type), run
    it with Ctrl+Enter and return the text of its new output."""
    cell.scroll_into_view_if_needed()
    old = cell.locator(".jp-InputArea-prompt").inner_text().strip()
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)      # typed text, without the editor's auto-closing brackets
    assert editor.inner_text().strip() == code.strip()
    page.keyboard.press("Control+Enter")
    page.wait_for_function(
        """([cell, old]) => {
            const t = cell.querySelector('.jp-InputArea-prompt').textContent.trim();
            return /^\\[\\d+\\]:$/.test(t) && t !== old;
        }""", arg=[cell.element_handle(), old], timeout=RECOMPUTE_TIMEOUT_MS)
    return cell.locator(".jp-OutputArea-output").inner_text().strip()


EXERCISE_03_1 = """a_load = "As[ty][tx] = A[row * N + (t * TILE + tx){extra}];"
b_load = "Bs[ty][tx] = B[(t * TILE + ty) * N + col];"
tl.exercises.check("03.1", (a_load, b_load))"""


@pytest.mark.e2e
def test_lesson_03_exercise_wrong_then_right(lab, page):
    page.goto(lab.url("03_tiled_kernel.ipynb"))
    page.locator(f"{NB} .jp-Cell").first.wait_for()
    wait_kernel_idle(page)
    menu(page, "Edit", "Clear Outputs of All Cells")
    first = page.locator(f"{NB} .jp-CodeCell").first           # import numpy, tilinglib
    first.locator(".cm-content").click()
    page.keyboard.press("Control+Enter")
    first.locator(".jp-InputArea-prompt", has_text=re.compile(r"^\[\d+\]:$")).wait_for()
    cell = exercise_cell(page, "03.1")

    # One element too far: the emulator stops the kernel at the faulting load.
    shown = type_and_run(page, cell, EXERCISE_03_1.format(extra=" + 1"))
    shot(page, "03-exercise-wrong.png")
    lines = [line for line in shown.splitlines() if line.strip()]
    assert lines[0].startswith("✘ Exercise 03.1, not yet right"), shown
    assert len(lines) <= 12, shown
    assert "MemoryAccessError" in shown
    assert "kernel.cu:27" in shown, shown
    assert "27 |         As[ty][tx] = A[row * N + (t * TILE + tx) + 1];" in shown, shown
    assert "Traceback" not in shown and "site-packages" not in shown

    shown = type_and_run(page, cell, EXERCISE_03_1.format(extra=""))
    shot(page, "03-exercise-right.png")
    assert shown.startswith("✔ Exercise 03.1, correct"), shown
    assert "C matches NumPy" in shown
    no_traceback(page)


SCRATCH = [
    "import time\nimport tilinglib as tl\nfrom tilinglib.sgemm import measure_tiled",
    # A student's edit that breaks the kernel at TILE=32 only, and a slow recompute.
    'source = tl.kernels.load("sgemm_tiled").replace(\n'
    '    "#ifndef TILE", "#if TILE == 32\\n#error not written for TILE=32\\n#endif\\n'
    '#ifndef TILE", 1)\n\n'
    "def slow_measure(N, tile, source=None):\n"
    "    time.sleep(2.5)\n"
    "    return measure_tiled(N, tile, source=source)\n\n"
    "tl.widgets.tile_explorer(64, value=16, source=source, measure=slow_measure)",
    # A TILE the kernel cannot take at N=64 (Run All stops here: it is the last cell).
    "tl.widgets.tile_explorer(64, value=5)",
]


@pytest.mark.e2e
def test_slow_recompute_and_a_mistake_show_in_the_status_line(lab, page):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in SCRATCH])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nbformat.write(nb, lab.notebooks / "scratch_polish.ipynb")
    open_and_run_all(lab, page, "scratch_polish.ipynb")
    box = explorer(page, "tile-explorer")
    wait_shown(page, "tile-explorer", "tile", 16)
    status = box.locator(".tl-status")
    # The wrong TILE in the last cell: one line, not a traceback through tilinglib.
    last_output = page.locator(f"{NB} .jp-CodeCell").last.locator(".jp-OutputArea-output")
    assert last_output.inner_text().strip() == (
        "WidgetArgumentError: TILE=5 is not one of the choices [1, 2, 4, 8, 16, 32]")
    no_traceback(page)

    press(box, "ArrowRight")                   # 16 -> 32: slow, then the #error
    box.locator('.tl-status[data-state="busy"]').wait_for(timeout=RECOMPUTE_TIMEOUT_MS)
    assert "TILE=32" in status.inner_text()
    shot(page, "polish-busy.png")
    box.locator('.tl-status[data-state="error"]').wait_for(timeout=RECOMPUTE_TIMEOUT_MS)
    message = status.inner_text().strip()
    assert message.startswith("TILE=32: CompileError") and "not written for TILE=32" in message
    assert "\n" not in message and len(message) < 400
    assert readout(page, "tile-explorer") == {}
    no_traceback(page)
    shot(page, "polish-error.png")

    press(box, "ArrowLeft")                    # back to 16: the error clears
    wait_shown(page, "tile-explorer", "tile", 16)
    assert box.locator('.tl-status[data-state="idle"]').count() == 1
    no_traceback(page)


def test_missing_browser_skips_here_but_fails_in_ci():
    """Runs everywhere (it needs no browser): the rule that CI cannot skip silently."""
    skip_or_fail([], {"CI": "true"})          # nothing missing: nothing happens
    with pytest.raises(pytest.skip.Exception, match="no Chromium"):
        skip_or_fail(["no Chromium at /x"], {})
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        skip_or_fail(["no Chromium at /x"], {"CI": "true"})
