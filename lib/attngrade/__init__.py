"""attngrade: the course's grading pipeline on top of nbgrader.

It never trusts a submitted notebook's structure: answers are taken from the cells whose grade
ids the released notebook declares, and everything else comes from the course's own files.
``attnmath`` never imports this package.

Modules: :mod:`~attngrade.cli` (the ``attngrade`` command), :mod:`~attngrade.submissions`
(layouts, validation, rebuilding from the release), :mod:`~attngrade.staticcheck` (what answers
import and patch), :mod:`~attngrade.sandbox` and :mod:`~attngrade.worker` (the isolated worker
process), :mod:`~attngrade.plain` (plain data across processes), :mod:`~attngrade.grader`
(one submission, one status), :mod:`~attngrade.gradebook` (nbgrader's gradebook),
:mod:`~attngrade.report` (CSV, feedback, summary), :mod:`~attngrade.spec` (hidden tests as
data) and :mod:`~attngrade.notebooks` (cells by grade id).
"""

__version__ = "0.1.0"
