"""What each assignment grades, and where in its notebook the answers live.

The contract between the assignments' notebooks, nbgrader's hidden-test cells and the
command ``python -m tilinglib.grading``:

- Every answer a student gives is a **Python literal** bound to a name at the top level of
  one nbgrader solution cell: ``KERNEL = r\"\"\"...\"\"\"``, ``CHOSEN_TILE = 32``,
  ``SHARED_BYTES = {4: 128, ...}``. `Answer` names the variable and the cell (its nbgrader
  ``grade_id``). The command reads these literals with `ast` and never executes the
  notebook; the hidden-test cells pass the same values from the notebook's namespace.
- `Assignment.grade(answers)` takes a mapping from answer name to value (an answer that is
  missing, or not a literal of the expected type, is absent) and returns a `GradeReport`
  whose `max_score` is `Assignment.max_score`. It raises nothing for any answer.
- `Assignment.manual` lists the grade_ids of the cells an instructor grades by hand (with the
  rubric in the notebook); their points are not in `max_score`.

`ASSIGNMENTS` maps each assignment's name (its folder under notebooks/assignments/) to its
`Assignment`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from .sgemm import GradeReport, check_sgemm

__all__ = ["Answer", "Assignment", "ASSIGNMENTS", "grade"]


@dataclass(frozen=True)
class Answer:
    """One answer: the variable `name`, the nbgrader `cell` (grade_id) that assigns it, and
    the Python `types` its literal value may have."""

    name: str
    cell: str
    types: tuple = (str,)


@dataclass(frozen=True)
class Assignment:
    """An assignment: its `name`, its `answers`, the autograded points `max_score`, the
    grade_ids graded by hand (`manual`), and `grader`, which turns the answers into a
    `GradeReport`."""

    name: str
    answers: tuple
    max_score: float
    grader: Callable[[Mapping[str, object]], GradeReport]
    manual: tuple = ()

    def grade(self, answers: Mapping[str, object]) -> GradeReport:
        """Grade `answers` (name -> value; absent where the student gave none)."""
        return self.grader(answers)


def _grade_a1(answers: Mapping[str, object]) -> GradeReport:
    kernel = answers.get("KERNEL")
    if not isinstance(kernel, str):
        kernel = ""
    return check_sgemm(kernel, "sgemm")


ASSIGNMENTS: dict[str, Assignment] = {
    "a1_tiled_sgemm": Assignment("a1_tiled_sgemm", (Answer("KERNEL", "a1-kernel"),), 100.0,
                                 _grade_a1),
}


def grade(assignment: str, answers: Mapping[str, object]) -> GradeReport:
    """Grade `answers` for the assignment named `assignment` (a key of `ASSIGNMENTS`).

    Raises `KeyError` naming the known assignments for an unknown name."""
    try:
        spec = ASSIGNMENTS[assignment]
    except KeyError:
        raise KeyError(f"no assignment {assignment!r}; known: {', '.join(ASSIGNMENTS)}") from None
    return spec.grade(answers)
