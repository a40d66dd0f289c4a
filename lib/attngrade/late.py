"""Times, deadlines and the late policy of an assignment.

**Times.** Every time the grader reads (nbgrader's ``timestamp.txt``, a time in an LMS's file
names or metadata, a submission-times CSV, a deadline) is read by :func:`read_time`: an offset
(``+0100``, ``-05:00``, ``Z``) or zone (``UTC``, ``Europe/Berlin``) that the text states is
honoured; an abbreviation of the course's zone (``CET``/``CEST``, ``EST``/``EDT``) is that zone;
a time without either is the course's local time. An abbreviation that is neither ``UTC``/``GMT``,
an IANA zone nor one of the course zone's own is refused rather than guessed (``CST`` is three
zones). Times are kept in UTC (:func:`utc_text`).

**The course's zone** (:func:`course_zone`): ``c.AttnGrade.timezone = "Europe/Berlin"`` in the
course's ``nbgrader_config.py``; without it nbgrader's ``c.Exchange.timezone`` (the zone its
exchange writes ``timestamp.txt`` in); without both, UTC. ``attngrade --timezone`` overrides.

**The late policy** (optional), in ``nbgrader_config.py``::

    c.AttnGrade.late_policy = {
        "01_softmax": {"deadline": "2026-12-01 23:59:00", "penalty_per_day": 0.1, "max_penalty": 0.5},
    }

A submission later than its deadline loses ``penalty_per_day`` of its autograded score for each
started day (24 h) after it, at most ``max_penalty`` of it (fractions, 0 to 1). The submission
time is the evidence :func:`attngrade.submissions.discover` found (it names it). Without a time,
an LMS's late marker decides the verdict but no penalty can be counted.

**Deadlines file** (``attngrade --deadlines FILE``, :func:`read_deadlines`): a CSV with a
``student`` column (attngrade's id or the LMS's user id: Canvas user id, Moodle participant id,
Blackboard username, Gradescope email or SID) and a ``due`` column; an optional ``assignment``
column keeps one file for the whole course. A row with an empty ``student`` (or ``*``) is the
assignment's deadline for everyone (it replaces the config's); the other rows are per-student
deadlines (extensions). ``due`` is read as above::

    assignment,student,due
    02_attention,,2026-12-01 23:59
    02_attention,2036,2026-12-04 23:59
    02_attention,nguyenminh_2037,2026-12-03 12:00 +01:00

With a deadlines file and no ``late_policy`` entry, lateness is reported without a penalty.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "Deadlines",
    "LatePolicy",
    "Lateness",
    "assign_deadlines",
    "course_zone",
    "late_policy",
    "load_policy",
    "parse_time",
    "read_deadlines",
    "read_time",
    "utc_text",
]

_UTC_NAMES = {"UTC", "GMT", "Z", "UT"}


def utc_text(when: datetime) -> str:
    """``when`` in UTC, in nbgrader's timestamp format (``2026-12-01 10:00:00.000000 UTC``)."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def _zone(name: str, what: str) -> tzinfo:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{what}: give an IANA time zone name such as Europe/Berlin, got {name!r}")
    if name.strip().upper() in _UTC_NAMES:
        return timezone.utc
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"{what}: unknown time zone {name!r} (give an IANA name such as Europe/Berlin)") from exc


def course_zone(config=None, name: str | None = None) -> tzinfo:
    """The course's time zone: ``name`` (``--timezone``), else ``c.AttnGrade.timezone``, else
    nbgrader's ``c.Exchange.timezone``, else UTC (module docstring)."""
    if name is not None:
        return _zone(name, "--timezone")
    for section, key in (("AttnGrade", "timezone"), ("Exchange", "timezone")):
        if config is not None and section in config and key in config[section]:
            return _zone(config[section][key], f"c.{section}.{key}")
    return timezone.utc


def _abbreviations(zone: tzinfo) -> set:
    """The abbreviations ``zone`` uses (standard and summer time), around now."""
    year = datetime.now().year
    names = set()
    for y in (year - 2, year, year + 2):
        for month in (1, 7):
            names.add(datetime(y, month, 15, 12, tzinfo=zone).tzname())
    return {n for n in names if n}


def _stated_zone(name: str | None, offset: int | None, zone: tzinfo) -> tzinfo | None:
    """The zone a time's text states (dateutil's ``tzinfos`` callback); None: not stated."""
    if name is None:
        return None if offset is None else timezone(timedelta(seconds=offset))
    if name.upper() in _UTC_NAMES:
        return timezone.utc
    if name in _abbreviations(zone):
        return zone
    if offset is not None:
        return timezone(timedelta(seconds=offset))
    try:
        return ZoneInfo(name)  # an IANA name that is also an abbreviation: CET, EET, EST, MST, HST
    except (ZoneInfoNotFoundError, ValueError):
        pass
    raise ValueError(f"unknown time zone {name!r}: not UTC, an IANA name or the course zone's own "
                     "(set the course's zone: c.AttnGrade.timezone)")


def read_time(text: str, zone: tzinfo = timezone.utc) -> datetime:
    """The moment ``text`` names, as an aware UTC ``datetime`` (module docstring); ValueError."""
    from dateutil import parser

    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    body = text.strip()
    stated = None
    last = body.rsplit(None, 1)
    if len(last) == 2 and "/" in last[1] and not re.search(r"\d/", last[1]):
        stated, body = _zone(last[1], "time zone"), last[0]  # 2026-12-01 10:00 Europe/Berlin
    try:
        when = parser.parse(body, tzinfos=lambda n, o: _stated_zone(n, o, zone))
    except (ValueError, OverflowError, parser.ParserError) as exc:
        raise ValueError(f"unreadable time {text[:60]!r}: {exc}") from exc
    if stated is not None:
        when = when.replace(tzinfo=stated)
    elif when.tzinfo is None:
        when = when.replace(tzinfo=zone)
    return when.astimezone(timezone.utc)


def parse_time(text: str) -> datetime:
    """A UTC ``datetime`` from ``text``; a time without offset or zone is UTC (:func:`read_time`)."""
    return read_time(text, timezone.utc)


@dataclass(frozen=True)
class Lateness:
    late: bool
    days: int  # started days after the deadline (0 when on time or unknown)
    fraction: float  # of the autograded score taken off
    text: str  # for the CSV, the summary and the feedback


def _days(n: int) -> str:
    return f"{n} day{'s' if n != 1 else ''}"


@dataclass(frozen=True)
class LatePolicy:
    deadline: datetime | None  # everyone's deadline (UTC); None: only per-student ones
    penalty_per_day: float = 0.0
    max_penalty: float = 1.0

    def __post_init__(self):
        for name in ("penalty_per_day", "max_penalty"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
                raise ValueError(f"late policy: {name} must be a number from 0 to 1, got {value!r}")

    def lateness(self, timestamp: str | None, lms_late: bool | None = None, due: str | None = None) -> Lateness:
        """The verdict for a submission at ``timestamp`` (UTC text, None: unknown), with the LMS's
        marker ``lms_late`` (None: none) and the student's own deadline ``due`` (UTC text)."""
        deadline = parse_time(due) if due else self.deadline
        own = f" (own deadline {utc_text(deadline)[:16]} UTC)" if due else ""
        if not timestamp:
            if lms_late:
                return Lateness(True, 0, 0.0, "marked late by the LMS; no submission time, so no penalty "
                                "(give the LMS's submission times: --submission-times)")
            if lms_late is False:
                return Lateness(False, 0, 0.0, f"on time by the LMS's marker{own} (no submission time)")
            return Lateness(False, 0, 0.0, f"no submission time, no late penalty{own}")
        if deadline is None:
            return Lateness(False, 0, 0.0, "no deadline for this student")
        seconds = (parse_time(timestamp) - deadline).total_seconds()
        if seconds <= 0:
            note = " (marked late by the LMS)" if lms_late else ""
            return Lateness(False, 0, 0.0, f"on time{own}{note}")
        days = math.ceil(seconds / 86400)
        fraction = min(self.max_penalty, days * self.penalty_per_day)
        return Lateness(True, days, fraction,
                        f"late by {_days(days)}{own}: {fraction:.0%} of the autograded score taken off")


def late_policy(config, assignment: str, zone: tzinfo | None = None) -> LatePolicy | None:
    """The policy of ``assignment`` from a traitlets config (``c.AttnGrade.late_policy``), or None;
    a deadline without offset or zone is in ``zone`` (default: :func:`course_zone` of ``config``)."""
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
        deadline = read_time(str(entry["deadline"]), zone or course_zone(config))
    except ValueError as exc:
        raise ValueError(f"late policy of {assignment}: unreadable deadline {entry['deadline']!r} ({exc})") from exc
    return LatePolicy(deadline, entry.get("penalty_per_day", 0.0), entry.get("max_penalty", 1.0))


@dataclass
class Deadlines:
    """A deadlines file's rows for one assignment (module docstring)."""

    path: str
    default: datetime | None = None
    students: dict = field(default_factory=dict)  # student or LMS id -> datetime (UTC)


_STUDENT_COLUMNS = ("student", "id", "user_id", "user id", "lms_id", "username", "email", "sid")
_DUE_COLUMNS = ("due", "deadline", "due_at", "due date")


def _column(header: list[str], names: tuple, path, what: str) -> str:
    low = {h.strip().lower(): h for h in header if h}
    for name in names:
        if name in low:
            return low[name]
    raise ValueError(f"--deadlines {path}: no {what} column (one of: {', '.join(names)})")


def read_deadlines(path: str | Path, assignment: str, zone: tzinfo = timezone.utc) -> Deadlines:
    """The deadlines of ``assignment`` in the CSV at ``path`` (module docstring); ValueError
    naming the file and line for anything unreadable or contradictory."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            header = list(reader.fieldnames or [])
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"--deadlines {path}: cannot read it as a UTF-8 CSV ({exc})") from exc
    who, due = _column(header, _STUDENT_COLUMNS, path, "student"), _column(header, _DUE_COLUMNS, path, "due")
    which = next((h for h in header if h and h.strip().lower() == "assignment"), None)
    out = Deadlines(str(path))
    for line, row in enumerate(rows, 2):
        if which is not None and (row.get(which) or "").strip() not in ("", assignment):
            continue
        key, text = (row.get(who) or "").strip(), (row.get(due) or "").strip()
        try:
            when = read_time(text, zone)
        except ValueError as exc:
            raise ValueError(f"--deadlines {path}, line {line}: {exc}") from exc
        if key in ("", "*"):
            if out.default is not None and out.default != when:
                raise ValueError(f"--deadlines {path}, line {line}: a second deadline for everyone")
            out.default = when
        elif out.students.setdefault(key, when) != when:
            raise ValueError(f"--deadlines {path}, line {line}: a second deadline for {key!r}")
    return out


def assign_deadlines(subs: list, deadlines: Deadlines | None) -> list[str]:
    """Give each submission its own deadline from ``deadlines`` (``sub.due``, matched by
    attngrade's id or the LMS's user id); the warnings: rows that match nobody."""
    if deadlines is None:
        return []
    used = set()
    for sub in subs:
        for key in (sub.student, getattr(sub, "lms_id", "")):
            if key and key in deadlines.students:
                sub.due = utc_text(deadlines.students[key])
                used.add(key)
                break
    return [
        f"--deadlines {deadlines.path}: {key!r} matches no submission (a student who submitted nothing, "
        "or a mistyped id); that deadline was not used"
        for key in sorted(set(deadlines.students) - used)
    ]


def load_policy(config, assignment: str, *, deadlines: str | None = None,
                zone: tzinfo | None = None) -> tuple[LatePolicy | None, Deadlines | None]:
    """The assignment's late policy and deadlines file together (module docstring)."""
    zone = zone or course_zone(config)
    policy = late_policy(config, assignment, zone)
    table = read_deadlines(deadlines, assignment, zone) if deadlines else None
    if table is None:
        return policy, None
    if policy is None:
        policy = LatePolicy(table.default)
    elif table.default is not None:
        policy = LatePolicy(table.default, policy.penalty_per_day, policy.max_penalty)
    return policy, table
