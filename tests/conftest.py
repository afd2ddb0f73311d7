"""Test-wide setup: the `gpu` marker.

Tests marked ``@pytest.mark.gpu`` need PyCUDA and an NVIDIA GPU. They are skipped, with the
reason, when tilinglib's backend here is the CPU emulator. If TILINGLIB_BACKEND=pycuda is set
and no GPU can be used, the run stops with tilinglib's own explanation instead of skipping
them silently.

The disk cache (tilinglib/toolchain/disk_cache.py): unless TILINGLIB_CACHE_DIR is set, the
tests use a fresh empty folder of their own, removed at the end, so that no test depends on
what a user's cache holds; the lesson notebooks run after them in the same pytest run (their
kernels inherit the variable) find there the kernels the tests compiled.
"""

import os
import shutil
import tempfile

import pytest

if "TILINGLIB_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="tilinglib-test-cache-")
    os.environ["TILINGLIB_CACHE_DIR"] = _CACHE
else:
    _CACHE = None


def pytest_unconfigure(config):
    if _CACHE is not None:
        shutil.rmtree(_CACHE, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    from tilinglib.backend import get_backend
    from tilinglib.errors import BackendUnavailableError

    try:
        backend = get_backend()
    except BackendUnavailableError as exc:
        raise pytest.UsageError(str(exc)) from None
    if backend.name == "pycuda":
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: the backend here is the CPU emulator "
                                   f"({backend.reason})")
    for item in gpu_items:
        item.add_marker(skip)
