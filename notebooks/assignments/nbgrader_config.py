# nbgrader configuration for a course made from these assignments: copy it to the course
# directory (next to source/) before `nbgrader generate_assignment`.
import os
import sys

c = get_config()  # noqa: F821  (nbgrader provides get_config)
# nbgrader runs its `alembic` command from the PATH to check the gradebook's schema: put the
# one next to the Python that runs nbgrader first, so that the venv's nbgrader, called by path
# without activating the venv (from course/: ../.venv/bin/...), works too.
_path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable)] + _path)
c.CourseDirectory.course_id = "tiling"
# Every answer cell starts from code that runs (a1's skeleton, a2's copy of the buggy kernel,
# a3's placeholders), and the solution below it replaces that starter in the instructor's
# copy. nbgrader's default stub ("# YOUR CODE HERE" + "raise NotImplementedError()") would
# follow the starter in the student's copy and stop the notebook there; an empty stub
# leaves the starter as it is.
c.ClearSolutions.code_stub = {"python": ""}
