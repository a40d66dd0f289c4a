"""The late policy of an assignment (optional), read from the course's ``nbgrader_config.py``.

::

    c.AttnGrade.late_policy = {
        "01_softmax": {"deadline": "2026-12-01 23:59:00 UTC", "penalty_per_day": 0.1, "max_penalty": 0.5},
    }

A submission later than the deadline loses ``penalty_per_day`` of its autograded score for each
started day (24 h) after the deadline, at most ``max_penalty`` of it (fractions, 0 to 1). The
submission time is the best evidence :func:`attngrade.submissions.discover` found (nbgrader's
``timestamp.txt``, the zip's stored time, the file's time); an LMS late marker is shown but
costs nothing by itself. Assignments without an entry have no late policy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone

__all__ = ["LatePolicy", "Lateness", "late_policy", "parse_time"]


def parse_time(text: str) -> datetime:
    """A UTC ``datetime`` from nbgrader's time formats (``2026-12-01 23:59:00 UTC``)."""
    from nbgrader.utils import parse_utc

    when = parse_utc(text)
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


@dataclass(frozen=True)
class Lateness:
    late: bool
    days: int  # started days after the deadline (0 when on time)
    fraction: float  # of the autograded score taken off
    text: str  # for the CSV, the summary and the feedback


@dataclass(frozen=True)
class LatePolicy:
    deadline: datetime
    penalty_per_day: float = 0.0
    max_penalty: float = 1.0

    def __post_init__(self):
        for name in ("penalty_per_day", "max_penalty"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
                raise ValueError(f"late policy: {name} must be a number from 0 to 1, got {value!r}")

    def lateness(self, timestamp: str | None, lms_late: bool = False) -> Lateness:
        if not timestamp:
            note = "; marked late by the LMS" if lms_late else ""
            return Lateness(False, 0, 0.0, f"no submission time, no late penalty{note}")
        when = parse_time(timestamp)
        seconds = (when - self.deadline).total_seconds()
        if seconds <= 0:
            note = " (marked late by the LMS)" if lms_late else ""
            return Lateness(False, 0, 0.0, f"on time{note}")
        days = math.ceil(seconds / 86400)
        fraction = min(self.max_penalty, days * self.penalty_per_day)
        return Lateness(
            True, days, fraction,
            f"late by {days} day{'s' if days != 1 else ''}: {fraction:.0%} of the autograded score taken off",
        )


def late_policy(config, assignment: str) -> LatePolicy | None:
    """The policy of ``assignment`` from a traitlets config (``c.AttnGrade.late_policy``), or None."""
    if config is None or "AttnGrade" not in config or "late_policy" not in config.AttnGrade:
        return None
    table = config.AttnGrade.late_policy
    if not isinstance(table, dict):
        raise ValueError("c.AttnGrade.late_policy must be a dict of assignment -> policy")
    entry = table.get(assignment)
    if entry is None:
        return None
    if not isinstance(entry, dict) or "deadline" not in entry:
        raise ValueError(f"late policy of {assignment}: a dict with a 'deadline' is needed, got {entry!r}")
    unknown = set(entry) - {"deadline", "penalty_per_day", "max_penalty"}
    if unknown:
        raise ValueError(f"late policy of {assignment}: unknown keys {sorted(unknown)}")
    try:
        deadline = parse_time(str(entry["deadline"]))
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"late policy of {assignment}: unreadable deadline {entry['deadline']!r}") from exc
    return LatePolicy(deadline, entry.get("penalty_per_day", 0.0), entry.get("max_penalty", 1.0))
