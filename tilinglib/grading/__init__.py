"""Grading the course's assignments.

Two ways in, one set of rules:

- In a notebook (a student checking their work, or nbgrader's hidden tests):
  ``check_sgemm(KERNEL, "sgemm")`` and the per-assignment graders in
  `tilinglib.grading.assignments` run in the notebook's own process. They are a convenience:
  whatever runs in the student's process can be changed by the student's own cells.
- For the grade to trust: ``python -m tilinglib.grading DIR`` reads the submitted notebooks
  without executing them and grades every submission in a fresh, resource-limited process.

Modules: `sgemm` (check_sgemm and its report types), `coarse` (check_coarsened, for
Assignment 4's coarsened kernel), `assignments` (what each assignment grades and where in
the notebook its answers live).
"""

from .coarse import check_coarsened
from .sgemm import (SGEMM_SIGNATURE, Check, GradeReport, check_sgemm, declared_tile,
                    sgemm_cases)

__all__ = ["Check", "GradeReport", "check_sgemm", "check_coarsened", "declared_tile",
           "sgemm_cases", "SGEMM_SIGNATURE"]
