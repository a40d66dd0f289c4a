"""attngrade: the course's grading pipeline on top of nbgrader.

It never trusts a submitted notebook's structure: answers are taken from the cells whose grade
ids the released notebook declares, and everything else comes from the course's own files.
``attnmath`` never imports this package.

Modules: :mod:`~attngrade.cli` (the ``attngrade`` command, which only parses its arguments),
:mod:`~attngrade.pipeline` (the orchestrator of the stages discover, read, run, check, record,
report, and one student's fault boundary), :mod:`~attngrade.names` (ids, shown names, CSV fields
from student text), :mod:`~attngrade.reading` (a notebook parsed and analysed in a bounded child),
:mod:`~attngrade.running` and :mod:`~attngrade.checking` (the run and check stages),
:mod:`~attngrade.record` (one student's outputs), :mod:`~attngrade.submissions`
(layouts, links, rebuilding from the release), :mod:`~attngrade.staticcheck` (what answers
import and patch), :mod:`~attngrade.sandbox` and :mod:`~attngrade.worker` (the isolated worker
process), :mod:`~attngrade.plain` (plain data across processes), :mod:`~attngrade.grader`
(one submission, one status), :mod:`~attngrade.gradebook` (nbgrader's gradebook),
:mod:`~attngrade.report` (CSV, feedback, summary), :mod:`~attngrade.spec` (hidden tests as
data) and :mod:`~attngrade.notebooks` (cells by grade id).
"""

__version__ = "0.1.0"
