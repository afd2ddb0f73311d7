"""Every exception tilinglib raises, in one place, and how a notebook shows them.

Messages follow compute-sanitizer's shape: what happened, where in the student's source,
which thread and block, and what to change. All classes derive from `TilingLibError`, so a
notebook can catch the whole family with one `except`.

A student's mistake should fit on one screen. IPython (and so Jupyter) asks an exception for
``_render_traceback_()`` before it formats a traceback; `TilingLibError` answers with at most
`MAX_NOTEBOOK_LINES` lines: the class name and message, the CUDA source line with a caret
(compile errors and, once the emulator has added it, run-time errors), and the line of the
student's own cell that made the call. No frames inside tilinglib. Set the environment
variable ``TILINGLIB_TRACEBACK=full`` (``%env TILINGLIB_TRACEBACK=full`` in a notebook) to get
IPython's full traceback back, for whoever develops tilinglib. Outside IPython nothing
changes: Python prints its usual traceback, and ``str(error)`` already holds the quoted line.
"""

from __future__ import annotations

import linecache
import os
import re
import sysconfig
import textwrap
import traceback

#: The environment variable that brings IPython's full traceback back ("full").
TRACEBACK_ENV = "TILINGLIB_TRACEBACK"
#: The most lines a tilinglib error takes in a notebook.
MAX_NOTEBOOK_LINES = 12
#: Message lines are wrapped at this many characters in a notebook (source quotes are not).
NOTEBOOK_WIDTH = 100

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# An IPython cell's code: "<ipython-input-3-...>" (IPython), /tmp/ipykernel_123/456.py (ipykernel).
_CELL_FILE = re.compile(r"^<ipython-input-\d+-|[/\\]ipykernel_\d+[/\\][^/\\]+\.py$")
_QUOTE_LINE = re.compile(r"^ *\d+ \| |^ *\^ *$")
_COORDS = re.compile(r"(?:\b(?:thread|block) )?\(\d+, \d+(?:, \d+)?\)")
_NBSP = "\u00a0"          # textwrap does not break at it
_LIBRARY_ROOTS = {sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib")}


def quote_source(line: int, text: str, column: int | None = None) -> list[str]:
    """The student's source line `text` (line number `line`) as ``"   12 | text"``, and below
    it a caret under 1-based `column` when one is given. Tabs are expanded to 4 columns."""
    prefix = f"{line:5d} | "
    shown = [prefix + text.rstrip().expandtabs(4)]
    if column and column >= 1:
        shown.append(" " * (len(prefix) + len(text[:column - 1].expandtabs(4))) + "^")
    return shown


def full_traceback_wanted() -> bool:
    """True when ``TILINGLIB_TRACEBACK=full``: notebooks show the full traceback again."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() == "full"


def _inside_tilinglib(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR)


def _installed(filename: str) -> bool:
    """True for Python's own library and installed packages (contextlib, IPython, ...)."""
    path = os.path.abspath(filename)
    return any(path.startswith(os.path.abspath(root) + os.sep) for root in _LIBRARY_ROOTS)


def is_cell_file(filename: str) -> bool:
    """True for the file name IPython or ipykernel gives a notebook cell's code."""
    return bool(_CELL_FILE.search(filename))


def callers_line(tb) -> str | None:
    """``"cell line 3: f(...)"``: the line outside tilinglib that called into it, found by
    walking the traceback `tb`: the innermost notebook-cell frame with tilinglib frames
    below it, else the innermost frame outside tilinglib (a script's or a test's line).
    None when the traceback has no frame outside tilinglib."""
    frames = [(frame.f_code.co_filename, lineno, frame.f_globals)
              for frame, lineno in traceback.walk_tb(tb)]
    inside = [_inside_tilinglib(name) for name, _, _ in frames]
    deepest = max((i for i, ins in enumerate(inside) if ins), default=len(frames))
    callers = [i for i in range(len(frames)) if not inside[i] and i < deepest]
    if not callers:
        callers = [i for i, ins in enumerate(inside) if not ins]
    if not callers:
        return None
    cells = [i for i in callers if is_cell_file(frames[i][0])]
    own = [i for i in callers if not _installed(frames[i][0])]
    filename, lineno, f_globals = frames[(cells or own or callers)[-1]]
    code = linecache.getline(filename, lineno, f_globals).strip()
    where = "cell" if is_cell_file(filename) else os.path.basename(filename)
    return f"{where} line {lineno}: {code}" if code else f"{where} line {lineno}"


def _wrap(text: str) -> list[str]:
    """Message lines wrapped at NOTEBOOK_WIDTH; quoted source lines and carets kept whole."""
    out = []
    for line in text.splitlines():
        if len(line) <= NOTEBOOK_WIDTH or _QUOTE_LINE.match(line):
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        # Keep "(1, 0, 0)" and "thread (1, 0, 0)" whole: no break inside a coordinate.
        kept = _COORDS.sub(lambda m: m.group(0).replace(" ", _NBSP), line)
        out.extend(part.replace(_NBSP, " ") for part in textwrap.wrap(
            kept, NOTEBOOK_WIDTH, subsequent_indent=indent, break_long_words=False,
            break_on_hyphens=False))
    return out


class TilingLibError(Exception):
    """Base class of every tilinglib error.

    In IPython and Jupyter it shows as at most `MAX_NOTEBOOK_LINES` lines (IPython's
    ``_render_traceback_`` protocol): ``Name: message``, the quoted CUDA line where the error
    has one, and ``cell line N: <code>``, the student's call. ``TILINGLIB_TRACEBACK=full``
    turns this off (the attribute then does not exist, so IPython formats the traceback).
    """

    @property
    def _render_traceback_(self):
        if full_traceback_wanted():
            raise AttributeError("_render_traceback_")    # IPython: the full traceback
        return self.notebook_lines

    def _notebook_text(self) -> str:
        """The message as a notebook shows it (a subclass may shorten a long one)."""
        return str(self)

    def notebook_lines(self) -> list[str]:
        """The lines IPython shows for this error (at most MAX_NOTEBOOK_LINES)."""
        text = self._notebook_text()
        body = _wrap(f"{type(self).__name__}: {text}" if text else type(self).__name__)
        caller = callers_line(self.__traceback__)
        room = MAX_NOTEBOOK_LINES - (caller is not None)
        if len(body) > room:
            # Keep the head of the message and the quoted source at its end.
            tail = 0
            while tail < len(body) - 1 and _QUOTE_LINE.match(body[-1 - tail]):
                tail += 1
            tail = min(tail, room - 2)
            head = room - 1 - tail
            cut = len(body) - head - tail
            body = (body[:head]
                    + [f"... ({cut} more lines: import sys; print(sys.last_value))"]
                    + (body[len(body) - tail:] if tail else []))
        return body + ([caller] if caller is not None else [])


class CompileError(TilingLibError):
    """The kernel source does not compile.

    `line` and `column` are 1-based positions in the student's own source (the text passed
    to `SourceModule`), or None where the compiler gave none; `source_line` is that line's
    text. The message ends with the line quoted and a caret under the column. `summary`, if
    given, is what a notebook shows instead of a long `message` (nvcc's full output, say).
    """

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None,
                 source_line: str | None = None, summary: str | None = None):
        self.line = line
        self.column = column
        self.source_line = source_line
        quote = ""
        if source_line is not None and line is not None:
            quote = "\n" + "\n".join(quote_source(line, source_line, column))
        self.summary = None if summary is None else summary + quote
        super().__init__(message + quote)

    def _notebook_text(self) -> str:
        return self.summary if self.summary is not None else str(self)


class UnsupportedFeatureError(CompileError):
    """Valid CUDA C that the CPU emulator does not execute (the message names the construct)."""


class KernelNotFoundError(TilingLibError, LookupError):
    """`get_function(name)` for a name the module does not define as a kernel."""


class LaunchError(TilingLibError, ValueError):
    """A launch configuration (block, grid, shared memory) that a GPU would refuse."""


class ArgumentError(TilingLibError, ValueError):
    """A wrong argument to one of tilinglib's helpers (a TILE that does not divide N, a
    barrier that is not there, a time of 0 ms): the message says what to pass instead."""


class KernelArgumentError(TilingLibError, TypeError):
    """A kernel argument of the wrong type, dtype, or memory layout."""


def find_access(text: str, name: str, write: bool) -> int | None:
    """1-based column of the access ``name[...]`` in the source line `text`: the first one
    that is assigned to when `write`, else the first one that is not (the first of any kind
    when none fits). None when `name[` does not occur in the line."""
    hits = []
    for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\s*\[", text):
        depth, j = 0, m.end() - 1
        while j < len(text):
            if text[j] == "[":
                depth += 1
            elif text[j] == "]":
                depth -= 1
                if depth == 0:
                    nxt = len(text) - len(text[j + 1:].lstrip())
                    if nxt < len(text) and text[nxt] == "[":    # a[i][j]: go on
                        j = nxt
                        continue
                    break
            j += 1
        assigned = re.match(r"(?:<<|>>|[-+*/%&|^])?=(?!=)|\+\+|--", text[j + 1:].lstrip())
        hits.append((m.start() + 1, bool(assigned)))
    for column, assigned in hits:
        if assigned == write:
            return column
    return hits[0][0] if hits else None


def _find_token(text: str, pattern: str) -> int | None:
    m = re.search(pattern, text)
    return m.start() + 1 if m else None


class KernelRuntimeError(TilingLibError):
    """A fault inside a running kernel, found by the emulator.

    Attributes name the place: `kernel`, `line` (student's source line), `block` and
    `thread` (3-tuples, as CUDA prints them) where known. When the error leaves the kernel
    call, the emulator adds the source line (`quote_source`): `source_line` and `column` are
    then set and the message ends with the line quoted and a caret.
    """

    def __init__(self, message: str, *, kernel: str | None = None, line: int | None = None,
                 block: tuple | None = None, thread: tuple | None = None):
        self.kernel = kernel
        self.line = line
        self.block = block
        self.thread = thread
        self.source_line: str | None = None
        self.column: int | None = None
        super().__init__(message)

    def _column(self, text: str) -> int | None:
        """Where on the faulting line the caret goes (None: the first non-blank)."""
        return _find_token(text, r"\b(?:assert|printf|init|memcpy_async|__pipeline_\w+|"
                                 r"arrive_and_wait|arrive|wait)\b")

    def _lines_at_fault(self) -> list[tuple[int, bool | None]]:
        """(line, access) pairs to quote: access is True/False for a write/read of the
        error's array, None when the caret is found by `_column`."""
        return [(self.line, None)] if self.line else []

    def quote_source(self, source_lines) -> None:
        """Append the faulting line(s) of `source_lines` (the student's source, index 0 is
        line 1) with a caret to the message. Does nothing a second time, or without a line."""
        if self.source_line is not None:
            return
        quote = []
        faults = dict(self._lines_at_fault())
        for line in sorted(faults):
            if not 1 <= line <= len(source_lines):
                continue
            text = source_lines[line - 1]
            column = self._locate(text, faults[line])
            if line == self.line:
                self.source_line, self.column = text, column
            quote += quote_source(line, text, column)
        if quote:
            self.args = (str(self.args[0]) + "\n" + "\n".join(quote),) + self.args[1:]

    def _locate(self, text: str, write: bool | None) -> int | None:
        column = self._column(text) if write is None else None
        if column is None and write is not None:
            column = find_access(text, getattr(self, "array", None) or "", write)
        if column is None and text.strip():
            column = len(text) - len(text.lstrip()) + 1
        return column


class MemoryAccessError(KernelRuntimeError):
    """An out-of-bounds or misaligned load or store."""

    def _column(self, text: str) -> int | None:
        message = str(self.args[0]) if self.args else ""
        m = (re.search(r"element: (\w+)\[", message) or re.search(r"array '(\w+)'", message)
             or re.search(r" at (\w+)\[", message))
        if not m:
            return None
        first = message.split("\n", 1)[0]
        return find_access(text, m.group(1), bool(re.search(r"\b(?:write|store)\b", first)))


class BarrierError(KernelRuntimeError):
    """`__syncthreads()` reached by only part of a thread block."""

    def _column(self, text: str) -> int | None:
        return _find_token(text, r"\b(?:__syncthreads|arrive_and_wait|wait|memcpy_async)\b")


class RaceError(KernelRuntimeError):
    """A shared-memory hazard between two barriers (raised when hazards="raise").

    Besides `line` (the access that found it): `kind` ("read-after-write", ...), `array`
    (the shared array's name) and `other_line`, the earlier access it conflicts with; both
    lines are quoted."""

    def __init__(self, message: str, *, kind: str | None = None, array: str | None = None,
                 other_line: int | None = None, **where):
        self.kind = kind
        self.array = array
        self.other_line = other_line
        super().__init__(message, **where)

    def _lines_at_fault(self) -> list[tuple[int, bool | None]]:
        if not self.array or self.kind not in _RACE_ACCESSES:
            return super()._lines_at_fault()
        earlier, later = _RACE_ACCESSES[self.kind]
        lines = [(self.other_line, earlier)] if self.other_line else []
        if self.line and self.line != self.other_line:
            lines.append((self.line, later))
        elif self.line and not lines:
            lines.append((self.line, later))
        return lines


# kind -> (is the earlier access a write, is the later one a write)
_RACE_ACCESSES = {"read-after-write": (True, False), "write-after-read": (False, True),
                  "write-after-write": (True, True), "uninitialized-read": (False, False)}


class StepBudgetExceeded(KernelRuntimeError):
    """A kernel ran past the emulator's step budget (a runaway loop, or a launch too big)."""

    def _column(self, text: str) -> int | None:
        return _find_token(text, r"\b(?:for|while|do)\b")


class ContextLostError(TilingLibError):
    """The CUDA context hit a sticky error; only restarting the Python process recovers."""


class BackendUnavailableError(TilingLibError):
    """The backend asked for (TILINGLIB_BACKEND or an argument) cannot be used here."""


# ----------------------------------------------------------------------------- warnings

class TilingLibWarning(UserWarning):
    """Base class of every warning tilinglib issues (a UserWarning, so Jupyter shows it)."""


class KernelWarning(TilingLibWarning):
    """A kernel that runs on the emulator but would misbehave or lose its results on a GPU.

    Issued once per launch per source site, at ``kernel.cu:<line>`` (the student's line),
    with what to change. `warnings.simplefilter("error", KernelWarning)` turns them into
    exceptions (as the tests do)."""


class InputWriteWarning(KernelWarning):
    """The kernel stores into an array passed as `In(...)`: PyCUDA copies `In` arrays to the
    device only, so the writes are lost when the launch ends."""


class BlockShapeWarning(KernelWarning):
    """The block does not match the shape of a shared array that the kernel indexes with a
    threadIdx component (one thread per element), so part of the array is never written (or
    threads write outside it)."""


class UninitializedReadWarning(KernelWarning):
    """A local variable (or local array element) read before the thread gave it a value: on a
    GPU it holds whatever its register held; on the emulator it reads 0."""


class DivergentBarrierWarning(KernelWarning):
    """A `__syncthreads()` in conditional code that the GPU completes only because of how
    it counts arrivals (threads that exited count as arrived; every `__syncthreads()` of a
    block is one barrier): the launch has the GPU's result, and the CUDA guide calls it
    undefined (``hazards="raise"`` makes it a `BarrierError`)."""


class OutputNotWrittenWarning(KernelWarning):
    """A launch left elements of an array passed as `Out(...)` unwritten (a grid that does
    not cover the output, `grid=` forgotten): on a GPU they hold whatever device memory
    held. Issued once per launch per array; never for `In` or `InOut` arrays."""


class GradingError(TilingLibError):
    """`python -m tilinglib.grading` cannot do what it was asked (a folder that is not
    nbgrader's submitted/ layout, an unknown assignment, a gradebook without the assignment);
    the message says what to change. A faulty *submission* never raises: it gets a status."""
