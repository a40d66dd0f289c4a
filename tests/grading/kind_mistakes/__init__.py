"""Named mistakes per assignment, one module each (``m<assignment>.py``), for the proof that every
kind of hidden case has a visible check (tests/grading/test_visible_checks.py)."""

from __future__ import annotations

import importlib


def collect_kind_mistakes(assignments) -> tuple[list, dict]:
    """All assignments' ``KIND_MISTAKES`` in order, and their ``GAPS`` merged; a module's entries
    must name its own assignment."""
    mistakes: list = []
    gaps: dict = {}
    for assignment in assignments:
        module = importlib.import_module(f"kind_mistakes.m{assignment}")
        for entry in module.KIND_MISTAKES:
            assert entry[0] == assignment, (module.__name__, entry[1])
        assert all(key[0] == assignment for key in module.GAPS), module.__name__
        mistakes.extend(module.KIND_MISTAKES)
        gaps.update(module.GAPS)
    return mistakes, gaps
