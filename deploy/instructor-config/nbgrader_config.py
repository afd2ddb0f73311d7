# The instructor's nbgrader settings, on the hub: JUPYTER_CONFIG_PATH names this folder for
# members of the instructor group only (deploy/jupyterhub_config.py). The course folder is
# ~/COURSE_ID (setup.sh makes it, with source/ holding the assignments); the exchange and
# the course id come from the global nbgrader_config.py every user reads.
import os

c = get_config()  # noqa: F821  (nbgrader provides get_config)
c.CourseDirectory.root = os.path.expanduser("~/" + os.environ.get("TILING_COURSE_ID", "tiling"))
# As in notebooks/assignments/nbgrader_config.py: the starter code stays in the student copy.
c.ClearSolutions.code_stub = {"python": ""}
