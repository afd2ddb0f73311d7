"""Helpers the lessons' checks share: running a student's kernel on the emulator and
explaining its failure, reading answers (one line of CUDA C, a number), comparing numbers.

Every kernel a check runs goes through the CPU emulator (`tilinglib.emulator`), whatever the
notebook's backend, so counters and diagnostics are the same on every machine.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np

from ..errors import CompileError, KernelRuntimeError, LaunchError
from . import Wrong


def cuda_line(source: str, line: int | None) -> str | None:
    """Line `line` (1-based) of `source`, stripped, or None when there is no such line."""
    lines = source.splitlines()
    if line is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1].strip()


def explain_failure(exc: Exception, source: str) -> str:
    """A few lines for a kernel that did not compile, launch or run: the emulator's message,
    with the CUDA line it names quoted (when the message does not quote it already)."""
    name = type(exc).__name__
    message = str(exc).strip()
    if isinstance(exc, CompileError):
        return f"your kernel does not compile ({name}):\n{message}"
    if isinstance(exc, KernelRuntimeError):
        text = cuda_line(source, exc.line)
        head, _, rest = message.partition("\n")
        if text and text not in message:
            head = f"{head}\n  kernel.cu:{exc.line}: {text}"
        return f"your kernel stopped with a {name}:\n{head}" + (f"\n{rest}" if rest else "")
    return f"{name}: {message}"


def substitute(source: str, old: str, new: str) -> str:
    """`source` with the one occurrence of `old` replaced by `new` (same line count)."""
    if source.count(old) != 1:
        raise RuntimeError(f"the lesson's kernel no longer contains {old!r} once")
    return source.replace(old, new)


def one_line(answer, what: str) -> str:
    """`answer` as a one-line str of CUDA C, or Wrong saying what to give instead."""
    if not isinstance(answer, str):
        raise Wrong(f"{what} must be a str of CUDA C in quotes, like \"row * N + k\"; "
                    f"got {type(answer).__name__} {answer!r}.")
    if "\n" in answer.strip():
        raise Wrong(f"{what} must fit on one line: it replaces one line of the kernel.")
    return answer.strip()


def emulate(source: str, kernel: str, N: int, *, block, grid, options=None, seed: int = 0,
            hazards: str = "warn"):
    """Compile `source` with the emulator and launch `kernel(N, A, B, C)` on seeded N x N
    inputs; returns (function, A, B, C). C is an Out array, so elements the kernel never
    writes stay NaN. A failure to compile, launch or run becomes `Wrong` with the emulator's
    message and the CUDA line."""
    from ..emulator import In, Out, SourceModule
    from ..sgemm import random_matrices

    A, B = random_matrices(N, seed)
    C = np.zeros_like(A)
    try:
        f = SourceModule(source, options=options).get_function(kernel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # hazards are read from last_report
            f(np.int32(N), In(A), In(B), Out(C), block=block, grid=grid, hazards=hazards)
    except (CompileError, KernelRuntimeError, LaunchError) as exc:
        raise Wrong(explain_failure(exc, source)) from None
    return f, A, B, C


def first_wrong(C: np.ndarray, expected: np.ndarray) -> tuple[int, int] | None:
    """(row, col) of the first element of C that differs from `expected` (NaN counts)."""
    bad = ~np.isclose(C, expected, rtol=1e-4, atol=1e-4 * float(np.abs(expected).max() or 1))
    if not bad.any():
        return None
    r, c = np.argwhere(bad)[0]
    return int(r), int(c)


def require_number(value, what: str) -> float:
    """`value` as a float, or `Wrong` naming `what` when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise Wrong(f"{what} should be a number, not {type(value).__name__} {value!r}.")
    return float(value)


def close(a: float, b: float, rel: float = 1e-3) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-30)


@lru_cache(maxsize=None)
def compiled_shared_bytes(kernel_file: str, kernel: str, tile: int, pad: int | None = None) -> int:
    """`shared_size_bytes` of a course kernel compiled by the emulator with -DTILE (-DPAD)."""
    from .. import kernels
    from ..emulator import SourceModule

    options = [f"-DTILE={tile}"] + ([] if pad is None else [f"-DPAD={pad}"])
    f = SourceModule(kernels.load(kernel_file), options=options).get_function(kernel)
    return f.shared_size_bytes
