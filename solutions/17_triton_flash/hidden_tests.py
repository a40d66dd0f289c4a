"""Hidden tests of exercise 17 (flash attention in Triton). Not released to students.

The parts, their case generators and their checks are in ``cases.py``, released with the notebook:
the visible self-checks draw those cases with the public visible seed, the hidden tests draw them
here with the course's seed (``attngrade.spec.SEED``, or the course secret), and both check them
with the same code, tolerances and budgets.
"""

from attngrade.spec import load_cases

PARTS = load_cases(__file__).PARTS
