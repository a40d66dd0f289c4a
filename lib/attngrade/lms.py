"""Bulk downloads of learning-management systems: whose each file is, and what the LMS says of it.

Each LMS names the files of its "download all submissions" in its own way; the grader reads the
identity from the name wherever the LMS puts an id there, and never takes the student's own file
name (a copy, a rename) for a new student. Member times in these downloads are the time of the
download, not of the submission: they are never evidence (:mod:`attngrade.submissions`).

* **Canvas** (``ContentZipper``): ``<name>[_LATE]_<user id>_<file id>_<file>``, only the current
  attempt; ``<name>`` is the sortable name in lower case without non-word characters; an
  anonymous assignment writes ``anon_<anonymous id>`` for the name and user id. Identity: the
  user id. ``LATE`` (any case) is Canvas's late verdict; the file id orders uploads. An
  online-text or URL entry has no file id: ``<name>[_LATE]_<user id>_text.html`` or
  ``…_link.html`` (``[LATE_]anon_<anonymous id>_text.html``); it is the student's, not a notebook.
* **Moodle** (``mod_assign``, *Download all submissions*): a folder per participant and plugin,
  ``<Full Name>_<participant id>_assignsubmission_file[_]/<file>`` (the trailing ``_`` before
  Moodle 4.1), or flat, ``<Full Name>_<participant id>_assignsubmission_file_<file>``. Identity:
  the participant id (the ``Participant <id>`` of the grading worksheet). No time, no verdict.
  A team submission's folder is its group's, ``<group>_<group id>_...``; the students in no group
  share ``Default group_assignsubmission_file/`` (no id: the id is ``Default_group``). The zip
  holds only those who uploaded (of a reopened attempt, only the new one): with the worksheet,
  its other students are ``missing`` (:func:`unsubmitted`).
* **Blackboard** (*Assignment File Download*): ``<assignment>_<username>_attempt_<Y-m-d-H-M-S>_<file>``
  and a receipt ``<assignment>_<username>_attempt_<Y-m-d-H-M-S>.txt`` per attempt (``Name: Full
  Name (username)``). Identity: the username. The attempt time (the server's zone) is evidence.
* **Brightspace** (*Download* in Assignments): a folder per submission,
  ``<submission id>-<file id> - <Full Name> - <Mon D, YYYY HMM AM>/<file>`` (older versions: the
  same before `` - <file>``, flat), and ``index.html``. No user id: the identity is the name.
  The submission time (to the minute, the downloader's zone) is evidence.
* **Gradescope** (*Export Submissions*): ``submission_<id>/<files>`` and
  ``submission_metadata.yml`` (``:submitters:`` with ``:name:``, ``:sid:``, ``:email:``;
  ``:created_at:``). Identity: the SID, else the e-mail; every submitter of a group submission.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from pathlib import Path

from .late import read_time, utc_text
from .names import shown

__all__ = [
    "KINDS",
    "Placed",
    "Times",
    "blackboard_users",
    "canvas_name",
    "folder_owner",
    "is_student_folder",
    "lms_id_of_path",
    "name_owner",
    "read_gradescope",
    "read_receipt",
    "read_times",
    "unsubmitted",
]

KINDS = ("canvas", "moodle", "blackboard", "brightspace", "gradescope")


@dataclass
class Placed:
    """Whose a file is, as its place in an LMS download says (module docstring)."""

    lms: str  # one of KINDS
    lms_id: str  # the identity within the LMS (user id, participant id, username, SID/e-mail, name)
    name: str  # the student's name as the download writes it
    own: str  # the student's own file name (their upload), or their path below the LMS's folder
    attempt: tuple = ()  # orders one student's attempts, newest largest; () when there is one
    order: int | None = None  # orders the uploads of one attempt (Canvas's file id)
    when: datetime | None = None  # the submission time the download states (UTC)
    late: bool | None = None  # the LMS's own late verdict; None: it gives none
    evidence: str = ""  # where ``when`` or ``late`` come from
    notes: list = field(default_factory=list)

    @property
    def label(self) -> str:
        """The readable id this student gets (made distinct by :func:`attngrade.names.distinct_ids`)."""
        if self.lms in ("blackboard", "brightspace") or self.lms_id.startswith("anon_"):
            return self.lms_id
        return "_".join(part for part in (self.name, self.lms_id) if part)


# Canvas: the name has only word characters (Ruby's [[:word:]] keeps the combining marks that
# Python's \w lacks: any non-ASCII character that is not a space is let in); LATE and the ids follow.
# An anonymous assignment puts LATE first (``LATE_anon_<id>_...``) and may draw an all-digit id
# (``anon_48213_<file id>_...``): ``anon_`` at the start is always the anonymous id, never a name.
_WORD = r"(?:\w|[^\x00-\x7f\s])"
_CANVAS_WHO = (rf"(?:(?P<lead>(?i:late))_(?=anon_))?(?:(?!anon_)(?P<name>{_WORD}*?)_)?(?:(?P<late>(?i:late))_)?"
               r"(?P<user>anon_[A-Za-z0-9]+|\d+)_")
_CANVAS = re.compile(_CANVAS_WHO + r"(?P<file>\d+)_(?P<own>.+)")
_CANVAS_ENTRY = re.compile(_CANVAS_WHO + r"(?P<own>(?:text|link)\.html)")  # online text, URL: no file id
# Moodle: ``<name>_<participant id>_assignsubmission_<plugin>``; a team's ``<group>_<group id>_...``;
# the students in no group share ``Default group_assignsubmission_<plugin>``, without an id.
_MOODLE_WHO = r"(?P<name>.+?)(?:_(?P<user>\d+))?_assignsubmission_"
_MOODLE_FOLDER = re.compile(_MOODLE_WHO + r"(?P<plugin>[a-z]+)_?")
_MOODLE_FLAT = re.compile(_MOODLE_WHO + r"(?P<plugin>file|onlinetext)_(?P<own>.+)")
_BLACKBOARD = re.compile(r"(?P<prefix>.+)_attempt_(?P<when>\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d)(?:_(?P<own>.+))?")
_BS_DATE = r"[A-Z][a-z]{2} \d{1,2}, \d{4} \d{3,4} [AP]M"
_BRIGHTSPACE = re.compile(rf"(?P<sub>\d+)-(?P<file>\d+) - (?P<name>.+?) - (?P<date>{_BS_DATE})(?: - (?P<own>.+))?")
_GRADESCOPE = re.compile(r"submission_(?P<id>\d+)")


def canvas_name(filename: str) -> Placed | None:
    """A Canvas download name's reading, or None when it is not one (module docstring): an
    upload's (with its file id) or an online-text or URL entry's (``own`` ``text.html``/``link.html``)."""
    text = unicodedata.normalize("NFC", filename)
    m = _CANVAS.fullmatch(text) or _CANVAS_ENTRY.fullmatch(text)
    if m is None or (not m.group("name") and not m.group("user").startswith("anon_")):
        return None
    late = bool(m.group("late") or m.group("lead"))
    order = int(m.group("file")) if "file" in m.re.groupindex else None
    return Placed(
        "canvas", m.group("user"), m.group("name") or "", m.group("own"), order=order, late=late,
        evidence="Canvas's LATE marker in the file name" if late else "no LATE marker in Canvas's file name",
    )


def _brightspace_time(text: str, zone: tzinfo) -> datetime:
    stamp = re.fullmatch(r"(.+) (\d{1,2})(\d\d) ([AP]M)", text)
    return read_time(f"{stamp.group(1)} {stamp.group(2)}:{stamp.group(3)} {stamp.group(4)}", zone)


def _brightspace(m: re.Match, own: str, zone: tzinfo) -> Placed:
    try:
        when = _brightspace_time(m.group("date"), zone)
    except ValueError:
        when = None
    placed = Placed("brightspace", m.group("name"), m.group("name"), own, order=int(m.group("file")), when=when,
                    attempt=(utc_text(when) if when else "", int(m.group("sub"))),
                    evidence="the submission date in Brightspace's name" if when else "")
    if when is None:
        placed.notes.append(f"Brightspace's date {m.group('date')!r} is not a date; no submission time")
    return placed


def folder_owner(folder: str, rest: str, zone: tzinfo, gradescope: dict) -> list[Placed] | None:
    """The owners an LMS's per-student folder names (``rest``: the path below it), or None."""
    m = _MOODLE_FOLDER.fullmatch(folder)
    if m:
        own = rest if m.group("plugin") == "file" else f"{rest} (Moodle's {m.group('plugin')} plugin)"
        return [Placed("moodle", m.group("user") or "", m.group("name"), own)]
    m = _BRIGHTSPACE.fullmatch(folder)
    if m and m.group("own") is None:
        return [_brightspace(m, rest, zone)]
    m = _GRADESCOPE.fullmatch(folder)
    if m and folder in gradescope:
        return [_gradescope(folder, who, rest, gradescope[folder]) for who in gradescope[folder]["submitters"]]
    return None


def is_student_folder(name: str) -> bool:
    """Whether ``name`` is the form of an LMS's folder for one student or submission."""
    m = _BRIGHTSPACE.fullmatch(name)
    return bool(_MOODLE_FOLDER.fullmatch(name) or _GRADESCOPE.fullmatch(name) or (m and m.group("own") is None))


def name_owner(filename: str, zone: tzinfo, blackboard: dict) -> Placed | None:
    """The owner an LMS's flat file name gives (Canvas, Moodle, Blackboard, Brightspace), or None."""
    m = _MOODLE_FLAT.fullmatch(filename)
    if m:
        return Placed("moodle", m.group("user") or "", m.group("name"), m.group("own"))
    m = _BLACKBOARD.fullmatch(filename)
    if m and m.group("prefix") in blackboard:
        user = blackboard[m.group("prefix")]
        when = read_time(m.group("when")[:10] + " " + m.group("when")[11:].replace("-", ":"), zone)
        return Placed("blackboard", user, user, m.group("own") or filename, attempt=(utc_text(when),), when=when,
                      evidence="the attempt time in Blackboard's file name")
    m = _BRIGHTSPACE.fullmatch(filename)
    if m and m.group("own"):
        return _brightspace(m, m.group("own"), zone)
    return canvas_name(filename)


def read_receipt(text: str) -> dict:
    """A Blackboard attempt's receipt: ``name``, ``username``, ``submitted``, ``files`` (original names)."""
    out: dict = {"files": []}
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        value = value.strip()
        if key == "Name":
            m = re.fullmatch(r"(.*)\((.+)\)", value)
            out["name"], out["username"] = (m.group(1).strip(), m.group(2).strip()) if m else (value, None)
        elif key == "Date Submitted":
            out["submitted"] = value
        elif key == "Original filename":
            out["files"].append(value)
    return out


def blackboard_users(stems: list[str], receipts: dict) -> dict:
    """``<assignment>_<username>`` prefix -> username, for Blackboard's attempt names ``stems``.

    A receipt's ``Name: ... (username)`` decides; else the prefix the class's names share (the
    assignment's name, as receipts give it or as all names have it) is cut off; else (one
    student, no receipt) the username is the last ``_`` part."""
    prefixes = {m.group("prefix") for m in map(_BLACKBOARD.fullmatch, stems) if m}
    users = {}
    for prefix in prefixes:
        who = next((r["username"] for stem, r in receipts.items()
                    if r.get("username") and stem.startswith(prefix + "_attempt_")), None)
        if who and prefix.endswith("_" + who):
            users[prefix] = who
    rest = sorted(prefixes - set(users))
    known = {p[: -len(u) - 1] for p, u in users.items()}
    common = known.pop() if len(known) == 1 else _common_prefix(rest) if len(rest) > 1 else None
    for prefix in rest:
        if common and prefix.startswith(common + "_") and len(prefix) > len(common) + 1:
            users[prefix] = prefix[len(common) + 1:]
        else:
            users[prefix] = prefix.rsplit("_", 1)[-1]
    return users


def _common_prefix(names: list[str]) -> str | None:
    """The longest run of ``_``-separated parts that every name starts with and none is all of."""
    split = [n.split("_") for n in names]
    n = 0
    while all(len(s) > n + 1 for s in split) and len({tuple(s[: n + 1]) for s in split}) == 1:
        n += 1
    return "_".join(split[0][:n]) if n else None


def read_gradescope(text: str) -> dict:
    """``submission_metadata.yml``: folder -> ``{"submitters": [(name, sid, email)], "when": datetime}``."""
    import yaml

    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ValueError("submission_metadata.yml is not a mapping of submissions")
    out = {}
    for folder, entry in data.items():
        if not isinstance(entry, dict):
            continue
        people = [p for p in entry.get(":submitters") or [] if isinstance(p, dict)]
        submitters = [(str(p.get(":name") or ""), str(p.get(":sid") or ""), str(p.get(":email") or ""))
                      for p in people]
        when = entry.get(":created_at")
        if isinstance(when, str):
            when = read_time(when)
        elif isinstance(when, datetime):
            when = when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)
        else:
            when = None
        out[str(folder)] = {"submitters": submitters, "when": when}
    return out


def _gradescope(folder: str, who: tuple, rest: str, entry: dict) -> Placed:
    name, sid, email = who
    when = entry["when"]
    return Placed("gradescope", sid or email or name or folder, name, rest, attempt=(utc_text(when) if when else "", folder),
                  when=when, evidence=f":created_at of {folder} in Gradescope's submission_metadata.yml")


def lms_id_of_path(path: str, system: str | None = None) -> str | None:
    """The LMS user id in a download's relative path (of ``system`` only, when given), or None."""
    parts = [p for p in str(path).replace("\\", "/").split("/") if p]
    for i, part in enumerate(parts):
        owners = folder_owner(part, "/".join(parts[i + 1:]), timezone.utc, {}) if i + 1 < len(parts) else None
        placed = owners[0] if owners else None
        if placed is None and i == len(parts) - 1:
            placed = name_owner(part, timezone.utc, {})
        if placed is not None and placed.lms in ("canvas", "moodle"):
            return (placed.lms_id or None) if system in (None, placed.lms) else None
    return None


@dataclass
class Times:
    """A submission-times CSV (:func:`read_times`): id -> (time or None, LMS late verdict or None, own due)."""

    path: str
    column: str
    rows: dict = field(default_factory=dict)
    listed: dict = field(default_factory=dict)  # Moodle's worksheet: participant id -> (name, status, group)


_ID_COLUMNS = ("identifier", "id", "user id", "user_id", "lms_id", "student", "sid", "username", "email",
               "email address", "login")
_TIME_COLUMNS = ("last modified (submission)", "submission time", "submitted", "submitted_at", "submitted at",
                 "date submitted", "timestamp", "time")


def _times_row(row: dict, idcols: list, timecol: str, zone: tzinfo) -> tuple[list, tuple]:
    get = {k.strip().lower(): (v or "").strip() for k, v in row.items() if k}.get
    keys = [get(c) for c in idcols if get(c)]
    keys = [k[len("Participant "):] if k.startswith("Participant ") else k for k in keys]
    text, status = get(timecol) or "", get("status") or ""
    when = None if text in ("", "-") else read_time(text, zone)
    late = None
    if status:
        late = bool(re.search(r"\blate\b", status, re.I)) if "submitted" in status.lower() else None
    due = re.search(r"Extension granted until:\s*(.+?)(?:\s+-\s+|$)", status)
    return keys, (when, late, read_time(due.group(1), zone) if due else None)


def read_times(path: str | Path, zone: tzinfo = timezone.utc) -> Times:
    """An LMS's submission times: Moodle's grading worksheet (``Identifier``, ``Last modified
    (submission)``, ``Status`` with its late verdict and extensions), Gradescope's grades CSV
    (``SID``, ``Email``, ``Submission Time``), or any CSV with an id column (``student``, ``id``,
    ``username``, ``email``) and a ``submitted`` column; ValueError naming the file and line."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            header = [h.strip().lower() for h in reader.fieldnames or [] if h]
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"--submission-times {path}: cannot read it as a UTF-8 CSV ({exc})") from exc
    idcols = [c for c in _ID_COLUMNS if c in header]
    timecol = next((c for c in _TIME_COLUMNS if c in header), None)
    if not idcols or timecol is None:
        raise ValueError(f"--submission-times {path}: needs an id column ({', '.join(_ID_COLUMNS[:8])}) "
                         f"and a time column ({', '.join(_TIME_COLUMNS[:4])})")
    out, twice = Times(str(path), timecol), set()
    for line, row in enumerate(rows, 2):
        try:
            keys, value = _times_row(row, idcols, timecol, zone)
        except ValueError as exc:
            raise ValueError(f"--submission-times {path}, line {line}: {exc}") from exc
        for key in {k.casefold() if "@" in k else k for k in keys}:
            if out.rows.setdefault(key, value) != value:
                twice.add(key)
        _listed(out, row)
    for key in twice:  # an id two rows share (two students of one name) names nobody
        del out.rows[key]
    return out


def _listed(times: Times, row: dict) -> None:
    """Keep a Moodle worksheet row's student (``Participant <id>``): name, status and group."""
    get = {k.strip().lower(): (v or "").strip() for k, v in row.items() if k}.get
    m = re.fullmatch(r"Participant (\d+)", get("identifier") or "")
    if m:
        times.listed.setdefault(m.group(1), (get("full name") or "", get("status") or "", get("group") or ""))


def _moodle_name(name: str) -> str:
    """A name as Moodle's ``clean_filename`` writes it in a download (PARAM_FILE drops these)."""
    return re.sub(r"[\x00-\x1f\x7f&<>\"`|':\\/]", "", name)


def _group_key(name: str) -> str:
    """A group's name as a download's folder and the worksheet both give it (``_`` is a space)."""
    return " ".join(_moodle_name(name).replace("_", " ").split()).casefold()


def unsubmitted(times: Times | None, subs: list) -> list[tuple[str, str, str, str]]:
    """The students Moodle's worksheet lists whom no submission in ``subs`` (nor their group's
    submission) matches: ``(label, name, participant id, reason)`` each, for a ``missing`` row."""
    if times is None:
        return []
    matched = {k for s in subs for k in (s.lms_id, s.student) if k}
    groups = {_group_key(s.name) for s in subs if s.lms == "moodle" and s.lms_id not in times.listed}
    out = []
    for pid, (name, status, group) in times.listed.items():
        if pid in matched or (group and _group_key(group) in groups):
            continue
        who = f"{name} (Participant {pid})" if name else f"Participant {pid}"
        said = f", status {status!r}" if status else ""
        team = f", group {group!r}" if group else ""
        why = (f"Moodle's worksheet {shown(Path(times.path).name)} lists {who}{said}{team}; "
               "the download holds nothing of theirs")
        if status == "Reopened":
            why += " (Moodle downloads only the reopened attempt, which has no upload yet)"
        out.append((f"{_moodle_name(name) or 'Participant'}_{pid}", name, pid, why))
    return out
