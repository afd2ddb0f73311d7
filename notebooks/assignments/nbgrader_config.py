# nbgrader configuration for a course made from these assignments: copy it to the course
# directory (next to source/) before `nbgrader generate_assignment`.
c = get_config()  # noqa: F821  (nbgrader provides get_config)
c.CourseDirectory.course_id = "tiling"
# Every answer cell starts from code that runs (a1's skeleton, a2's copy of the buggy kernel,
# a3's placeholders), and the solution below it replaces that starter in the instructor's
# copy. nbgrader's default stub ("# YOUR CODE HERE" + "raise NotImplementedError()") would
# follow the starter in the student's copy and stop the notebook there; an empty stub
# leaves the starter as it is.
c.ClearSolutions.code_stub = {"python": ""}
