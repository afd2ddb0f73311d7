"""tilinglib: the library behind the course on shared-memory tiling.

    import tilinglib as tl
    tl.backend_name()                                   # "pycuda" or "emulator"
    mod = tl.SourceModule(tl.kernels.load("sgemm_tiled"), options=["-DTILE=32"])
    f = mod.get_function("sgemmTiled")
    f(np.int32(N), tl.In(A), tl.In(B), tl.Out(C), block=(32, 32, 1), grid=(N // 32, N // 32))
    tl.time_kernel(f, np.int32(N), tl.In(A), tl.In(B), tl.Out(C),
                   block=(32, 32, 1), grid=(N // 32, N // 32), flops=2 * N**3)

`SourceModule`, `In`, `Out` and `InOut` belong to the backend, chosen on first use (see
`tilinglib.backend`): PyCUDA's own on a GPU, the CPU emulator's elsewhere. Importing
tilinglib does no work: nothing opens a GPU or imports PyCUDA until one of them is used.
"""

from __future__ import annotations

from . import errors, kernels
from .backend import backend_name
from .launch import grid_for
from .timing import Timing, gbps, gflops, time_kernel

__all__ = ["backend_name", "SourceModule", "In", "Out", "InOut", "grid_for", "time_kernel",
           "Timing", "gflops", "gbps", "errors", "kernels", "find_race_failure"]

_BACKEND_NAMES = ("SourceModule", "In", "Out", "InOut")
# Submodules reachable as tl.<name> without an import of their own (imported on first use).
_LAZY_SUBMODULES = ("roofline", "occupancy", "launch", "emulator", "reference", "sgemm",
                    "widgets", "plots", "banks", "sweep", "tileloop", "exercises", "grading",
                    "ladder", "tile_choice")


def __getattr__(name: str):
    # tl.SourceModule, tl.In, ...: resolved through the backend on first use.
    if name in _BACKEND_NAMES:
        from .backend import get_backend

        return getattr(get_backend(), name)
    if name == "find_race_failure":      # the emulator's race search (race_search.py)
        from .toolchain.runtime.race_search import find_race_failure

        return find_race_failure
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'tilinglib' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
