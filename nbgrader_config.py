"""nbgrader configuration of the course: solutions/ is the source, exercises/ the release.

The gradebook is SQLite in the course root by default; set ATTNMATH_GRADEBOOK_URL to any
SQLAlchemy URL (for example postgresql://user@host/db) to use another database.
"""

import os

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

_root = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.root = _root
c.CourseDirectory.course_id = "attnmath"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.db_url = os.environ.get(
    "ATTNMATH_GRADEBOOK_URL", "sqlite:///" + os.path.join(_root, "gradebook.db")
)
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.Execute.timeout = 120
# hidden_tests.py names an assignment's graded parts (attngrade.spec); it is never released. Its
# cases.py (each part's case generator, drawn by the visible checks with a public seed and by the
# hidden tests with the course's) is released next to the notebook, and autograde copies it back.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "hidden_tests.py"]
