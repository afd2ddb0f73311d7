"""Helpers the lessons' checks share: running a student's kernel on the emulator and
explaining its failure, reading answers (one line of CUDA C, a number), comparing numbers.

Every kernel a check runs goes through the CPU emulator (`tilinglib.toolchain.backends.emulator`), whatever the
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


#: The limits a check runs a student's kernel under: far below the emulator's own (60 s,
#: 2,000,000 loop iterations), since every check launches a small N: the largest launch of a
#: check (02.2's naive kernel at N = 100) takes under 300 loop iterations, as the emulator
#: counts them (per batch of threads). A kernel that reaches a limit is stopped, within about
#: a second, and the student told where its loop is (`explain_stopped`).
CHECK_MAX_SECONDS = 5.0
CHECK_MAX_STEPS = 2_000


class KernelStopped(Wrong):
    """`Wrong` for a kernel stopped at the check's limits (no use running it again)."""


def explain_stopped(exc: Exception, source: str, started: float) -> str:
    """The message for a kernel a check stopped at its limits (a `StepBudgetExceeded`)."""
    import time

    seconds = time.monotonic() - started
    where = ""
    if getattr(exc, "line", None):
        text = cuda_line(source, exc.line)
        where = f" (look at the loop at kernel.cu:{exc.line}" + (f": {text})" if text else ")")
    return (f"the check stopped your kernel after {seconds:.1f} s: a loop that never ends?"
            f"{where}\nThe check's launch is small and allows {CHECK_MAX_STEPS:,} loop "
            f"iterations or {CHECK_MAX_SECONDS:g} s; does the loop's condition become false, "
            f"with its variable advanced (never set back) in the body?")


def launch_checked(f, source: str, *args, **kwargs):
    """Launch emulator function `f` (compiled from `source`) as a check does: under
    `CHECK_MAX_SECONDS` and `CHECK_MAX_STEPS`, with a kernel that fails to launch or run
    turned into `Wrong` (the emulator's message, the CUDA line quoted)."""
    import time

    from ..errors import StepBudgetExceeded

    started = time.monotonic()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # hazards are read from last_report
            f(*args, max_seconds=CHECK_MAX_SECONDS, max_steps=CHECK_MAX_STEPS, **kwargs)
    except StepBudgetExceeded as exc:
        raise KernelStopped(explain_stopped(exc, source, started)) from None
    except (KernelRuntimeError, LaunchError) as exc:
        raise Wrong(explain_failure(exc, source)) from None


def emulate(source: str, kernel: str, N: int, *, block, grid, options=None, seed: int = 0,
            hazards: str = "warn"):
    """Compile `source` with the emulator and launch `kernel(N, A, B, C)` on seeded N x N
    inputs; returns (function, A, B, C). C is an Out array, so elements the kernel never
    writes stay NaN. A failure to compile, launch or run becomes `Wrong` with the emulator's
    message and the CUDA line; so does a kernel stopped at the check's limits
    (`CHECK_MAX_SECONDS`, `CHECK_MAX_STEPS`), with the line of its loop."""
    from ..toolchain.backends.emulator import In, Out, SourceModule
    from ..sgemm import random_matrices

    A, B = random_matrices(N, seed)
    C = np.zeros_like(A)
    try:
        f = SourceModule(source, options=options).get_function(kernel)
    except (CompileError, LaunchError) as exc:
        raise Wrong(explain_failure(exc, source)) from None
    launch_checked(f, source, np.int32(N), In(A), In(B), Out(C), block=block, grid=grid,
                   hazards=hazards)
    return f, A, B, C


def at_each_size(run, sizes) -> list:
    """`run(size)` for each of `sizes`: its result, or the `Wrong` it raised (a kernel that
    faults at one size only is an index with a size written as a number, too)."""
    results = []
    for size in sizes:
        try:
            results.append(run(size))
        except KernelStopped:
            raise                 # a loop that never ends: the next size would wait as long
        except Wrong as exc:
            results.append(exc)
    return results


def only_at_one_size(passed: str, sizes, names: str = "N") -> str:
    """The message for an index that is right at one of the sizes a check runs (`sizes`,
    the one it passed first) and wrong at the others: numbers where `names` belong."""
    others = ", ".join(str(s) for s in sizes if s != passed)
    return (f"your index works for {passed} only (at {others} C is wrong): write it with "
            f"{names}, not numbers. The kernel is compiled once and runs at any size.")


def first_wrong(C: np.ndarray, expected: np.ndarray) -> tuple[int, int] | None:
    """(row, col) of the first element of C that differs from `expected` (NaN counts)."""
    bad = ~np.isclose(C, expected, rtol=1e-4, atol=1e-4 * float(np.abs(expected).max() or 1))
    if not bad.any():
        return None
    r, c = np.argwhere(bad)[0]
    return int(r), int(c)


# -- the types of answers: one rule for every lesson ---------------------------------------
#
# - a list is accepted wherever a tuple is asked (students write [a, b] as often as (a, b));
# - a number is int, float or a NumPy scalar, never a bool or a str;
# - where a whole number is asked, a whole-valued float (6384.0, np.float64(4.0), what / or
#   np.ceil give) counts as that whole number; a float with a fraction is rejected, saying so;
# - except in a launch's block and grid (`launch_dims`): PyCUDA and the emulator take ints
#   there, so even 4.0 is rejected, with how to get an int.


def as_tuple(answer, n: int, what: str) -> tuple:
    """`answer` (a tuple or a list of `n` items) as a tuple, or `Wrong` that says to give
    `what` (e.g. "two index expressions, (a_index, b_index)")."""
    if isinstance(answer, (tuple, list)) and len(answer) == n:
        return tuple(answer)
    got = (f"{len(answer)} items" if isinstance(answer, (tuple, list))
           else f"{type(answer).__name__} {answer!r}")
    raise Wrong(f"give {what}; got {got}.")


def require_number(value, what: str) -> float:
    """`value` as a float, or `Wrong` naming `what` when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise Wrong(f"{what} should be a number, not {type(value).__name__} {value!r}.")
    return float(value)


def require_whole(value, what: str) -> int:
    """`value` as an int: an int, a NumPy integer or a whole-valued float (6384.0 is 6384).
    `Wrong` naming `what` when it is not a number, or a float with a fraction (saying so)."""
    number = require_number(value, what)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if not np.isfinite(number) or number != int(number):
        raise Wrong(f"{what} is a whole number, and {number!r} has a fraction: count whole "
                    f"things (// divides and rounds down, (a + b - 1) // b rounds up).")
    return int(number)


def launch_dims(dims, what: str) -> tuple[int, ...]:
    """The entries of a block or grid (`what`, e.g. "grid (gx, gy)") as ints, or `Wrong`:
    a launch takes ints, so a float is rejected even when whole, saying how to get an int."""
    if isinstance(dims, list):
        dims = tuple(dims)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, float, np.integer, np.floating)):
            raise Wrong(f"{what} holds {type(d).__name__} {d!r}; its entries are whole numbers.")
    floats = [float(d) for d in dims if isinstance(d, (float, np.floating))]
    if floats and all(f == int(f) for f in floats if np.isfinite(f)):
        raise Wrong(f"{what} ({', '.join(repr(float(d)) for d in dims)}) holds floats, "
                    f"with the right values; a launch takes ints: convert to int "
                    f"(int(np.ceil(...))) or use (N + b - 1) // b, which is an int already.")
    if floats:
        raise Wrong(f"{what} ({', '.join(f'{float(d):g}' for d in dims)}) holds fractions: "
                    f"a block count is a whole number. N / b leaves a fraction; round it up "
                    f"with (N + b - 1) // b (// alone rounds down).")
    return tuple(int(d) for d in dims)


def close(a: float, b: float, rel: float = 1e-3) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-30)


@lru_cache(maxsize=None)
def compiled_shared_bytes(recipe: str, tile: int, pad: int | None = None) -> int:
    """`shared_size_bytes` of the course kernel of `recipe` (``"tiled"``, ``"tiled_db"``)
    compiled by the emulator with TILE = `tile` (and PAD = `pad` when given), in bytes."""
    from .. import recipes

    params = {"TILE": tile} if pad is None else {"TILE": tile, "PAD": pad}
    return recipes.get(recipe).compile(params, emulator=True).shared_size_bytes


def run_step(source: str, step_name: str, M: int, N: int, K: int, params: dict, *,
             seed: int):
    """Compile `source` (a ladder kernel with the student's line) with the step's -D options
    on the emulator and launch it on `sgemm.random_inputs(M, N, K, seed)`.

    Returns (function, C, expected): C (M x N float32) as computed, expected the float64
    reference product rounded to float32. `Wrong` for a kernel that does not compile, launch
    or run."""
    from .. import ladder
    from ..sgemm import random_inputs, reference_product
    from ..toolchain.backends.emulator import In, Out, SourceModule

    step = ladder.get(step_name)
    A, B = random_inputs(M, N, K, seed)
    C = np.zeros((M, N), dtype=np.float32)
    try:
        f = SourceModule(source, options=step.options(params)).get_function(step.function)
    except (CompileError, LaunchError) as exc:
        raise Wrong(explain_failure(exc, source)) from None
    block, grid = ladder.launch(step, M, N, K, params)
    launch_checked(f, source, np.int32(M), np.int32(N), np.int32(K), In(A), In(B), Out(C),
                   block=block, grid=grid, hazards="ignore")
    return f, C, reference_product(A, B).astype(np.float32)
