"""Archives and grade files as five learning-management systems write them, for grading tests.

Each ``*_download`` builder writes the bulk "download all submissions" archive of one LMS at
``path`` (member names, folders, metadata files and member times as that LMS makes them) and
returns, for every student of the class, what a fair grader must conclude from that archive:
which member to grade, which older uploads to leave alone, the LMS's own late verdict and the
submission time when the archive itself records it.  README.md gives the source of every rule
and says what had to be guessed.  Pure standard library.
"""
from __future__ import annotations

import csv
import html
import random
import re
import unicodedata
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Iterable, Sequence

ASSIGNMENT = "02_attention"
NOTEBOOK = "attention.ipynb"


@dataclass
class Upload:
    """One file a student uploaded, named as the student named it."""

    filename: str
    content: bytes
    uploaded_at: datetime  # timezone-aware: when the LMS received it


@dataclass
class Student:
    """A student of the class as the LMS knows them; ``late`` is the LMS's own verdict."""

    full_name: str
    sortable_name: str  # "Nguyen, Minh"
    user_id: int  # the LMS's internal user id
    login: str  # login / SIS login id
    uploads: list[Upload]  # oldest first or not: the builders sort by uploaded_at
    late: bool
    submission_id: int | None = None  # Gradescope's id of the active submission, if given
    extension_until: datetime | None = None  # a personal due date (Canvas override, Moodle extension)
    email: str | None = None

    @property
    def address(self) -> str:
        """The e-mail address the LMS shows (``email``, else one made from ``login``)."""
        if self.email:
            return self.email
        return self.login if "@" in self.login else f"{self.login}@students.example.edu"


# ----------------------------------------------------------------------------- shared helpers


def _aware(value: object, name: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {value!r}")
    return value


def _checked(students: Iterable[Student], **times: datetime | None) -> list[Student]:
    """The class as a list, after checking every field the builders rely on."""
    for name, value in times.items():
        if value is not None:
            _aware(value, name)
    result = list(students)
    seen: set[int] = set()
    for k, s in enumerate(result):
        where = f"students[{k}]"
        if not isinstance(s, Student):
            raise TypeError(f"{where} must be a Student, got {type(s).__name__}")
        if s.user_id in seen:
            raise ValueError(f"{where}.user_id {s.user_id} is used by two students")
        seen.add(s.user_id)
        if s.extension_until is not None:
            _aware(s.extension_until, f"{where}.extension_until")
        for n, u in enumerate(s.uploads):
            if not isinstance(u, Upload) or not isinstance(u.content, bytes):
                raise TypeError(f"{where}.uploads[{n}] must be an Upload with bytes content")
            if not u.filename or "/" in u.filename or "\\" in u.filename:
                raise ValueError(f"{where}.uploads[{n}].filename must be a bare name, not {u.filename!r}")
            _aware(u.uploaded_at, f"{where}.uploads[{n}].uploaded_at")
    return result


def _order(student: Student) -> list[int]:
    """Indexes of the student's uploads, oldest first."""
    return sorted(range(len(student.uploads)), key=lambda i: student.uploads[i].uploaded_at)


def _check_late(students: Sequence[Student], due_at: datetime) -> None:
    """Refuse a class whose ``late`` flags disagree with its upload times and due dates."""
    for s in students:
        order = _order(s)
        deadline = s.extension_until or due_at
        expected = bool(order) and s.uploads[order[-1]].uploaded_at > deadline
        if expected != s.late:
            raise ValueError(
                f"students: {s.full_name} ({s.user_id}) has late={s.late}, but the LMS decides "
                f"late={expected} from the newest upload and the deadline {deadline.isoformat()}"
            )


def _upload_ids(students: Sequence[Student], first: int) -> dict[tuple[int, int], int]:
    """Ids an LMS hands out in the order it receives files: (user_id, upload index) -> id."""
    arrivals = sorted((u.uploaded_at, s.user_id, i) for s in students for i, u in enumerate(s.uploads))
    return {(uid, i): first + n for n, (_, uid, i) in enumerate(arrivals)}


def _expect(s: Student, member: str | None, ignored: list[str], submitted_at: datetime | None,
            evidence: str) -> dict:
    return {
        "user_id": s.user_id,
        "full_name": s.full_name,
        "member": member,
        "ignored": ignored,
        "late": s.late,
        "submitted_at": submitted_at.isoformat() if submitted_at else None,
        "evidence": evidence,
    }


def _absent(s: Student, assignment_name: str) -> dict:
    return _expect(s, None, [], None, f"{assignment_name}: no submission, nothing of theirs in the archive")


class _Zip:
    """A zip written member by member, each with the local time the LMS's zipper stamps on it."""

    def __init__(self, path: str | Path):
        self._zip = zipfile.ZipFile(path, "w")
        self._names: set[str] = set()

    def add(self, name: str, data: bytes, stamp: datetime) -> None:
        if name in self._names:
            raise ValueError(f"two members named {name!r}: the fixture would lose a file")
        self._names.add(name)
        info = zipfile.ZipInfo(name, date_time=stamp.timetuple()[:6])
        info.compress_type = zipfile.ZIP_DEFLATED
        info.create_system = 3
        info.external_attr = 0o100644 << 16
        self._zip.writestr(info, data)

    def __enter__(self) -> "_Zip":
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()


def _local(moment: datetime, zone: tzinfo | None) -> datetime:
    """``moment`` as the wall-clock time of ``zone``, without the zone (what a zip member stores)."""
    return moment.astimezone(zone).replace(tzinfo=None)


def _hour12(moment: datetime) -> int:
    return moment.hour % 12 or 12


# ----------------------------------------------------------------------------- Canvas


def _is_word(ch: str) -> bool:
    """Onigmo's [[:word:]]: a letter, a mark, a decimal digit or a connector such as '_'."""
    category = unicodedata.category(ch)
    return category[0] in "LM" or category in ("Nd", "Pc")


def _canvas_prefix(s: Student) -> str:
    """ContentZipper#get_filename: sortable name (lower case) [_LATE] _user id, non-word chars dropped."""
    name = re.sub(r"_([0-9]+)_", r"\1", s.sortable_name).lower()
    raw = "_".join([name] + (["LATE"] if s.late else []) + [str(s.user_id)])
    return "".join(ch for ch in raw if _is_word(ch))


def _canvas_unique(filename: str, taken: set[str]) -> str:
    """Attachment.make_unique_filename: 'attention.ipynb' taken -> 'attention-1.ipynb'."""
    if filename not in taken:
        return filename
    found = re.search(r"(\.[A-Za-z][A-Za-z0-9]*)*(\.[A-Za-z0-9]*)$", filename)
    ext = found.group(0) if found else ""
    base = filename[: len(filename) - len(ext)]
    n = 1
    while f"{base}-{n}{ext}" in taken:
        n += 1
    return f"{base}-{n}{ext}"


def canvas_download(students: Iterable[Student], *, assignment_name: str = ASSIGNMENT, due_at: datetime,
                    downloaded_at: datetime, path: str | Path) -> list[dict]:
    """Canvas's "Download Submissions" zip: only the current attempt, flat, stamped with the zipping time."""
    students = _checked(students, due_at=due_at, downloaded_at=downloaded_at)
    _check_late(students, due_at)
    attachment_ids = _upload_ids(students, first=71_000_001)
    stamp = _local(downloaded_at, timezone.utc)  # rubyzip: DOSTime.now on a UTC server
    expected = []
    with _Zip(path) as archive:
        for s in sorted(students, key=lambda s: s.user_id):
            order = _order(s)
            if not order:
                expected.append(_absent(s, assignment_name))
                continue
            taken: set[str] = set()
            display = {}
            for i in order:  # the user's Submissions folder renames a repeated file name
                display[i] = _canvas_unique(s.uploads[i].filename, taken)
                taken.add(display[i])
            newest = order[-1]
            safe = re.sub(r'[\x00/\\:*?"<>|]+', "_", display[newest])
            member = f"{_canvas_prefix(s)}_{attachment_ids[(s.user_id, newest)]}_{safe}"
            archive.add(member, s.uploads[newest].content, stamp)
            marker = "the LATE marker in the member name" if s.late else "no LATE marker in the member name"
            evidence = (f"{assignment_name}: {marker}; older attempts are not in the zip and every member "
                        "is stamped with the download time")
            expected.append(_expect(s, member, [], None, evidence))
    return expected


def canvas_gradebook_csv(students: Iterable[Student], *, assignment_column: str, points_possible: float,
                         path: str | Path, section: str = "The Mathematics of Attention",
                         scores: dict[int, float] | None = None) -> list[list[str]]:
    """The instructor's gradebook export (GradebookExporter#csv_data), one assignment group "Assignments"."""
    students = _checked(students)
    if not re.fullmatch(r".+ \([0-9]+\)", assignment_column):
        raise ValueError(f"assignment_column must read '<name> (<assignment id>)', got {assignment_column!r}")
    scores = scores or {}
    totals = ["Current Score", "Unposted Current Score", "Final Score", "Unposted Final Score"]
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment_column]
            + [f"Assignments {t}" for t in totals] + totals,
            ["    Points Possible", "", "", "", "", f"{points_possible:.2f}"] + ["(read only)"] * 8]
    for s in sorted(students, key=lambda s: (_collation(s.sortable_name), s.user_id)):
        score = scores.get(s.user_id)
        if score is None:
            cells = ["", "", "", "0.00", "0.00"]
        else:
            percent = f"{100 * score / points_possible:.2f}"
            cells = [f"{score:.2f}"] + [percent] * 4
        rows.append([s.sortable_name, str(s.user_id), "", s.login, section] + cells + cells[1:])
    with open(path, "w", newline="", encoding="utf-8") as out:
        csv.writer(out, lineterminator="\n").writerows(rows)
    return rows


def _collation(name: str) -> str:
    """Accent- and case-blind order, as the database's collation sorts sortable names."""
    stripped = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return stripped.casefold()


# ----------------------------------------------------------------------------- Moodle


def _moodle_clean(name: str) -> str:
    """clean_filename / PARAM_FILE: control characters and & < > " ` | ' : \\ / are removed."""
    return re.sub(r"[\x00-\x1f\x7f&<>\"`|':\\/]", "", name)


def moodle_participant_ids(students: Iterable[Student], assignment_name: str = ASSIGNMENT) -> dict[int, int]:
    """assign_user_mapping ids: allocate_unique_ids gives the class consecutive ids in a shuffled order."""
    user_ids = sorted(s.user_id for s in _checked(students))
    random.Random(assignment_name).shuffle(user_ids)
    return {uid: 3_400_001 + n for n, uid in enumerate(user_ids)}


def moodle_download(students: Iterable[Student], *, assignment_name: str = ASSIGNMENT, assignment_cmid: int,
                    downloaded_at: datetime, path: str | Path, folders: bool = True) -> list[dict]:
    """mod_assign's "Download all submissions": the current submission's files, in folders or flat."""
    students = _checked(students, downloaded_at=downloaded_at)
    pids = moodle_participant_ids(students, assignment_name)
    stamp = _local(downloaded_at, downloaded_at.tzinfo)  # ZipStream: the time of the download
    layout = "in folders" if folders else "flat"
    expected = []
    with _Zip(path) as archive:
        for s in sorted(students, key=lambda s: s.user_id):
            order = _order(s)
            if not order:
                expected.append(_absent(s, assignment_name))
                continue
            upload = s.uploads[order[-1]]  # a new upload replaces the file in the submission
            prefix = _moodle_clean(f"{s.full_name.replace('_', ' ')}_{pids[s.user_id]}")
            filename = _moodle_clean(upload.filename)
            if folders:
                member = f"{_moodle_clean(prefix + '_assignsubmission_file')}/{filename}"
            else:
                member = _moodle_clean(f"{prefix}_assignsubmission_file_{filename}")
            archive.add(member, upload.content, stamp)
            evidence = (f"{assignment_name} (cmid {assignment_cmid}, {layout}): nothing in the zip tells the "
                        "submission time, every member is stamped with the download time; only the grading "
                        "worksheet's Status says late")
            expected.append(_expect(s, member, [], None, evidence))
    return expected


def _moodle_date(moment: datetime) -> str:
    """userdate() with strftimedaydatetime '%A, %d %B %Y, %I:%M %p', leading zeros of day and hour dropped."""
    return f"{moment:%A}, {moment.day} {moment:%B} {moment.year}, {_hour12(moment)}:{moment:%M} {moment:%p}"


def _moodle_duration(seconds: int) -> str:
    """format_time(): the two largest units, e.g. '2 hours 5 mins', '1 day 3 hours', '7 mins'."""
    days, rest = divmod(abs(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    mins, secs = divmod(rest, 60)
    parts = [(days, "day", "days"), (hours, "hour", "hours"), (mins, "min", "mins"), (secs, "sec", "secs")]
    words = [f"{n} {one if n == 1 else many}" for n, one, many in parts]
    for k, (n, _, _) in enumerate(parts):
        if n:
            tail = words[k + 1] if k + 1 < len(parts) and parts[k + 1][0] else ""
            return f"{words[k]} {tail}".strip()
    return "now"


def _php_csv_line(fields: Sequence[str]) -> str:
    """PHP's fputcsv: a field is quoted when it holds a comma, quote, backslash, space, tab or newline."""
    quoted = ['"' + f.replace('"', '""') + '"' if re.search(r'[,"\\ \t\r\n]', f) else f for f in fields]
    return ",".join(quoted) + "\n"


def _moodle_status(s: Student, due_at: datetime | None, zone: tzinfo) -> str:
    """The grading table's Status cell as downloaded: its <div>s joined by ' - '."""
    order = _order(s)
    if not order:
        return "No submission"
    parts = ["Submitted for grading"]
    due = s.extension_until or due_at
    submitted = int(s.uploads[order[-1]].uploaded_at.timestamp())
    if s.late:
        if due is None:
            raise ValueError(f"due_at is needed to write the Status of the late student {s.full_name}")
        parts.append(f"{_moodle_duration(submitted - int(due.timestamp()))} late")
    if s.extension_until is not None:
        parts.append(f"Extension granted until: {_moodle_date(s.extension_until.astimezone(zone))}")
    return " - ".join(parts)


def moodle_grading_worksheet(students: Iterable[Student], *, assignment_name: str = ASSIGNMENT,
                             max_grade: float, path: str | Path,
                             due_at: datetime | None = None) -> list[list[str]]:
    """The offline grading worksheet (assign_grading_table downloaded as CSV), file submissions only."""
    students = _checked(students, due_at=due_at)
    if due_at is not None:
        _check_late(students, due_at)
    zone = (due_at.tzinfo if due_at is not None else None) or timezone.utc
    pids = moodle_participant_ids(students, assignment_name)
    rows = [["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
             "Grade can be changed", "Last modified (submission)", "Last modified (grade)",
             "Feedback comments"]]
    for s in sorted(students, key=lambda s: s.user_id):
        order = _order(s)
        modified = _moodle_date(s.uploads[order[-1]].uploaded_at.astimezone(zone)) if order else "-"
        status = _moodle_status(s, due_at, zone)
        rows.append([f"Participant {pids[s.user_id]}", s.full_name, s.address, status, "", f"{max_grade:.2f}",
                     "Yes", modified, "-", ""])
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write("\ufeff" + "".join(_php_csv_line(row) for row in rows))
    return rows


# ----------------------------------------------------------------------------- Blackboard


def _blackboard_date(moment: datetime) -> str:
    """'Date Submitted:' as Blackboard Learn (en_US) writes it: 'Friday, March 8, 2024 11:52:03 PM CST'."""
    return (f"{moment:%A}, {moment:%B} {moment.day}, {moment.year} "
            f"{_hour12(moment)}:{moment:%M}:{moment:%S} {moment:%p} {moment.tzname()}")


def _blackboard_receipt(s: Student, assignment: str, when: datetime, original: str, member: str) -> bytes:
    lines = [f"Name: {s.full_name} ({s.login})", f"Assignment: {assignment}",
             f"Date Submitted: {_blackboard_date(when)}", "Current Grade: Needs Grading", "",
             "Submission Field:", "There is no student submission text data for this assignment.", "",
             "Comments:", "There are no student comments for this assignment.", "",
             "Files:", f"\tOriginal filename: {original}", f"\tFilename: {member}", ""]
    return "\n".join(lines).encode("utf-8")


def blackboard_download(students: Iterable[Student], *, assignment_name: str = ASSIGNMENT, due_at: datetime,
                        downloaded_at: datetime, path: str | Path, attempts: str = "all") -> list[dict]:
    """Grade Center's "Assignment File Download": every chosen attempt's files plus one .txt receipt each."""
    if attempts not in ("all", "last"):
        raise ValueError(f"attempts must be 'all' or 'last', got {attempts!r}")
    students = _checked(students, due_at=due_at, downloaded_at=downloaded_at)
    _check_late(students, due_at)
    zone = downloaded_at.tzinfo  # the server's time zone
    stamp = _local(downloaded_at, zone)
    expected = []
    with _Zip(path) as archive:
        for s in sorted(students, key=lambda s: s.login):
            order = _order(s)
            chosen = order if attempts == "all" else order[-1:]
            members = []
            for i in chosen:
                when = s.uploads[i].uploaded_at.astimezone(zone).replace(microsecond=0)
                stem = f"{assignment_name}_{s.login}_attempt_{when:%Y-%m-%d-%H-%M-%S}"
                member = f"{stem}_{s.uploads[i].filename}"
                archive.add(member, s.uploads[i].content, stamp)
                receipt = _blackboard_receipt(s, assignment_name, when, s.uploads[i].filename, member)
                archive.add(f"{stem}.txt", receipt, stamp)
                members.append((member, when, stem))
            if not members:
                expected.append(_absent(s, assignment_name))
                continue
            member, when, stem = members[-1]
            evidence = f"{assignment_name}: 'Date Submitted' in {stem}.txt, the attempt time in the name"
            expected.append(_expect(s, member, [m for m, _, _ in members[:-1]], when, evidence))
    return expected


# ----------------------------------------------------------------------------- Brightspace


def _brightspace_date(moment: datetime) -> str:
    """The date in a Brightspace folder name: 'Mar 8, 2024 1152 PM' (no colon, no leading zero)."""
    return f"{moment:%b} {moment.day}, {moment.year} {_hour12(moment)}{moment:%M} {moment:%p}"


def _brightspace_index(assignment_name: str, rows: list[tuple[str, str, str]]) -> bytes:
    cells = ["".join(f"<td>{html.escape(text)}</td>" for text in row) for row in rows]
    body = "\n".join(f"<tr>{row}</tr>" for row in cells)
    title = html.escape(assignment_name)
    page = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n"
            f"<body><h1>{title}</h1>\n<table>\n"
            "<tr><th>Submitted By</th><th>Date Submitted</th><th>File</th></tr>\n"
            f"{body}\n</table></body></html>\n")
    return page.encode("utf-8")


def brightspace_download(students: Iterable[Student], *, assignment_name: str = ASSIGNMENT, due_at: datetime,
                         downloaded_at: datetime, path: str | Path) -> list[dict]:
    """Brightspace Assignments' "Download": a folder per submission, every submission kept, and index.html."""
    students = _checked(students, due_at=due_at, downloaded_at=downloaded_at)
    _check_late(students, due_at)
    zone = downloaded_at.tzinfo  # the downloading user's time zone
    stamp = _local(downloaded_at, zone)
    submission_ids = _upload_ids(students, first=152_001)
    file_ids = _upload_ids(students, first=351_001)
    expected, index = [], []
    with _Zip(path) as archive:
        for s in sorted(students, key=lambda s: _collation(s.sortable_name)):
            members = []
            for i in _order(s):
                when = s.uploads[i].uploaded_at.astimezone(zone).replace(second=0, microsecond=0)
                key = (s.user_id, i)
                folder = f"{submission_ids[key]}-{file_ids[key]} - {s.full_name} - {_brightspace_date(when)}"
                member = f"{folder}/{s.uploads[i].filename}"
                archive.add(member, s.uploads[i].content, stamp)
                index.append((s.full_name, _brightspace_date(when), member))
                members.append((member, when))
            if not members:
                expected.append(_absent(s, assignment_name))
                continue
            member, when = members[-1]
            evidence = f"{assignment_name}: the submission date in the folder name (to the minute)"
            expected.append(_expect(s, member, [m for m, _ in members[:-1]], when, evidence))
        archive.add("index.html", _brightspace_index(assignment_name, index), stamp)
    return expected


# ----------------------------------------------------------------------------- Gradescope


def _ruby_time(moment: datetime) -> str:
    """A Time as Ruby's YAML writes it in UTC: '2024-03-08 17:52:03.123456000 Z'."""
    utc = moment.astimezone(timezone.utc)
    return f"{utc:%Y-%m-%d %H:%M:%S}.{utc.microsecond:06d}000 Z"


def _yaml_text(value: str) -> str:
    """A plain YAML scalar, single-quoted where YAML would read it as something else."""
    plain = re.fullmatch(r"[A-Za-z\u00c0-\uffff][^:#\"\n]*|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+", value)
    return value if plain and not value.isdigit() else "'" + value.replace("'", "''") + "'"


def _gradescope_entry(folder: str, s: Student, created: datetime, history: list[tuple[int, datetime]]) -> str:
    lines = [f"{folder}:", "  :submitters:", f"  - :name: {_yaml_text(s.full_name)}",
             f"    :sid: {_yaml_text(s.login)}", f"    :email: {_yaml_text(s.address)}",
             f"  :created_at: {_ruby_time(created)}", "  :score:"]
    lines.append("  :history:" + ("" if history else " []"))
    for old_id, old_time in history:
        lines += [f"  - :id: {old_id}", f"    :created_at: {_ruby_time(old_time)}", "    :score:"]
    return "\n".join(lines) + "\n"


def gradescope_download(students: Iterable[Student], *, assignment_name: str = ASSIGNMENT, assignment_id: int,
                        due_at: datetime, downloaded_at: datetime, path: str | Path) -> list[dict]:
    """Gradescope's "Export Submissions": the active submission's files and submission_metadata.yml."""
    students = _checked(students, due_at=due_at, downloaded_at=downloaded_at)
    _check_late(students, due_at)
    ids = _upload_ids(students, first=200_000_001)
    root = f"assignment_{assignment_id}_export/"
    stamp = _local(downloaded_at, timezone.utc)
    expected, metadata, used = [], [], set()
    with _Zip(path) as archive:
        for s in sorted(students, key=lambda s: s.user_id):
            order = _order(s)
            if not order:
                expected.append(_absent(s, assignment_name))
                continue
            newest = s.uploads[order[-1]]
            active_id = s.submission_id or ids[(s.user_id, order[-1])]
            if active_id in used:
                raise ValueError(f"students: submission id {active_id} of {s.full_name} is used twice")
            used.add(active_id)
            folder = f"submission_{active_id}"
            member = f"{root}{folder}/{newest.filename}"
            archive.add(member, newest.content, stamp)
            history = [(ids[(s.user_id, i)], s.uploads[i].uploaded_at) for i in order[:-1]]
            metadata.append(_gradescope_entry(folder, s, newest.uploaded_at, history))
            evidence = f"{assignment_name}: :created_at of {folder} in submission_metadata.yml"
            expected.append(_expect(s, member, [], newest.uploaded_at.astimezone(timezone.utc), evidence))
        archive.add(f"{root}submission_metadata.yml", "".join(metadata).encode("utf-8"), stamp)
    return expected
