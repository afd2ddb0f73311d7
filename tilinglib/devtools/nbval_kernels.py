"""A pytest plugin that starts (and warms) the next notebooks' kernels while nbval runs this
one's cells, and lets a finished notebook's kernel exit in the background (pyproject.toml
loads it: ``-p tilinglib.devtools.nbval_kernels`` in addopts).

Why: nbval runs the notebooks one after the other, each in a fresh kernel that it starts
when the notebook's first cell is set up and waits for: about 0.7 s on a small machine
(Python, IPython and ipykernel imported in the new process, then jupyter_client's 0.2 s
wait for IOPub), eight times for the lessons. While a lesson's cells run, its kernel keeps
one CPU busy and the pytest process waits, so the next kernel's start can go on beside them.

What: once a notebook's first cell is set up (its kernel is ready), the kernels of the
`AHEAD` (2) notebooks that pytest runs next are started with the arguments nbval would give
them (the kernel's name, the notebook's folder as working directory, stderr to os.devnull),
and for each a thread connects a client to it and waits until it is ready, as nbval's own
start does (``nbval.kernel.start_new_kernel``). Two, because a short notebook (lesson 02
takes half a second) ends before the next kernel is ready. For a notebook that imports
tilinglib, the thread then has the kernel run kernel_warmup.py's `warm_up` as one silent
request without history (the lesson stack imported, matplotlib's first figure costs paid;
about 1.5 s of CPU the running notebook leaves idle) and waits for it to end. nbval's start,
for that notebook, then takes the kernel and its client; one that did not get ready is shut
down and nbval starts a kernel itself.

Each notebook still gets a kernel of its own, never used before, started in the same
environment: ``os.environ`` as it will be at that notebook's first setup (pytest's
``PYTEST_CURRENT_TEST`` included). The kernel is used only if the kernel name, the working
directory and ``os.environ`` are then those it was started with, and only for the notebook
it was started for (no other test runs between them: none is started past one); otherwise
it is shut down and nbval starts one as before. A warmed kernel holds imported modules and
nothing else: no name in the notebook's namespace, no history, no figure. A kernel started and never used is shut down at the
session's end.

A notebook's kernel is stopped as nbval stops it (the client's channels, then
``shutdown_kernel(now=True)``: killed); only the wait for its exit (0.1 s of polling) is
left to a thread, which the session's end joins. Nothing is done where nbval is not
installed or no notebook is collected.
"""

from __future__ import annotations

import os
import threading

import pytest

AHEAD = 2                   # notebooks whose kernels are started ahead of the one running
_state: dict = {"order": [], "pending": [], "original": None, "stopping": []}


def _kernel_name(collector) -> str | None:
    """The kernel name nbval's IPyNbFile.setup gives `collector`'s notebook."""
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME

    option = collector.config.option
    if getattr(option, "nbval_current_env", False):
        return CURRENT_ENV_KERNEL_NAME
    if getattr(option, "nbval_kernel_name", None):
        return option.nbval_kernel_name
    try:
        return collector.nb.metadata.get("kernelspec", {}).get("name", "python")
    except AttributeError:
        return None


class _Pending:
    """A kernel process started for one notebook and not yet taken."""

    def __init__(self, kernel_name: str, cwd: str, environ: dict, startup_timeout: float,
                 warm: bool = False):
        from nbval.kernel import KernelManager, NbvalKernelspecManager

        self.key = (kernel_name, cwd)
        self.warm = warm
        self.first = None               # the node id of its notebook's first cell
        self.environ = environ
        self.km = KernelManager(kernel_name=kernel_name,
                                kernel_spec_manager=NbvalKernelspecManager())
        self.km.start_kernel(stderr=open(os.devnull, "w"), cwd=cwd, env=dict(environ))
        self.kc = None
        self.failed = False
        # the client's connection and its wait for the kernel (kernel_info, then 0.2 s of
        # jupyter_client's IOPub flush), in a thread; the client is handed to the main
        # thread only after it ends (join)
        self.thread = threading.Thread(target=self._connect, args=(startup_timeout,),
                                       name="tilinglib-nbval-kernel", daemon=True)
        self.thread.start()

    def _connect(self, startup_timeout: float) -> None:
        try:
            kc = self.km.client()
            kc.start_channels()
            self.kc = kc
            kc.wait_for_ready(timeout=startup_timeout)
        except BaseException:
            self.failed = True
            return
        if self.warm:
            try:
                _warm(kc, startup_timeout)
            except BaseException:       # the kernel is still as nbval would start it
                pass

    def client(self):
        """The connected client of a ready kernel, or None (its channels stopped) if it did
        not get ready."""
        self.thread.join()
        if self.failed or self.kc is None:
            kc, self.kc = self.kc, None
            if kc is not None:
                kc.stop_channels()
            return None
        return self.kc

    def matches(self, kernel_name, kwargs) -> bool:
        return (set(kwargs) <= {"stderr", "cwd"} and self.key == (kernel_name, kwargs.get("cwd"))
                and self.environ == dict(os.environ))

    def shutdown(self) -> None:
        kc, self.kc = self.client(), None
        if kc is not None:
            kc.stop_channels()
        try:
            self.km.shutdown_kernel(now=True)
        except Exception:                       # already gone: nothing to stop
            pass


WARM_UP = "__import__('tilinglib.devtools.kernel_warmup').devtools.kernel_warmup.warm_up()"


def _warm(kc, timeout: float) -> None:
    """Run `WARM_UP` (tilinglib/devtools/kernel_warmup.py) in the kernel as a silent request,
    with no history, and wait for its reply and for the kernel to be idle again, reading
    only that request's messages."""
    import time

    msg_id = kc.execute(WARM_UP, silent=True, store_history=False, allow_stdin=False)
    deadline = time.monotonic() + timeout
    for channel, done in ((kc.get_shell_msg, lambda m: m["msg_type"] == "execute_reply"),
                          (kc.get_iopub_msg, lambda m: m["msg_type"] == "status"
                           and m["content"].get("execution_state") == "idle")):
        while True:
            msg = channel(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id and done(msg):
                break


def uses_tilinglib(collector) -> bool:
    """Whether `collector`'s notebook imports tilinglib in a code cell (then its kernel is
    warmed: kernel_warmup.py)."""
    try:
        cells = collector.nb.cells
    except AttributeError:
        return False
    return any(cell.get("cell_type") == "code" and "tilinglib" in cell.get("source", "")
               for cell in cells)


def setup_environ(first_item) -> dict:
    """``os.environ`` as it will be while pytest sets up `first_item` (where nbval starts
    its notebook's kernel): as now, with pytest's ``PYTEST_CURRENT_TEST`` naming that
    item's setup, as _pytest.runner writes it."""
    environ = dict(os.environ)
    environ["PYTEST_CURRENT_TEST"] = f"{first_item.nodeid} (setup)".replace("\x00", "(null)")
    return environ


def _drop_pending() -> None:
    pending, _state["pending"] = _state["pending"], []
    for kernel in pending:
        kernel.shutdown()


def start_new_kernel(startup_timeout=60, kernel_name="python", **kwargs):
    """nbval.kernel.start_new_kernel: (KernelManager, its started client), the kernel
    started ahead for this notebook when there is one that fits (see the module's
    docstring), else a new one as nbval starts it."""
    waiting = _state["pending"]
    at = next((i for i, kernel in enumerate(waiting) if kernel.matches(kernel_name, kwargs)),
              None)
    # the kernels started for this notebook's predecessors were not taken: stopped
    stale, pending = waiting[:at or 0], None
    if at is not None:
        pending = waiting[at]
        _state["pending"] = waiting[at + 1:]
    for kernel in stale:
        kernel.shutdown()
    if pending is None or not pending.km.is_alive():
        if pending is not None:
            pending.shutdown()
        return _state["original"](startup_timeout=startup_timeout, kernel_name=kernel_name,
                                  **kwargs)
    kc = pending.client()
    if kc is None:                       # not ready: nbval starts one, and reports its errors
        pending.shutdown()
        return _state["original"](startup_timeout=startup_timeout, kernel_name=kernel_name,
                                  **kwargs)
    return pending.km, kc


def _shutdown(km) -> None:
    try:
        km.shutdown_kernel(now=True)
    except Exception:                           # already gone: nothing to stop
        pass


def stop(self) -> None:
    """nbval.kernel.RunningKernel.stop: the client's channels stopped, then the kernel
    killed and its files removed (``shutdown_kernel(now=True)``, as nbval does) in a thread,
    which the session's end waits for."""
    self.kc.stop_channels()
    km = self.km
    del self.km
    thread = threading.Thread(target=_shutdown, args=(km,), name="tilinglib-nbval-stop",
                              daemon=True)
    thread.start()
    _state["stopping"].append(thread)


def pytest_configure(config) -> None:
    try:
        import nbval.kernel
    except ImportError:
        return
    if not (callable(getattr(nbval.kernel, "start_new_kernel", None))
            and callable(getattr(getattr(nbval.kernel, "RunningKernel", None), "stop", None))):
        return                  # another nbval: its kernels start as it starts them
    if _state["original"] is None:
        _state["original"] = nbval.kernel.start_new_kernel
        nbval.kernel.start_new_kernel = start_new_kernel
        nbval.kernel.RunningKernel.stop = stop


def pytest_collection_finish(session) -> None:
    """The notebooks' collectors in the order their cells run, each with its first item
    (None for a run of other tests between them)."""
    if _state["original"] is None:
        return
    from nbval.plugin import IPyNbFile

    order = []
    for item in session.items:
        parent = item.parent
        owner = parent if isinstance(parent, IPyNbFile) else None
        if not order or order[-1][0] is not owner:
            order.append((owner, item))
    _state["order"] = order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield
    order = _state["order"]
    parent = item.parent
    if getattr(parent, "kernel", None) is None:
        return
    at = next((i for i, (owner, _) in enumerate(order) if owner is parent), None)
    if at is None or order[at][1] is not item:
        return                           # not a notebook's first cell
    started = {kernel.first for kernel in _state["pending"]}
    for following, first in order[at + 1:at + 1 + AHEAD]:
        name = None if following is None else _kernel_name(following)
        if name is None:
            return                       # another test runs first: nothing started past it
        if first.nodeid in started:
            continue
        try:
            timeout = getattr(item.config.option, "nbval_kernel_startup_timeout", 60)
            kernel = _Pending(name, str(following.fspath.dirname), setup_environ(first),
                              timeout, warm=uses_tilinglib(following))
        except Exception:           # nbval will start it itself, and report what fails
            return
        kernel.first = first.nodeid
        _state["pending"].append(kernel)


def pytest_sessionfinish(session) -> None:
    _drop_pending()
    stopping, _state["stopping"] = _state["stopping"], []
    for thread in stopping:
        thread.join()
