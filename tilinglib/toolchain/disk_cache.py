"""A cache on disk, shared by processes, for results that are pure functions of their key.

What may go in: a value that depends on nothing but its key and tilinglib's own source (the
front end's AST of a preprocessed text, an emulator launch's counters), so that a second
notebook kernel, a second run of the lessons, or the lessons after the tests find it made.
Entries are pickles under the folder `cache_dir()`, one file each, in a subfolder named by
`fingerprint()`: the SHA-256 of every source file of the package (and of Python's version),
so an entry is never read by another tilinglib, edited or released.

`TILINGLIB_CACHE_DIR` chooses the folder; empty, ``0`` or ``off`` turns the cache off (the
grader's sandbox does: it never reads a pickle it did not make). The default is
``$XDG_CACHE_HOME/tilinglib`` or ``~/.cache/tilinglib``. A folder that cannot be made or
written turns the cache off for the process, silently; an entry that cannot be read or
unpickled (a partial write, a corrupted file) is a miss. Writes go through a temporary file
and a rename, so a reader never sees half an entry.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path

_OFF = {"", "0", "off", "false", "no"}
_state: dict = {}       # "fingerprint", and per folder: the subfolder, or None when unusable


def cache_dir() -> Path | None:
    """The cache's folder from `TILINGLIB_CACHE_DIR` (default under the user's cache
    folder), or None when it is turned off."""
    value = os.environ.get("TILINGLIB_CACHE_DIR")
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tilinglib"


def fingerprint() -> str:
    """SHA-256 (hex) of Python's version and every .py and .cu file of the tilinglib package
    (their paths and bytes), computed once per process."""
    if "fingerprint" not in _state:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256(sys.version.encode())
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".cu")):
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(path.read_bytes() + b"\0")
        _state["fingerprint"] = h.hexdigest()
    return _state["fingerprint"]


def _folder(namespace: str) -> Path | None:
    base = cache_dir()
    if base is None:
        return None
    folder = base / fingerprint()[:32] / namespace
    key = str(folder)
    if key not in _state:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            ok = os.access(folder, os.W_OK | os.X_OK)
        except OSError:
            ok = False
        _state[key] = folder if ok else None
    return _state[key]


def key_of(*parts) -> str:
    """SHA-256 (hex) of `parts` (str, bytes, numbers, tuples of them), as a file name."""
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def get(namespace: str, key: str):
    """The value stored under `key` in `namespace`, or None (a miss: nothing stored, the
    cache off, or an entry that cannot be read)."""
    folder = _folder(namespace)
    if folder is None:
        return None
    try:
        with open(folder / key, "rb") as f:
            return pickle.load(f)
    except Exception:       # missing, truncated, corrupted or of a removed class: a miss
        return None


def put(namespace: str, key: str, value) -> None:
    """Store `value` under `key` in `namespace` (nothing when the cache is off or the
    folder cannot be written, or the value cannot be pickled)."""
    folder = _folder(namespace)
    if folder is None:
        return
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, folder / key)
        except BaseException:
            os.unlink(tmp)
            raise
    except Exception:       # a full disk, a folder removed meanwhile, a value not picklable
        return
