"""``--scheduler ADDRESS``: the same isolated grading, run on a Dask cluster's workers.

Input: the address of a running ``dask.distributed`` scheduler (``dask scheduler`` on one
machine, ``dask worker ADDRESS --nthreads 1`` on each grading machine; the ``cluster`` extra
installs both) and the submissions `cli.grade_directory` would grade. Output: the same
`Outcome` per submission as ``--jobs`` gives.

What moves where: the instructor's machine opens each submitted notebook (the checks of
`extract.open_notebook`: a regular file with one link, at most `extract.MAX_FILE_BYTES`)
and sends its bytes, its `Limits` and the contents of the ``--setup`` files to a worker;
the worker writes the bytes to a private file and runs
`sandbox.grade_notebook_in_sandbox` on it, so each notebook is still parsed, transformed
and graded in a fresh, resource-limited process of its own, started on the worker with the
worker's tilinglib. A worker needs tilinglib installed, not the submissions.
Before any grading, every worker's `shard.grader_fingerprint` must equal this machine's (a
cluster of mixed versions is refused: it could grade one notebook two ways). A task the
cluster loses (a worker gone) ends that submission as crashed, with a message saying so.
A worker runs as many submissions at once as it has threads: start workers with
``--nthreads 1`` per core to give each grading process a core, as ``--jobs`` does.
"""

from __future__ import annotations

import contextlib
import tempfile
import uuid
from pathlib import Path

from ..errors import GradingError
from .sandbox import Limits, Outcome, grade_notebook_in_sandbox

__all__ = ["DaskSandbox", "sandbox_for", "connect"]

NO_DASK = ("--scheduler needs dask.distributed on this machine and on every worker: "
           "pip install -e '.[cluster]'")
CONNECT_SECONDS = 10.0


def connect(address: str):
    """A `distributed.Client` of the scheduler at `address` with at least one worker whose
    grader fingerprint is this machine's. Raises `GradingError` when dask is missing, the
    scheduler cannot be reached in `CONNECT_SECONDS`, it has no worker, a worker's
    tilinglib or packages differ (naming the worker and what differs), or the workers'
    systems enforce different limits (`platform_support.unenforced_limits`)."""
    try:
        from distributed import Client
    except ImportError:
        raise GradingError(NO_DASK) from None
    from ..toolchain.platform_support import unenforced_limits
    from .shard import grader_fingerprint

    try:
        client = Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise GradingError(f"--scheduler {address}: no Dask scheduler answered there "
                           f"({type(exc).__name__}: {str(exc)[:200]}): start one with "
                           f"'dask scheduler' and give the address it prints") from None
    try:
        try:
            client.wait_for_workers(1, timeout=CONNECT_SECONDS)
        except (TimeoutError, OSError):
            raise GradingError(f"--scheduler {address}: the scheduler has no worker: start "
                               f"'dask worker {address} --nthreads 1' on each grading "
                               f"machine") from None
        mine = grader_fingerprint()
        try:
            fingerprints = client.run(grader_fingerprint)
        except Exception as exc:      # a worker without tilinglib cannot even unpickle it
            raise GradingError(f"--scheduler {address}: a worker could not run tilinglib "
                               f"({type(exc).__name__}: {str(exc)[:200]}): install this "
                               f"commit of tilinglib (pip install -e '.[cluster]') on every "
                               f"worker") from None
        for worker, theirs in sorted(fingerprints.items()):
            if theirs != mine:
                diff = [f"{k}: {theirs.get(k)!r} there, {mine.get(k)!r} here"
                        for k in sorted(set(mine) | set(theirs)) if theirs.get(k) != mine.get(k)]
                raise GradingError(f"--scheduler {address}: the worker {worker} grades with "
                                   f"another tilinglib or other packages ({'; '.join(diff)}): "
                                   f"install the same commit and environment on every worker")
        systems = client.run(unenforced_limits)
        if len({tuple(v) for v in systems.values()}) > 1:
            raise GradingError(f"--scheduler {address}: the workers' systems enforce different "
                               f"limits ({_systems(systems)}): "
                               f"grade on workers of one system (Linux enforces every limit)")
    except BaseException:
        client.close()
        raise
    return client


def _systems(systems: dict) -> str:
    return "; ".join(f"{w} does not enforce {', '.join(v) or 'none: all enforced'}"
                     for w, v in sorted(systems.items()))


def _grade_on_worker(assignment: str, data: bytes, name: str, max_score: float,
                     limits: Limits, setup_files: list, draw=None) -> tuple:
    """On a worker: write the --setup files' contents (name, text) and the notebook's bytes
    to a private folder, then read and grade it in a sandboxed process of this machine
    (`grade_notebook_in_sandbox`; `draw`, a `secret.Draw` or None, is passed on: the
    secret stays with the command). Returns (`Outcome`, read notes)."""
    import os

    with tempfile.TemporaryDirectory(prefix="tilinglib-setup-") as folder:
        paths = []
        for i, (setup_name, text) in enumerate(setup_files):
            path = Path(folder) / f"{i}_{Path(setup_name).name}"
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        handle, notebook = tempfile.mkstemp(suffix=".ipynb", dir=folder)   # a private copy
        with os.fdopen(handle, "wb") as f:
            f.write(data)
        fd = os.open(notebook, os.O_RDONLY)
        return grade_notebook_in_sandbox(assignment, fd, name, max_score, limits=limits,
                                         setup=tuple(paths), draw=draw)


def _read_all(fd: int) -> bytes:
    """The bytes of the open file `fd` (closed here); `open_notebook` already refused a file
    over `extract.MAX_FILE_BYTES`."""
    import os

    from .extract import MAX_FILE_BYTES

    chunks, total = [], 0
    try:
        while total <= MAX_FILE_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


class DaskSandbox:
    """Called as `grade_notebook_in_sandbox` is (see `cli.grade_submission`), it runs it on a
    worker of `client` and waits for the (`Outcome`, read notes). Thread-safe: `cli.grade_directory` calls it from
    several threads, each waiting on one submission."""

    def __init__(self, client):
        from ..toolchain.platform_support import caveats, unenforced_limits

        self.client = client
        self._setup_cache: dict = {}
        # what the workers cannot enforce (`connect` made sure they agree): for the settings
        # block and the caveats printed, instead of this machine's
        self.unenforced = next(iter(client.run(unenforced_limits).values()), [])
        self.caveats = caveats(self.unenforced)

    def _setup(self, setup) -> list:
        key = tuple(setup)
        if key not in self._setup_cache:
            self._setup_cache[key] = [(p, Path(p).read_text(encoding="utf-8")) for p in setup]
        return self._setup_cache[key]

    def __call__(self, assignment, fd, name, max_score, *, limits: Limits = Limits(),
                 setup=(), draw=None) -> tuple:
        data = _read_all(fd)
        future = self.client.submit(_grade_on_worker, assignment, data, str(name),
                                    float(max_score), limits, self._setup(setup), draw,
                                    key=f"tilinglib-grade-{uuid.uuid4().hex}", pure=False,
                                    retries=0)
        try:
            return future.result()
        except Exception as exc:      # the cluster's failure, not the submission's
            return Outcome("crashed", 0.0, float(max_score),
                           message=f"the Dask cluster did not grade this submission "
                                   f"({type(exc).__name__}: {str(exc)[:300]}); grade it "
                                   f"again"), []
        finally:
            future.release()


@contextlib.contextmanager
def sandbox_for(scheduler, jobs):
    """(sandbox, jobs) for `cli.grade_directory`: (None, `jobs`) without a `scheduler`; with
    one, a `DaskSandbox` on it and, unless `jobs` is given, twice the cluster's threads
    (submissions read here and waiting at once, so that no worker waits for the next). The
    client is closed on leaving. Raises `GradingError` (see `connect`)."""
    if not scheduler:
        yield None, jobs
        return
    client = connect(scheduler)
    try:
        threads = sum(client.nthreads().values()) or 1
        yield DaskSandbox(client), jobs or 2 * threads
    finally:
        client.close()
