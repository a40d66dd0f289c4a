"""attngrade: the course's grading pipeline on top of nbgrader.

It never trusts a submitted notebook's structure: answers are taken from the cells whose grade
ids the released notebook declares, and everything else comes from the course's own files.
``attnmath`` never imports this package.
"""

__version__ = "0.1.0"
