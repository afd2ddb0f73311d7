"""Practice in the lessons: the student writes, `check` says what is right or wrong.

Introduced by lesson 01. Every exercise cell of a lesson (cell tag ``exercise``) binds the
student's answer to a name, left as ``...`` in the starter, and ends with a check::

    bytes_per_fma = ...          # your answer: bytes requested per multiply-add
    tl.exercises.check("01.1", bytes_per_fma)

`check` shows a `Feedback` as one coloured line or a short paragraph, and returns it:

- ``todo``: the answer is still ``...`` (the starter runs without an error: "not done yet");
- ``wrong``: what is wrong, in the course's terms (counters, diagnostics, the line to look
  at), and what to try; a kernel that fails to compile or faults is ``wrong``, with the
  emulator's message (never a traceback);
- ``correct``: what the answer shows.

In Jupyter (IPython), `check` displays its Feedback itself, so the feedback appears whatever
follows the call: a ``;`` after it, or a ``print`` on the next line. The Feedback it returns
is not shown a second time by the same cell (`Feedback._ipython_display_`); shown from
another cell, or printed, it appears as usual. Outside IPython nothing is displayed, and the
returned Feedback is all there is (the tests read it).

The reference answer sits in the markdown cell after the exercise (cell tag ``answer``),
inside a collapsed ``<details>`` block, so a student opens it only when they choose.

Each lesson's checks live in `tilinglib.exercises.lessonNN`, registered with `exercise`.
"""

from __future__ import annotations

import html
import importlib
from dataclasses import dataclass
from typing import Callable

from ..errors import TilingLibError

__all__ = ["Feedback", "Wrong", "check", "exercise", "exercise_ids", "kernel_with_blanks",
           "blanks", "TODO"]

#: The starter value of every answer.
TODO = ...

_LESSON_MODULES = ("lesson01", "lesson02", "lesson03", "lesson04", "lesson05", "lesson06",
                   "lesson07", "lesson08")
_REGISTRY: dict[str, "_Exercise"] = {}
_BLANKS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {}


class ExerciseNotFoundError(TilingLibError, LookupError):
    """`check` was given an exercise id that no lesson defines."""


class Wrong(Exception):
    """Raised by a checker to reject an answer; its message is shown to the student."""


@dataclass(frozen=True)
class Feedback:
    """The outcome of one check: `exercise` (its id, e.g. "03.1"), `status` ("todo",
    "wrong" or "correct") and `message` (plain text, a few lines at most)."""

    exercise: str
    status: str
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "correct"

    _MARK = {"todo": ("…", "not done yet", "#666"), "wrong": ("✘", "not yet right", "#b00"),
             "correct": ("✔", "correct", "#070")}

    def __str__(self) -> str:
        mark, word, _ = self._MARK[self.status]
        return f"{mark} Exercise {self.exercise}, {word}: {self.message}"

    def _repr_html_(self) -> str:
        mark, word, colour = self._MARK[self.status]
        body = html.escape(self.message).replace("\n", "<br>")
        mono = "font-family:monospace;white-space:pre-wrap;" if "\n" in self.message else ""
        return (f"<div style='border-left:4px solid {colour};padding:2px 8px'>"
                f"<b style='color:{colour}'>{mark} Exercise {html.escape(self.exercise)}, "
                f"{word}</b><div style='{mono}'>{body}</div></div>")

    def __repr__(self) -> str:
        return str(self)

    def _mimebundle(self) -> dict:
        return {"text/plain": str(self), "text/html": self._repr_html_()}

    def _ipython_display_(self) -> None:
        """IPython's display of a Feedback: nothing when `check` already displayed it in
        the cell that is running (its return value, the cell's last expression), else the
        coloured box."""
        from IPython import get_ipython
        from IPython.display import display

        shell = get_ipython()
        if shell is not None and getattr(self, "_shown_in", None) == shell.execution_count:
            return
        display(self._mimebundle(), raw=True)

    def show(self) -> "Feedback":
        """Display this Feedback now when running under IPython (Jupyter), and remember the
        cell it was shown in; returns it. Does nothing outside IPython."""
        try:
            from IPython import get_ipython
        except ImportError:
            return self
        shell = get_ipython()
        if shell is None:
            return self
        from IPython.display import display

        display(self._mimebundle(), raw=True)
        object.__setattr__(self, "_shown_in", shell.execution_count)
        return self


@dataclass(frozen=True)
class _Exercise:
    id: str
    title: str
    checker: Callable


def exercise(exercise_id: str, title: str):
    """Register a checker for `exercise_id` (decorator).

    The checker is called as ``checker(answer, **context)``. It returns a str (the message
    for a correct answer) or raises `Wrong` with what is wrong; it never sees ``...``."""
    def register(fn):
        if exercise_id in _REGISTRY:
            raise ValueError(f"exercise {exercise_id} is registered twice")
        _REGISTRY[exercise_id] = _Exercise(exercise_id, title, fn)
        return fn
    return register


def blanks(exercise_id: str, kernel: str, *pieces: tuple[str, str]) -> None:
    """Register what exercise `exercise_id` asks for in course kernel `kernel` (a name of
    `tilinglib.kernels`): each piece is (the kernel's text, what a student sees instead),
    e.g. ("acc[m] += As[row0 + m][k] * b;", "acc[m] += ?;")."""
    _BLANKS[exercise_id] = (kernel, tuple(pieces))


def kernel_with_blanks(*exercise_ids: str) -> str:
    """The source of the course kernel that exercises `exercise_ids` (e.g. "03.1", "03.2")
    are written in, with what they ask for left blank: what a lesson shows before the
    student has tried (the file itself, `tilinglib/kernels/<name>.cu`, is named only after).

    Raises ExerciseNotFoundError for an exercise with no blanks, ValueError for exercises
    of different kernels."""
    from .. import kernels

    _load_all()
    unknown = [e for e in exercise_ids if e not in _BLANKS]
    if unknown or not exercise_ids:
        raise ExerciseNotFoundError(
            f"no kernel blanks for {', '.join(unknown) or 'no exercise'}; exercises with "
            f"blanks: {', '.join(sorted(_BLANKS))}")
    names = {_BLANKS[e][0] for e in exercise_ids}
    if len(names) > 1:
        raise ValueError(f"exercises {', '.join(exercise_ids)} are in different kernels "
                         f"({', '.join(sorted(names))}): ask for one kernel's at a time")
    source = kernels.load(names.pop())
    for e in exercise_ids:
        for text, blank in _BLANKS[e][1]:
            if source.count(text) != 1:
                raise RuntimeError(f"the kernel no longer holds {text!r} of exercise {e} once")
            source = source.replace(text, blank)
    return source


def _load_all() -> None:
    for name in _LESSON_MODULES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise


def exercise_ids() -> list[str]:
    """Every registered exercise id, sorted."""
    _load_all()
    return sorted(_REGISTRY)


def _is_todo(answer) -> bool:
    if answer is ...:
        return True
    if isinstance(answer, (tuple, list)) and any(a is ... for a in answer):
        return True
    if isinstance(answer, dict) and any(v is ... for v in answer.values()):
        return True
    return False


def check(exercise_id: str, answer=..., **context) -> Feedback:
    """Check `answer` to exercise `exercise_id` (e.g. ``"03.1"``); displays the `Feedback`
    under IPython (Jupyter) and returns it (not shown twice by the same cell).

    `answer` is whatever the exercise asks for (a number, a str of CUDA C, a launch tuple, a
    function); ``...`` (anywhere in a tuple, list or dict) means not done yet. `context`
    passes what an exercise needs from the lesson. Raises `ExerciseNotFoundError` for an
    unknown id; a wrong answer, a kernel that does not compile or that faults, or an answer
    function that raises, is a ``wrong`` Feedback, never an exception."""
    _load_all()
    try:
        ex = _REGISTRY[exercise_id]
    except KeyError:
        raise ExerciseNotFoundError(
            f"there is no exercise {exercise_id!r}; the lessons have "
            f"{', '.join(sorted(_REGISTRY))}") from None
    return _feedback(ex, exercise_id, answer, context).show()


def _feedback(ex: "_Exercise", exercise_id: str, answer, context: dict) -> Feedback:
    if _is_todo(answer):
        return Feedback(exercise_id, "todo", "replace the ... with your answer, then run "
                        "this cell again.")
    try:
        message = ex.checker(answer, **context)
    except Wrong as exc:
        return Feedback(exercise_id, "wrong", str(exc))
    except TilingLibError as exc:
        return Feedback(exercise_id, "wrong", f"{type(exc).__name__}: {exc}")
    except Exception as exc:          # the student's own function raised: say so, briefly
        return Feedback(exercise_id, "wrong",
                        f"your answer raised {type(exc).__name__}: {exc}")
    return Feedback(exercise_id, "correct", message or "well done.")
