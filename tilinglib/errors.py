"""Every exception tilinglib raises, in one place.

Messages follow compute-sanitizer's shape: what happened, where in the student's source,
which thread and block, and what to change. All classes derive from `TilingLibError`, so a
notebook can catch the whole family with one `except`.
"""

from __future__ import annotations


class TilingLibError(Exception):
    """Base class of every tilinglib error."""


class CompileError(TilingLibError):
    """The kernel source does not compile.

    `line` and `column` are 1-based positions in the student's own source (the text passed
    to `SourceModule`), or None where the compiler gave none.
    """

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None,
                 source_line: str | None = None):
        self.line = line
        self.column = column
        self.source_line = source_line
        text = message
        if source_line is not None and line is not None:
            caret = ""
            if column:
                caret = "\n" + " " * (len(f"{line:5d} | ") + column - 1) + "^"
            text = f"{message}\n{line:5d} | {source_line.rstrip()}{caret}"
        super().__init__(text)


class UnsupportedFeatureError(CompileError):
    """Valid CUDA C that the CPU emulator does not execute (the message names the construct)."""


class KernelNotFoundError(TilingLibError, LookupError):
    """`get_function(name)` for a name the module does not define as a kernel."""


class LaunchError(TilingLibError, ValueError):
    """A launch configuration (block, grid, shared memory) that a GPU would refuse."""


class KernelArgumentError(TilingLibError, TypeError):
    """A kernel argument of the wrong type, dtype, or memory layout."""


class KernelRuntimeError(TilingLibError):
    """A fault inside a running kernel, found by the emulator.

    Attributes name the place: `kernel`, `line` (student's source line), `block` and
    `thread` (3-tuples, as CUDA prints them) where known.
    """

    def __init__(self, message: str, *, kernel: str | None = None, line: int | None = None,
                 block: tuple | None = None, thread: tuple | None = None):
        self.kernel = kernel
        self.line = line
        self.block = block
        self.thread = thread
        super().__init__(message)


class MemoryAccessError(KernelRuntimeError):
    """An out-of-bounds or misaligned load or store."""


class BarrierError(KernelRuntimeError):
    """`__syncthreads()` reached by only part of a thread block."""


class RaceError(KernelRuntimeError):
    """A shared-memory hazard between two barriers (raised when hazards="raise")."""


class StepBudgetExceeded(KernelRuntimeError):
    """A kernel ran past the emulator's step budget (a runaway loop, or a launch too big)."""


class ContextLostError(TilingLibError):
    """The CUDA context hit a sticky error; only restarting the Python process recovers."""


class BackendUnavailableError(TilingLibError):
    """The backend asked for (TILINGLIB_BACKEND or an argument) cannot be used here."""


class GradingError(TilingLibError):
    """`python -m tilinglib.grading` cannot do what it was asked (a folder that is not
    nbgrader's submitted/ layout, an unknown assignment, a gradebook without the assignment);
    the message says what to change. A faulty *submission* never raises: it gets a status."""
