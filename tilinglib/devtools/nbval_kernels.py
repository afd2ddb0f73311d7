"""A pytest plugin that runs the notebooks nbval checks two or more at a time, one kernel
each, and has nbval check every cell's outputs as it does (pyproject.toml loads it:
``-p tilinglib.devtools.nbval_kernels`` in addopts).

Why: nbval runs the notebooks one after the other, each in a fresh kernel it starts and
waits for, and sends a cell only when the one before has ended. One kernel keeps one CPU
busy; on a machine with two, the other waits. The eight lessons cost about 35 s of CPU
from a cold cache: one at a time they took 25-33 s on 2 CPUs; run ahead, about 20 s.

What, with two CPUs or more (`workers`: two notebooks per CPU, at most 8;
``TILINGLIB_NBVAL_AHEAD=N`` sets N, and 0 or 1 turns the run ahead off):

- When a notebook's first cell is set up, its kernel and those of the notebooks after it
  (up to the next test that is not a notebook's cell) are started as nbval would start
  them: the kernel's name, the notebook's folder as working directory, ``os.environ`` as it
  will be at that notebook's first setup (pytest's ``PYTEST_CURRENT_TEST`` included),
  stderr to os.devnull. At most `workers` run at once, and at most `MAX_UNTAKEN` (or
  `workers`) wait to be taken; the notebook nbval needs now is started first, then the
  one with the most cells (the longest, as a rule).
- For each, a thread connects a client, waits until the kernel is ready, and sends the
  notebook's cells as nbval's RunningKernel sends them (``execute(source,
  store_history=False, allow_stdin=False, stop_on_error=False)``; NBVAL_SKIP cells not
  sent), each once the one before has its reply and its idle status. It keeps every
  message the kernel sends, in order.
- nbval's kernel start for that notebook (``nbval.kernel.start_new_kernel``) then gets the
  kernel's manager and a `Replay` client: nbval sends its cells and reads their messages
  as before, and the client answers from what the kernel sent, after checking that the
  cell is the one run ahead there. What nbval compares, the failures and the tracebacks
  are the kernel's own; a cell that runs past ``--nbval-cell-timeout`` is interrupted by
  nbval as before (its clock starts when nbval sends the cell, so no earlier).

Each notebook still gets a kernel of its own, never used before. A kernel is taken only
if the kernel name, the working directory and ``os.environ`` are then those it was
started with; otherwise it is shut down and nbval starts one itself. With coverage
(``--cov``), which runs code of its own in each kernel, or with one worker, nothing runs
ahead: the next `AHEAD` (2) notebooks' kernels are only started, and one for a notebook
that imports tilinglib is warmed (kernel_warmup.py: the lesson stack imported and
matplotlib's first figure drawn, as one silent request without history; it binds no name,
keeps no figure).

A notebook's kernel is stopped as nbval stops it (the run ahead told to send nothing
more, then ``shutdown_kernel(now=True)``: killed); only the wait for its exit is left to a
thread, which the session's end joins, as it shuts down every kernel started and never
taken. Nothing is done where nbval is not installed or no notebook is collected.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from queue import Empty

import pytest

AHEAD = 2                   # notebooks whose kernels are started ahead of the one running
MAX_UNTAKEN = 4             # kernels run ahead and not yet taken by nbval, at most
_state: dict = {"order": [], "pending": [], "original": None, "stopping": [], "current": None,
                "workers": 0}


def workers() -> int:
    """How many notebooks run at once: TILINGLIB_NBVAL_AHEAD when it is a number (0 or 1:
    none run ahead), else two per CPU, at most 8; 1 on one CPU."""
    value = os.environ.get("TILINGLIB_NBVAL_AHEAD", "")
    if value.isdigit():
        return max(1, int(value))
    cpus = os.cpu_count() or 1
    return 1 if cpus < 2 else min(8, 2 * cpus)


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
    """A kernel process started for one notebook and not yet taken.

    `sources` None: the kernel is only started (and warmed with `warm`). A list: its cells,
    run ahead: the thread sends them one at a time, as nbval would, and keeps every message
    the kernel sends on the shell and IOPub channels, in order, for `Replay`."""

    def __init__(self, kernel_name: str, cwd: str, environ: dict, startup_timeout: float,
                 warm: bool = False, sources: list | None = None):
        from nbval.kernel import KernelManager, NbvalKernelspecManager

        self.key = (kernel_name, cwd)
        self.warm = warm
        self.sources = sources
        self.first = None               # the node id of its notebook's first cell
        self.index = None               # its notebook's place in the session's order
        self.environ = environ
        self.km = KernelManager(kernel_name=kernel_name,
                                kernel_spec_manager=NbvalKernelspecManager())
        self.km.start_kernel(stderr=open(os.devnull, "w"), cwd=cwd, env=dict(environ))
        self.kc = None
        self.failed = False
        # what the run ahead recorded, guarded by `cond`
        self.cond = threading.Condition()
        self.queues = {"shell": collections.deque(), "iopub": collections.deque()}
        self.sent: list = []            # (source, msg_id) of each cell sent
        self.info = None                # (msg_id, its shell reply, its iopub messages)
        self.done = False               # nothing more will be recorded
        self.abandoned = False
        # the client's connection and its wait for the kernel (kernel_info, then 0.2 s of
        # jupyter_client's IOPub flush), in a thread; the client is handed to the main
        # thread only after it ends (join)
        self.thread = threading.Thread(target=self._connect, args=(startup_timeout,),
                                       name="tilinglib-nbval-kernel", daemon=True)
        self.thread.start()

    @property
    def ahead(self) -> bool:
        return self.sources is not None

    def _connect(self, startup_timeout: float) -> None:
        try:
            kc = self.km.client()
            kc.start_channels()
            self.kc = kc
            kc.wait_for_ready(timeout=startup_timeout)
        except BaseException:
            self.failed = True
            self._finish()
            return
        if self.ahead:
            try:
                self._run_ahead(kc)
            except BaseException:       # what was recorded stands; nbval sees the rest fail
                pass
            finally:
                self._finish()
                try:
                    kc.stop_channels()
                except Exception:
                    pass
            return
        if self.warm:
            try:
                _warm(kc, startup_timeout, stop=lambda: self.abandoned)
            except BaseException:       # the kernel is still as nbval would start it
                pass

    def _finish(self) -> None:
        with self.cond:
            self.done = True
            self.cond.notify_all()

    def _run_ahead(self, kc) -> None:
        """The cells sent as nbval's RunningKernel sends them (execute_cell_input), each
        once the one before has its reply and its idle status; a kernel_info request first,
        recorded apart for nbval's check that IOPub is up."""
        info = kc.kernel_info()
        shell, iopub = [], []
        if not self._pump(kc, info, shell.append, iopub.append):
            return
        with self.cond:
            self.info = (info, shell, iopub)
            self.cond.notify_all()
        for source in self.sources:
            if self.abandoned:
                return
            msg_id = kc.execute(source, store_history=False, allow_stdin=False,
                                stop_on_error=False)
            with self.cond:
                self.sent.append((source, msg_id))
                self.cond.notify_all()
            if not self._pump(kc, msg_id, self._keeper("shell"), self._keeper("iopub")):
                return

    def _keeper(self, stream: str):
        queue = self.queues[stream]

        def keep(msg) -> None:
            with self.cond:
                queue.append(msg)
                self.cond.notify_all()
        return keep

    def _pump(self, kc, msg_id: str, shell, iopub) -> bool:
        """Keep the kernel's messages until request `msg_id` has its shell reply and its
        idle status; False if the kernel died or the run was abandoned first."""
        replied = idle = False
        while not (replied and idle):
            if self.abandoned:
                return False
            got = False
            try:
                msg = kc.get_iopub_msg(timeout=0.05)
            except Empty:
                pass
            else:
                got = True
                iopub(msg)
                idle = idle or (msg["parent_header"].get("msg_id") == msg_id
                                and msg["msg_type"] == "status"
                                and msg["content"].get("execution_state") == "idle")
            try:
                msg = kc.get_shell_msg(timeout=0)
            except Empty:
                pass
            else:
                got = True
                shell(msg)
                replied = replied or msg["parent_header"].get("msg_id") == msg_id
            if not got and not self.km.is_alive():
                return False
        return True

    def take(self, stream: str, timeout: float | None):
        """The next recorded message on `stream`, waiting up to `timeout` seconds (None:
        without end) for the run ahead to record it; raises queue.Empty after that, or at
        once when the run has ended with nothing more. While it waits, the next notebooks
        are started as the workers allow (`_top_up`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        queue = self.queues[stream]
        while True:
            with self.cond:
                if not queue and not self.done:
                    wait = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
                    if wait > 0:
                        self.cond.wait(wait)
                if queue:
                    return queue.popleft()
                if self.done:
                    raise Empty
            if deadline is not None and time.monotonic() >= deadline:
                raise Empty
            _top_up()

    def wait_for(self, ready, timeout: float | None = None) -> bool:
        """Wait (starting next notebooks meanwhile) until `ready()` holds or the run ends."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self.cond:
                if ready() or self.done:
                    return ready()
                self.cond.wait(0.1)
            if deadline is not None and time.monotonic() >= deadline:
                return False
            _top_up()

    def client(self):
        """The connected client of a ready kernel (a `Replay` of its recording when it runs
        ahead), or None (its channels stopped) if it did not get ready."""
        if self.ahead:
            self.wait_for(lambda: self.info is not None or self.failed)
            return Replay(self) if self.info is not None else None
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

    def abandon(self) -> None:
        with self.cond:
            self.abandoned = True
            self.cond.notify_all()

    def shutdown(self) -> None:
        self.abandon()
        try:
            self.km.shutdown_kernel(now=True)
        except Exception:                       # already gone: nothing to stop
            pass
        self.thread.join()
        if not self.ahead and self.kc is not None:
            self.kc.stop_channels()
            self.kc = None


class Replay:
    """The client nbval's RunningKernel gets for a notebook run ahead: it answers the calls
    nbval makes (kernel_info, execute, get_shell_msg, get_iopub_msg, stop_channels) from
    the recording, the real messages of the real kernel, in the order the kernel sent them.

    `execute` checks that nbval sends the cell that was run ahead at that place, with the
    arguments nbval's execute_cell_input uses, and gives that request's msg_id: the outputs
    nbval then reads and compares are that execution's. Anything else is a RuntimeError
    (nothing can be run again in that kernel)."""

    def __init__(self, pending: _Pending):
        self.pending = pending
        self.cells = 0
        self.infos = 0

    def kernel_info(self) -> str:
        p = self.pending
        msg_id, shell, iopub = p.info
        with p.cond:                    # (asked again: the same answer again, read first)
            p.queues["shell"].extendleft(reversed(shell))
            p.queues["iopub"].extendleft(reversed(iopub))
        self.infos += 1
        return msg_id

    def execute(self, code, silent=False, store_history=True, user_expressions=None,
                allow_stdin=None, stop_on_error=True):
        p, k = self.pending, self.cells
        p.wait_for(lambda: len(p.sent) > k)
        if (k >= len(p.sent) or p.sent[k][0] != code or silent or store_history
                or allow_stdin or stop_on_error or user_expressions):
            raise RuntimeError(
                "tilinglib.devtools.nbval_kernels: nbval asked to run a cell other than the "
                f"one run ahead as cell {k} of this notebook; run pytest with "
                "TILINGLIB_NBVAL_AHEAD=0 (each cell run when nbval asks) and report this")
        self.cells += 1
        return p.sent[k][1]

    def get_shell_msg(self, timeout=None, block=True):
        return self.pending.take("shell", timeout if block else 0)

    def get_iopub_msg(self, timeout=None, block=True):
        return self.pending.take("iopub", timeout if block else 0)

    def stop_channels(self) -> None:
        self.pending.abandon()


WARM_UP = "__import__('tilinglib.devtools.kernel_warmup').devtools.kernel_warmup.warm_up()"


def _warm(kc, timeout: float, stop=lambda: False) -> None:
    """Run `WARM_UP` (tilinglib/devtools/kernel_warmup.py) in the kernel as a silent request,
    with no history, and wait for its reply and for the kernel to be idle again, reading
    only that request's messages; give up after `timeout` seconds or once `stop()` holds."""
    msg_id = kc.execute(WARM_UP, silent=True, store_history=False, allow_stdin=False)
    deadline = time.monotonic() + timeout
    for channel, done in ((kc.get_shell_msg, lambda m: m["msg_type"] == "execute_reply"),
                          (kc.get_iopub_msg, lambda m: m["msg_type"] == "status"
                           and m["content"].get("execution_state") == "idle")):
        while True:
            if stop() or time.monotonic() > deadline:
                return
            try:
                msg = channel(timeout=0.1)
            except Empty:
                continue
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
    pending = next((kernel for kernel in waiting if kernel.matches(kernel_name, kwargs)), None)
    # this notebook's kernel is taken; those started for the notebooks before it were not
    # taken (another nbval start ran there): stopped
    here = pending.index if pending is not None else _state["current"]
    stale = [kernel for kernel in waiting if kernel is not pending and here is not None
             and kernel.index < here]
    _state["pending"] = [kernel for kernel in waiting
                         if kernel is not pending and kernel not in stale]
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
    if pending.ahead:
        _state["taken"] = pending
    return pending.km, kc


def _shutdown(km) -> None:
    try:
        km.shutdown_kernel(now=True)
    except Exception:                           # already gone: nothing to stop
        pass


def stop(self) -> None:
    """nbval.kernel.RunningKernel.stop: the client's channels stopped (a run ahead told to
    send nothing more), then the kernel killed and its files removed
    (``shutdown_kernel(now=True)``, as nbval does) in a thread, which the session's end
    waits for."""
    self.kc.stop_channels()
    km = self.km
    del self.km
    pending = getattr(self.kc, "pending", None)

    def finish():
        _shutdown(km)
        if pending is not None:
            pending.thread.join()
    thread = threading.Thread(target=finish, name="tilinglib-nbval-stop", daemon=True)
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
    _state.update(order=[], pending=[], current=None, taken=None, started=set())
    if _state["original"] is None:
        _state["original"] = nbval.kernel.start_new_kernel
        nbval.kernel.start_new_kernel = start_new_kernel
        nbval.kernel.RunningKernel.stop = stop
    # coverage runs code of its own in each kernel: nothing is run ahead then
    _state["workers"] = 1 if getattr(config.option, "cov_source", None) else workers()


def pytest_collection_finish(session) -> None:
    """The notebooks' collectors in the order their cells run, each with its first item and
    its items (None for a run of other tests between them)."""
    if _state["original"] is None:
        return
    from nbval.plugin import IPyNbFile

    order = []
    for item in session.items:
        parent = item.parent
        owner = parent if isinstance(parent, IPyNbFile) else None
        if not order or order[-1][0] is not owner:
            order.append((owner, item, []))
        order[-1][2].append(item)
    _state["order"] = order


def cell_sources(items) -> list | None:
    """The sources nbval sends, in order, for a notebook's `items` (a cell marked
    NBVAL_SKIP is not sent); None if an item is not a cell nbval runs as expected."""
    sources = []
    for item in items:
        cell, options = getattr(item, "cell", None), getattr(item, "options", None)
        if cell is None or not isinstance(options, dict):
            return None
        if not options.get("skip"):           # (a defaultdict(bool): no key is False)
            sources.append(cell.source)
    return sources


def _start(at: int, ahead: bool) -> bool:
    """Start the kernel of notebook `order[at]` (run ahead or only started); False where it
    cannot be (another test there, or no kernel name)."""
    following, first, items = _state["order"][at]
    name = None if following is None else _kernel_name(following)
    if name is None:
        return False
    sources = cell_sources(items) if ahead else None
    try:
        timeout = getattr(first.config.option, "nbval_kernel_startup_timeout", 60)
        kernel = _Pending(name, str(following.fspath.dirname), setup_environ(first), timeout,
                          warm=sources is None and uses_tilinglib(following), sources=sources)
    except Exception:               # nbval will start it itself, and report what fails
        return False
    kernel.first = first.nodeid
    kernel.index = at
    _state["pending"].append(kernel)
    return True


def _top_up() -> None:
    """Run notebooks ahead while fewer than `workers` run and fewer than `MAX_UNTAKEN` (or
    `workers`) wait to be taken, among those from the one nbval runs now to the next other
    test: the one nbval needs first, then the one with the most cells (the longest to run,
    as a rule: started first, it ends the session no later than the others)."""
    at = _state["current"]
    if at is None or _state["workers"] < 2:
        return
    pending, order, started = _state["pending"], _state["order"], _state["started"]
    running = sum(1 for p in pending if p.ahead and not p.done)
    if _state.get("taken") is not None and not _state["taken"].done:
        running += 1                    # the notebook nbval reads now, still running
    end = next((i for i in range(at, len(order)) if order[i][0] is None), len(order))
    while True:
        waiting = [i for i in range(at, end) if i not in started]
        if not waiting:
            return
        if at in waiting:                   # the one nbval needs now: whatever runs
            following = at
        elif running < _state["workers"] and len(pending) < max(MAX_UNTAKEN, _state["workers"]):
            following = max(waiting, key=lambda i: (len(order[i][2]), -i))
        else:
            return
        started.add(following)
        if not _start(following, ahead=True):
            return
        running += 1


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    order = _state["order"]
    parent = item.parent
    at = next((i for i, (owner, first, _) in enumerate(order)
               if owner is parent and first is item), None)
    if at is not None:
        _state["current"] = at
        # a notebook's first cell: it and the next ones run ahead (this one's kernel is
        # taken by nbval's start, in the setup below)
        _top_up()
    yield
    if at is None or _state["workers"] >= 2 or getattr(parent, "kernel", None) is None:
        return
    started = {kernel.first for kernel in _state["pending"]}
    for index in range(at + 1, min(len(order), at + 1 + AHEAD)):
        if order[index][1].nodeid in started:
            continue
        if not _start(index, ahead=False):
            return                       # another test runs first: nothing started past it


def pytest_runtest_teardown(item):
    _top_up()


def pytest_sessionfinish(session) -> None:
    _drop_pending()
    stopping, _state["stopping"] = _state["stopping"], []
    for thread in stopping:
        thread.join()
