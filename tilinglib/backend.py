"""Which backend runs the kernels: PyCUDA on an NVIDIA GPU, or the CPU emulator.

The choice is made once per Python process, the first time something needs it (never at
import), and kept: re-running notebook cells does not re-open the GPU.

- ``TILINGLIB_BACKEND=pycuda``: PyCUDA, or `BackendUnavailableError` saying why not.
- ``TILINGLIB_BACKEND=emulator``: the CPU emulator, even on a machine with a GPU.
- unset (or empty): PyCUDA when it imports and a CUDA device can be opened, else the emulator.

On the PyCUDA backend the device's primary context is used, as ``import pycuda.autoprimaryctx``
does (the context the CUDA runtime and other libraries share), rather than a new context
of tilinglib's own.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Callable

from .errors import BackendUnavailableError
from .launch import DeviceLimits

__all__ = ["ENV_VAR", "BACKENDS", "Backend", "backend_name", "get_backend"]

ENV_VAR = "TILINGLIB_BACKEND"
BACKENDS = ("pycuda", "emulator")

_HOW_TO_GET_A_GPU = (
    "To use a GPU: on a machine with an NVIDIA GPU, its driver and the CUDA toolkit (nvcc), "
    "run `pip install -e \".[gpu]\"` in the course folder. To use the CPU emulator instead, "
    f"unset {ENV_VAR} or set {ENV_VAR}=emulator, then restart the notebook kernel.")


@dataclass(frozen=True)
class Backend:
    """The chosen backend's objects: what `tl.SourceModule`, `tl.In`, ... resolve to.

    `name` is "pycuda" or "emulator"; `device_name` the GPU's name as the driver reports it
    ("CPU emulator" otherwise); `limits` the device's `DeviceLimits`; `reason` says why this
    backend was chosen (for `tl.backend_name()`'s readers and for error messages).
    """

    name: str
    SourceModule: Any
    In: Any
    Out: Any
    InOut: Any
    device_name: str
    limits: DeviceLimits
    reason: str


def _requested() -> str | None:
    """The backend named by TILINGLIB_BACKEND, None when unset or empty."""
    raw = os.environ.get(ENV_VAR, "")
    value = raw.strip().lower()
    if not value:
        return None
    if value not in BACKENDS:
        raise BackendUnavailableError(
            f"{ENV_VAR}={raw!r} is not a backend: set it to 'pycuda' or 'emulator', or unset it "
            f"to let tilinglib choose (PyCUDA when a GPU can be opened, else the emulator).")
    return value


def _probe_pycuda() -> Backend:
    """Open the GPU through PyCUDA; raises whatever stops it (ImportError, pycuda errors)."""
    from .toolchain.backends import pycuda as _pycuda

    return Backend("pycuda", reason="", **_pycuda.backend_fields())


def _emulator() -> Backend:
    from .toolchain.backends import emulator

    return Backend("emulator", emulator.SourceModule, emulator.In, emulator.Out,
                   emulator.InOut, "CPU emulator", DeviceLimits(), "")


def _explain(exc: BaseException) -> str:
    if isinstance(exc, ImportError) and "pycuda" in str(exc).lower():
        return f"PyCUDA is not installed ({type(exc).__name__}: {exc})"
    return f"no CUDA device could be opened through PyCUDA ({type(exc).__name__}: {exc})"


def _decide(requested: str | None, probe: Callable[[], Backend],
            emulator: Callable[[], Backend]) -> Backend:
    """Pick a backend: the pure decision, with the two ways to build one passed in."""
    if requested == "emulator":
        backend = emulator()
        return _with_reason(backend, f"{ENV_VAR}=emulator")
    try:
        backend = probe()
    except Exception as exc:  # any failure to open the GPU means: no GPU backend
        why = _explain(exc)
        if requested == "pycuda":
            raise BackendUnavailableError(
                f"{ENV_VAR}=pycuda, but {why}. {_HOW_TO_GET_A_GPU}") from exc
        return _with_reason(emulator(), why)
    reason = f"{ENV_VAR}=pycuda" if requested == "pycuda" else "PyCUDA opened a CUDA device"
    return _with_reason(backend, reason)


def _with_reason(backend: Backend, reason: str) -> Backend:
    from dataclasses import replace

    return replace(backend, reason=reason)


@functools.lru_cache(maxsize=1)
def get_backend() -> Backend:
    """The process's backend, chosen on the first call and kept (see the module docstring).

    Raises `BackendUnavailableError` when TILINGLIB_BACKEND has another value than
    "pycuda" or "emulator", or is "pycuda" and no GPU can be used; nothing is cached then,
    so a corrected setting takes effect on the next call.
    """
    return _decide(_requested(), _probe_pycuda, _emulator)


def backend_name() -> str:
    """"pycuda" or "emulator": the backend that `tl.SourceModule` and friends use here.

    Chooses it on first use (see the module docstring); raises `BackendUnavailableError`
    as `get_backend` does.
    """
    return get_backend().name
