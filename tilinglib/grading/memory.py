"""The peak memory of a grading run: this process and every process below it.

Input: nothing but the running process tree. Output: `TreeMemory.figures`, the peak of the
sum of the resident set sizes of this process and all its descendants (the grading processes
and the clang servers they fork), sampled every `interval` seconds from Linux's ``/proc``, and
this process's own peak (``ru_maxrss``, exact).

A sum of resident set sizes counts a page shared by two processes (a library, NumPy's code)
twice, so it is an upper bound on what the tree needs. A sampled peak can miss a spike shorter
than `interval`; every grading process is also capped by its own address-space limit
(`sandbox.Limits.memory_bytes`), and reports its exact ``ru_maxrss`` in its `Outcome`.
Where ``/proc`` is missing (macOS), only the exact figures are given.
"""

from __future__ import annotations

import os
import resource
import sys
import threading

__all__ = ["TreeMemory", "tree_rss_bytes"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _children_map() -> dict:
    """parent pid -> [child pids], from /proc/<pid>/stat of every process."""
    children: dict = {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return children
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        # the command name (field 2) is in parentheses and may hold spaces or ')'
        rest = data[data.rfind(b")") + 2:].split()
        if len(rest) > 1:
            children.setdefault(int(rest[1]), []).append(pid)
    return children


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss_bytes(root: int | None = None) -> int:
    """The sum of the resident set sizes (bytes) of process `root` (default: this one) and
    all its descendants now; 0 where /proc cannot be read."""
    root = os.getpid() if root is None else root
    children = _children_map()
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _rss(pid)
        todo.extend(children.get(pid, []))
    return total


class TreeMemory:
    """A context manager that samples `tree_rss_bytes` every `interval` seconds in a thread
    while it is open. After it closes, `figures` gives the peaks (bytes)."""

    def __init__(self, interval: float = 0.25):
        self.interval = float(interval)
        self.peak_tree = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = None
        self.available = os.path.isdir("/proc/self")

    def _sample(self) -> None:
        size = tree_rss_bytes()
        self.samples += 1
        self.peak_tree = max(self.peak_tree, size)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self):
        if self.available:
            self._sample()
            self._thread = threading.Thread(target=self._loop, name="tree-memory",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._sample()
        return False

    @property
    def figures(self) -> dict:
        """{"peak_tree_rss_bytes": the sampled peak of the tree's summed RSS (None without
        /proc), "peak_parent_rss_bytes": this process's own peak (``ru_maxrss``),
        "peak_child_rss_bytes": the largest peak of one finished child process
        (``RUSAGE_CHILDREN``), "sampled_every_s", "samples"}."""
        scale = 1 if sys.platform == "darwin" else 1024
        return {"peak_tree_rss_bytes": self.peak_tree if self.available else None,
                "peak_parent_rss_bytes":
                    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale,
                "peak_child_rss_bytes":
                    resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale,
                "sampled_every_s": self.interval, "samples": self.samples}

    def summary(self) -> str:
        """One line for stderr: the peaks in MiB."""
        f = self.figures
        tree = (f"{f['peak_tree_rss_bytes'] / 2**20:,.0f} MiB (sum of resident sets, sampled "
                f"every {self.interval:g} s)" if f["peak_tree_rss_bytes"] is not None
                else "not measured here (no /proc)")
        return (f"peak memory of the process tree {tree}; this process "
                f"{f['peak_parent_rss_bytes'] / 2**20:,.0f} MiB, the largest grading process "
                f"{f['peak_child_rss_bytes'] / 2**20:,.0f} MiB")
