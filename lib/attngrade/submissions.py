"""Finding submissions, reading them defensively, and rebuilding them from the release.

Discovery (:func:`discover`) accepts, for ``SUBMISSIONS`` (a folder or a zip of one):

* **nbgrader**: ``<student>/<assignment>/<notebook>.ipynb`` (with ``timestamp.txt``), as in a
  course's ``submitted/`` folder (a course root holding ``submitted/`` works too). The assignment
  folder's name is matched without regard to case (``02_Attention``); a notebook handed in
  without it (``<student>/<notebook>.ipynb``) is that student's too. The notebook must have the
  released name; other notebooks are listed as ignored.
* **LMS downloads** as each LMS writes them (:mod:`attngrade.lms`): Canvas, Moodle (folders or
  flat), Blackboard, Brightspace and Gradescope. The identity is the LMS's user id wherever the
  download holds one, and the student's own file name never makes a new student.
* **flat folder** of notebooks named by student (rules in :func:`parse_filename`).
* **zip** of any of these (enclosing folders are fine). A member name without the zip's UTF-8
  flag that is UTF-8 (macOS's Archive Utility) is read as UTF-8; names are taken in NFC
  (:func:`_member_names`).

Every notebook becomes a row: one that no rule places is a ``malformed`` row naming the file.
The discovery stage never follows a link and keeps whatever one entry holds (a name that is not
UTF-8, a FIFO, a zip member too large) to that entry's submission. A submitted notebook is never
trusted: :mod:`attngrade.reading` parses it in a bounded child process, and :func:`rebuild` takes from it only the sources of the answer cells, by the grade
ids that the *released* notebook declares. Every difference from the release that a student
could use to cheat (deleted, duplicated or retyped cells, edited nbgrader metadata, points,
tags, locked cells) is reported as a tampering flag and has no effect on the grade.
"""

from __future__ import annotations

import calendar
import copy
import hashlib
import os
import re
import stat
import tempfile
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from pathlib import Path

from . import lms
from .late import read_time, utc_text
from .names import base_id, clip_bytes, distinct_ids, shown
from .notebooks import cell_grade_id
from .reading import MAX_FILE_BYTES, SubmissionError, read_small

__all__ = [
    "Discovery",
    "Submission",
    "discover",
    "discover_class",
    "student_from_filename",
    "parse_filename",
    "FileName",
    "other_assignment",
    "rebuild",
    "Rebuilt",
    "SubmissionError",
    "Unpacked",
]

#: The most a class's zip may expand to; every student gets a fair share (:func:`_shares`).
MAX_ZIP_BYTES = 2 * 2**30
#: The most a file that is no notebook is unpacked with (receipts, metadata); larger ones are listed.
MAX_OTHER_BYTES = 2**20
_IGNORED = {"__MACOSX", ".ipynb_checkpoints", "__pycache__"}
_METADATA = {"submission_metadata.yml", "index.html"}  # Gradescope's, Brightspace's


@dataclass
class Submission:
    student: str
    path: Path | None  # the notebook; None when it is missing
    layout: str  # nbgrader, flat, or the LMS whose download it is (canvas, moodle, ...)
    timestamp: str | None = None  # UTC, nbgrader's format; from the best evidence (see ``evidence``)
    problem: tuple[str, str] | None = None  # (status, reason) found while discovering
    notes: list = field(default_factory=list)
    source: str = ""  # the file graded, as named in the submissions
    ignored: list = field(default_factory=list)  # [(file, why)] files of this student not graded
    late: bool | None = None  # the LMS's own verdict (True late, False on time); None: it gives none
    evidence: str = ""  # where ``timestamp`` (or, without one, the verdict) comes from
    submission_id: int | None = None  # the LMS's id of the file graded (Canvas's file id)
    name: str = ""  # the name the id was made from (before sanitising)
    lms: str = ""  # the LMS of the download ("" for nbgrader and flat folders)
    lms_id: str = ""  # the student's id in that LMS (Canvas user id, Moodle participant id, ...)
    due: str | None = None  # the student's own deadline (UTC), from a deadlines file or the LMS


@dataclass
class Discovery:
    """What :func:`discover_class` found: the submissions and what the instructor must know."""

    subs: list
    warnings: list = field(default_factory=list)
    lms: str = ""  # the LMS whose download this is, when one is


@dataclass
class FileName:
    """What a flat folder's file name says (see :func:`parse_filename`)."""

    student: str | None
    name: str  # the student's part of the file name, before sanitising
    late: bool | None = None
    submission_id: int | None = None
    copy: int | None = None  # a copy or resubmission counter: ``alice (1)``, ``alice_softmax-2``
    notes: list = field(default_factory=list)
    lms: str = ""  # the LMS whose name it is (attngrade.lms)
    lms_id: str = ""
    own: str = ""  # the student's own file name inside an LMS's name


def _strip_names(stem: str, names: set) -> str | None:
    """``stem`` without a trailing ``_<name>`` of ``names``; None when it is one of them."""
    low = stem.lower()
    for n in sorted(names, key=len, reverse=True):
        if low == n:
            return None
        if low.endswith("_" + n):
            return stem[: -len(n) - 1]
    return stem


def _lms_filename(filename: str) -> FileName | None:
    placed = lms.name_owner(unicodedata.normalize("NFC", filename), timezone.utc, {})
    if placed is None:
        return None
    notes = ["marked late by the LMS"] if placed.late else []
    return FileName(clip_bytes(base_id(placed.label), 100) or None, placed.label, placed.late, placed.order,
                    None, notes, placed.lms, placed.lms_id, placed.own)


def parse_filename(
    filename: str, notebook: str, assignment: str, *, assignment_suffix: bool = True
) -> FileName:
    """Read a flat folder's file name: the student, LMS tokens, late markers, copy counters.

    An LMS's download name (:mod:`attngrade.lms`: Canvas ``<name>[_LATE]_<user id>_<file id>_<file>``,
    Moodle ``<Full Name>_<id>_assignsubmission_file_<file>``) gives ``<name>_<user id>``: the user
    id is the identity, and the student's own file name after it (``attention-Copy1.ipynb``) is
    no part of it. Other names, without ``.ipynb``; nothing is removed unless its pattern is
    unambiguous, so two different file names never give one student by accident:

    1. a browser's copy marker ``alice (1)`` is removed and noted;
    2. a trailing ``_<notebook>`` or ``_<assignment>`` is removed (``alice_softmax``,
       ``alice_01_softmax``), with a resubmission counter after it (``alice_softmax-2``); a name
       that *is* the notebook or assignment names nobody;
    3. what is left is the student id (:func:`attngrade.names.base_id`). ``s_1001``, ``team-01``,
       ``alice_2`` stay as they are: one number alone is not an LMS token.

    ``student_01_softmax`` reads as ``student`` + ``_01_softmax`` or as ``student_01`` +
    ``_softmax``; with ``assignment_suffix=False`` only ``_<notebook>`` is removed.
    :func:`discover` decides that for a whole folder (see :func:`_folder_uses_assignment_suffix`).
    """
    from_lms = _lms_filename(filename)
    if from_lms is not None:
        return from_lms
    stem = filename[:-6] if filename.lower().endswith(".ipynb") else filename
    copy_no, notes = None, []
    m = re.fullmatch(r"(.*?)\s+\((\d+)\)", stem)
    if m and m.group(1):
        stem, copy_no = m.group(1), int(m.group(2))
        notes.append(f"file is a copy ({copy_no})")
    names = {notebook.lower(), assignment.lower()} if assignment_suffix else {notebook.lower()}
    counter = re.fullmatch(r"(.*?)-(\d{1,3})", stem)
    if counter:  # "-2" counts resubmissions only after the notebook's name
        rest = _strip_names(counter.group(1), names)
        if rest is not None and rest != counter.group(1):
            notes.append(f"LMS resubmission counter -{counter.group(2)}")
            copy_no = int(counter.group(2))
            return FileName(clip_bytes(base_id(rest), 100) or None, rest, None, None, copy_no, notes)
    rest = _strip_names(stem, names)
    if rest is None:
        return FileName(None, stem, copy=copy_no, notes=notes)
    return FileName(clip_bytes(base_id(rest), 100) or None, rest, None, None, copy_no, notes)


def _folder_uses_assignment_suffix(names: list[str], notebook: str, assignment: str) -> bool:
    """False when some file of the folder ends in ``_<notebook>`` without ``_<assignment>``:
    then the folder's convention is the short one and ``x_01_softmax`` is student ``x_01``."""
    short, long_ = "_" + notebook.lower(), "_" + assignment.lower()
    for name in names:
        stem = re.sub(r"(\s+\(\d+\)|-\d{1,3})$", "", name[:-6] if name.lower().endswith(".ipynb") else name)
        low = stem.lower()
        if low.endswith(short) and not low.endswith(long_):
            return False
    return True


def student_from_filename(filename: str, notebook: str, assignment: str) -> tuple[str | None, list[str]]:
    """The student id a flat folder's file name gives, or None; plus notes (:func:`parse_filename`)."""
    parsed = parse_filename(filename, notebook, assignment)
    return parsed.student, parsed.notes


def _kind(path: Path) -> str:
    """``dir``, ``file``, ``link``, ``other`` or ``absent``, from ``lstat``: links are never followed."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    if stat.S_ISLNK(mode):
        return "link"
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _read_timestamp(folder: Path, zone: tzinfo) -> tuple[datetime | None, list[str]]:
    """nbgrader's ``timestamp.txt`` in ``folder``, read in the course's ``zone`` (an offset or
    zone it states is honoured: :func:`attngrade.late.read_time`); the notes."""
    path = folder / "timestamp.txt"
    if _kind(path) == "absent":
        return None, []
    try:
        text = read_small(path, 4096).decode("utf-8", "replace").strip()[:100]
    except OSError:
        return None, ["timestamp.txt unreadable (not a plain text file); no submission time recorded"]
    try:
        return read_time(text, zone), []
    except ValueError as exc:
        return None, [f"timestamp.txt: {shown(str(exc))[:160]}; no submission time recorded"]


@dataclass
class Unpacked:
    """A zip unpacked into ``root``; ``problems``: members left out (an empty file in their place),
    ``listed``: files that are no notebook, listed but not unpacked (an empty file in their place)."""

    root: Path
    problems: dict = field(default_factory=dict)  # Path -> why the member was not unpacked
    listed: dict = field(default_factory=dict)  # Path -> its size in the zip


def _raw_name(info: zipfile.ZipInfo) -> str:
    """A member's name as its writer meant it. Without the UTF-8 flag (bit 11) zipfile reads the
    name as cp437, but macOS's Archive Utility writes UTF-8 (often NFD) without the flag: a name
    whose bytes are valid UTF-8 and not plain ASCII is read as UTF-8. Other names (a Windows
    zip's OEM code page, which no rule tells apart) are kept as zipfile reads them."""
    if info.flag_bits & 0x800:
        return info.filename
    try:
        raw = info.filename.encode("cp437")
        return info.filename if raw.isascii() else raw.decode("utf-8")
    except UnicodeError:
        return info.filename


def _member_names(infos: list) -> list[str]:
    """Each member's name (:func:`_raw_name`) in Unicode NFC, so that ids and shown names are the
    same from an NFD zip (macOS) as from an NFC one; a name whose NFC form another member has
    keeps its own form (nothing is unpacked over another member)."""
    raw = [_raw_name(i) for i in infos]
    present = set(raw)
    nfc = [unicodedata.normalize("NFC", r) for r in raw]
    return [n if n == r or n not in present else r for r, n in zip(raw, nfc)]


def _member_parts(name: str) -> list[str] | None:
    """The path of a zip member below the unpacking folder, or None when it must be skipped."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or name.startswith(("/", "\\")) or ".." in parts:
        return None
    if any(p in _IGNORED or p.startswith(".") for p in parts):
        return None
    return [p if len(p.encode("utf-8")) <= 200 else clip_bytes(p, 180) + "~" + _digest(p) for p in parts]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _unpack_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, budget: int) -> str | None:
    """Unpack one member to ``target``; why it was left out, or None."""
    if (info.external_attr >> 16) & 0o170000 == 0o120000:
        return "is a symbolic link in the zip; links are not followed"
    if info.file_size > MAX_FILE_BYTES:
        return f"is {info.file_size} bytes in the zip (limit {MAX_FILE_BYTES})"
    if info.file_size > budget:
        return (f"was not unpacked: it is {info.file_size} bytes and this student's share of the "
                f"{MAX_ZIP_BYTES} bytes a class's zip may expand to has {budget} left")
    try:
        with zf.open(info) as src, open(target, "wb") as dst:
            copied = 0
            while chunk := src.read(1 << 20):
                copied += len(chunk)
                if copied > info.file_size:
                    raise ValueError("more bytes than the zip declares")
                dst.write(chunk)
    except (zipfile.BadZipFile, zlib.error, ValueError, RuntimeError, NotImplementedError, EOFError) as exc:
        return f"could not be unpacked ({type(exc).__name__}: {str(exc)[:80]})"
    return None


def _owner_hint(parts: list[str], depth: int) -> str:
    """Whose a zip member probably is, to share the zip's size limit: the folder below the
    enclosing ones, else the student an LMS's or a flat file name gives."""
    if len(parts) > depth + 1:
        return "/".join(parts[: depth + 1])
    name = parts[-1]
    m = re.match(r"(.+?)_attempt_\d{4}-", name)  # Blackboard: the attempt's prefix
    if m:
        return m.group(1)
    placed = lms.name_owner(name, timezone.utc, {})
    if placed is not None:
        return f"{placed.lms}:{placed.lms_id}"
    return parse_filename(name, "", "").name


def _shares(requests: dict, total: int) -> dict:
    """Each owner's budget of ``total`` bytes: as much as it asks while everyone's equal share of
    what is left lasts (water filling), so one large submission never crowds out the others."""
    left, shares = total, {}
    owners = sorted(requests, key=lambda o: requests[o])
    for i, owner in enumerate(owners):
        shares[owner] = min(requests[owner], left // (len(owners) - i))
        left -= shares[owner]
    return shares


def _plan(members: list) -> tuple[list, dict]:
    """Each member's owner (:func:`_owner_hint`) and ``{owner: budget}`` for the notebooks
    among ``members`` [(info, parts)]."""
    def enclosing(depth: int) -> bool:  # a folder every member is inside (an export's own) is nobody's
        return all(len(p) > depth + 1 for _, p in members) and len({p[depth] for _, p in members}) == 1

    depth = 0
    while members and enclosing(depth):
        depth += 1
    owners, requests = [], {}
    for info, parts in members:
        owner = _owner_hint(parts, depth)
        owners.append(owner)
        if parts[-1].lower().endswith(".ipynb"):
            requests[owner] = requests.get(owner, 0) + info.file_size
    return owners, _shares(requests, MAX_ZIP_BYTES)


def _unpack(zf: zipfile.ZipFile, info, owner: str, target: Path, budgets: dict, unpacked: Unpacked) -> None:
    """One member to ``target``: a notebook within its owner's share, a small other file, or
    an empty file in its place (listed, or recorded as a problem)."""
    notebook = target.name.lower().endswith(".ipynb")
    limit = 64 * MAX_OTHER_BYTES if target.name in _METADATA else MAX_OTHER_BYTES
    if not notebook and info.file_size > limit:
        target.write_bytes(b"")
        unpacked.listed[target] = info.file_size
        return
    budget = budgets.get(owner, 0) if notebook else limit
    why = _unpack_member(zf, info, target, budget)
    if why is not None:
        target.write_bytes(b"")
        unpacked.problems[target] = why
        return
    if notebook:
        budgets[owner] -= info.file_size
    stamp = calendar.timegm((*info.date_time, 0, 0, 0))
    os.utime(target, (stamp, stamp))


def _extract_zip(path: Path, into: Path) -> Unpacked:
    """Unpack safely: no member outside ``into``, no links. Each student's notebooks share the
    size limit fairly (:func:`_shares`); a member too large or unreadable is left out and
    recorded (it makes its student's submission ``malformed``, nobody else's); a file that is
    no notebook and over :data:`MAX_OTHER_BYTES` is listed without its bytes. Every file gets
    the time the zip stored for it (read as UTC)."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{path} is not a readable zip file: {exc}") from exc
    unpacked = Unpacked(into)
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        members = [(i, p) for i, name in zip(infos, _member_names(infos)) for p in [_member_parts(name)] if p]
        owners, budgets = _plan(members)
        for (info, parts), owner in zip(members, owners):
            target = into.joinpath(*parts)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                _unpack(zf, info, owner, target, budgets, unpacked)
            except (OSError, ValueError, OverflowError):
                continue  # a member whose path cannot be made here (a file where a folder is)
    return unpacked


def _visible(p: Path) -> bool:
    return not (p.name.startswith(".") or p.name in _IGNORED)


def _open_root(path: str | Path, workdir: str | None) -> tuple[Path, bool, Unpacked | None]:
    root = Path(path)
    if not root.exists():
        raise ValueError(f"{path}: no such file or folder; give the folder or zip of the submissions")
    zipped = root.is_file() and zipfile.is_zipfile(root)
    unpacked = None
    if zipped:
        unpacked = _extract_zip(root, Path(tempfile.mkdtemp(prefix="attngrade-zip-", dir=workdir)))
        root = unpacked.root
    if not root.is_dir():
        raise ValueError(
            f"{path} is neither a folder nor a zip file; give the folder or zip of the submissions"
        )
    return root, zipped, unpacked


@dataclass
class _File:
    """A file (or link, FIFO, or folder named like a notebook) below the submissions folder."""

    path: Path
    parts: tuple  # its path below the submissions folder
    kind: str  # file, link, other, dir

    @property
    def source(self) -> str:
        return shown("/".join(self.parts))

    @property
    def notebook(self) -> bool:
        return self.parts[-1].lower().endswith(".ipynb")


def _walk(base: Path, depth: int = 16) -> list[_File]:
    """Every file below ``base`` (hidden ones and ``__MACOSX`` aside); links are not followed."""
    out, stack = [], [(base, ())]
    while stack:
        folder, parts = stack.pop()
        try:
            children = list(folder.iterdir())
        except OSError:
            continue
        for child in children:
            if not _visible(child):
                continue
            kind, rel = _kind(child), (*parts, child.name)
            if kind == "dir" and not child.name.lower().endswith(".ipynb"):
                if len(rel) < depth:
                    stack.append((child, rel))
            else:
                out.append(_File(child, rel, kind))
    return sorted(out, key=lambda f: f.parts)


def _same_assignment(folder: str, assignment: str) -> bool:
    return unicodedata.normalize("NFC", folder).casefold() == assignment.casefold()


def _names_nobody(name: str, notebook: str, assignment: str) -> bool:
    return name.lower().endswith(".ipynb") and parse_filename(name, notebook, assignment).student is None


def _is_student_folder(folder: Path, assignment: str, notebook: str) -> bool:
    """Whether ``folder`` is one student's (an LMS's folder, nbgrader's), not an enclosing one."""
    if lms.is_student_folder(folder.name):
        return True
    try:
        children = [c for c in folder.iterdir() if _visible(c)]
    except OSError:
        return True
    if any(_same_assignment(c.name, assignment) for c in children):
        return True
    notebooks = [c.name for c in children if c.name.lower().endswith(".ipynb")]
    return bool(notebooks) and all(_names_nobody(n, notebook, assignment) for n in notebooks)


def _base(root: Path, assignment: str, notebook: str) -> Path:
    """The folder holding the submissions: ``submitted/`` of a course root, or inside the folders
    that enclose everything (an export's own folder)."""
    for _ in range(6):
        entries = [p for p in root.iterdir() if _visible(p)]
        if _kind(root / "submitted") == "dir" and not any(p.name.lower().endswith(".ipynb") for p in entries):
            root = root / "submitted"
            continue
        if len(entries) != 1 or _kind(entries[0]) != "dir":
            break
        if _is_student_folder(entries[0], assignment, notebook):
            break
        root = entries[0]
    return root


@dataclass
class _Cand:
    """One notebook of one student, before the choice (:func:`_pick`)."""

    file: _File
    own: str  # the student's own file name
    attempt: tuple = ()  # orders the student's attempts; () when there is one
    order: int | None = None  # orders uploads of one attempt (Canvas's file id)
    when: datetime | None = None  # the submission time the evidence gives
    late: bool | None = None
    evidence: str = ""
    rank: int = 0  # nbgrader: 0 the assignment folder, 1 the student's folder, 2 another folder
    weak: bool = False  # ``when`` is a file's time (a flat folder's only evidence)
    notes: list = field(default_factory=list)


@dataclass
class _Student:
    """Everything placed to one student (by the key: the LMS's id, or the name)."""

    key: object  # the name (str) for nbgrader and flat folders; (lms, id) for an LMS's download
    label: str  # what the id is made from
    name: str
    layout: str
    lms: str = ""
    lms_id: str = ""
    cands: list = field(default_factory=list)
    others: list = field(default_factory=list)  # [(file, why)]: files of the student that are no notebook
    problem: tuple | None = None
    notes: list = field(default_factory=list)
    late: bool | None = None  # the LMS's verdict, from any of the student's files
    evidence: str = ""


@dataclass
class _Scan:
    """What every file of one submissions folder is read against."""

    base: Path
    assignment: str
    notebook: str
    zone: tzinfo
    zipped: bool
    unpacked: Unpacked | None
    others: set  # the course's other assignments (their folders are not this one's)
    gradescope: dict = field(default_factory=dict)
    blackboard: dict = field(default_factory=dict)  # attempt prefix -> username
    receipts: dict = field(default_factory=dict)  # Blackboard: attempt stem -> receipt
    long_suffix: bool = True
    students: dict = field(default_factory=dict)  # key -> _Student
    warnings: list = field(default_factory=list)
    weak: list = field(default_factory=list)  # submissions whose time is a file's time
    elsewhere: list = field(default_factory=list)  # notebooks left in folders named like other assignments

    @property
    def nb_file(self) -> str:
        return self.notebook + ".ipynb"

    def student(self, key, label: str, name: str, layout: str, placed=None) -> _Student:
        if key not in self.students:
            self.students[key] = _Student(key, label, name, layout, placed.lms if placed else "",
                                          placed.lms_id if placed else "")
        return self.students[key]

    def folder_student(self, folder: str) -> _Student:
        """The student of an nbgrader folder (or a flat file's name): the name is the key."""
        name = unicodedata.normalize("NFC", folder)
        return self.student(name, name, name, "nbgrader")


_RECEIPT = re.compile(r".+_attempt_\d{4}(?:-\d\d){5}\.txt")


def _read_metadata(scan: _Scan, files: list) -> None:
    """Gradescope's ``submission_metadata.yml`` and Blackboard's receipts, read before any file is
    placed (they say whose the other files are)."""
    for f in files:
        name = f.parts[-1]
        if f.kind != "file" or not (name == "submission_metadata.yml" or _RECEIPT.fullmatch(name)):
            continue
        try:
            text = read_small(f.path, 64 * MAX_OTHER_BYTES).decode("utf-8", "replace")
            if name.endswith(".txt"):
                scan.receipts[name[:-4]] = lms.read_receipt(text)
            else:
                scan.gradescope.update(lms.read_gradescope(text))
        except Exception as exc:  # noqa: BLE001 - a metadata file is evidence; without it, say so
            why = f"{type(exc).__name__}: {shown(str(exc))[:100]}"
            scan.warnings.append(f"{f.source}: unreadable ({why}); not used")
    stems = [f.parts[-1] for f in files] + list(scan.receipts)
    scan.blackboard = lms.blackboard_users(stems, scan.receipts)


def _linked(source: str) -> tuple[str, str]:
    return ("malformed", f"{source} is a symbolic link; links are not followed")


def _file_time(path: Path, zipped: bool) -> tuple[datetime, str]:
    when = datetime.fromtimestamp(os.lstat(path).st_mtime, timezone.utc)
    return when, ("the zip's stored time of the file" if zipped else "the file's modification time")


def _lms_owners(scan: _Scan, f: _File) -> list | None:
    """The students an LMS's folder or file name gives ``f`` (:mod:`attngrade.lms`), or None."""
    try:
        for i in range(len(f.parts) - 1):
            owners = lms.folder_owner(f.parts[i], "/".join(f.parts[i + 1:]), scan.zone, scan.gradescope)
            if owners:
                return owners
        top = scan.students.get(unicodedata.normalize("NFC", f.parts[0]))
        if len(f.parts) > 1 and top is not None and top.layout == "nbgrader":
            return None  # inside an nbgrader student's folder, a file's name is the student's own
        placed = lms.name_owner(unicodedata.normalize("NFC", f.parts[-1]), scan.zone, scan.blackboard)
    except ValueError:
        return None
    return [placed] if placed is not None else None


def _add_lms(scan: _Scan, f: _File, placed) -> None:
    st = scan.student((placed.lms, placed.lms_id), placed.label, placed.name, placed.lms, placed)
    if placed.late is not None:
        st.late, st.evidence = bool(st.late) or placed.late, placed.evidence
    if not f.notebook:
        size = scan.unpacked.listed.get(f.path) if scan.unpacked else None
        st.others.append((f.source, "not a notebook" + (f", {size} bytes, not unpacked" if size else "")))
        return
    st.cands.append(_Cand(f, placed.own, placed.attempt, placed.order, placed.when, placed.late, placed.evidence,
                          notes=list(placed.notes)))


def _add_receipt(scan: _Scan, f: _File) -> None:
    """A Blackboard receipt: its student has a row even when the attempt holds no notebook."""
    stem = f.parts[-1][:-4]
    prefix = stem.rsplit("_attempt_", 1)[0]
    user = scan.blackboard.get(prefix)
    if user:
        scan.student(("blackboard", user), user, user, "blackboard", lms.Placed("blackboard", user, user, ""))
    said = scan.receipts.get(stem, {}).get("submitted")
    if said and not any(w.startswith("Blackboard's receipts") for w in scan.warnings):
        try:
            read_time(re.sub(r" o'clock", "", said), scan.zone)
        except ValueError as exc:
            scan.warnings.append(f"Blackboard's receipts state their times as {said!r}, which the course's zone "
                                 f"does not read ({shown(str(exc))[:120]}): set c.AttnGrade.timezone or --timezone "
                                 "to the Blackboard server's zone, in which the file names' attempt times are read")


def _place_flat(scan: _Scan, f: _File) -> None:
    """A file at the top of a folder that no LMS's name rule reads: a notebook named by its student."""
    name = f.parts[-1]
    if not f.notebook:
        if f.kind == "link":
            scan.folder_student(name).problem = _linked(f.source)
        elif name not in _METADATA:
            scan.warnings.append(f"{f.source}: not a notebook, and its name names no student; not graded")
        return
    parsed = parse_filename(name, scan.notebook, scan.assignment, assignment_suffix=scan.long_suffix)
    label = unicodedata.normalize("NFC", parsed.name if parsed.student else name[:-6])
    st = scan.student(label, label, label, "flat")
    when, evidence = _file_time(f.path, scan.zipped)
    st.cands.append(_Cand(f, name, when=when, evidence=evidence, weak=True, notes=list(parsed.notes)))
    if parsed.student is None:
        st.problem = ("malformed", f"the file name {f.source!r} does not name a student")


def _another_assignment(f: _File, scan: _Scan) -> bool:
    """``f`` is in a folder of another assignment: the course's (left alone), or one named like
    an assignment (``01_softmax``: left alone too, and counted for a warning)."""
    low = unicodedata.normalize("NFC", f.parts[1]).casefold()
    if low in scan.others:
        return True
    if re.fullmatch(r"\d+[_-]\w.*", low):
        scan.elsewhere.append(f.source)
        return True
    return False


def _place_nbgrader(scan: _Scan, f: _File) -> None:
    """A file inside a student's folder: ``<student>/<assignment>/...``, ``<student>/<notebook>``,
    or a notebook in another folder of the student's (not another assignment's)."""
    student, rest = f.parts[0], f.parts[1:]
    ours = _same_assignment(rest[0], scan.assignment)
    if f.kind == "link" and len(rest) == 1 and ours:
        scan.folder_student(student).problem = _linked(f.source)
        return
    if not f.notebook:
        return  # timestamp.txt, data files: nbgrader's layout keeps them beside the notebook
    if len(rest) == 1:
        rank, dated = 1, f.path.parent
    elif ours:
        rank, dated = (0 if len(rest) == 2 else 3), scan.base / student / rest[0]
    elif _another_assignment(f, scan):
        return  # another assignment's notebook, in nbgrader's submitted/ folder
    else:
        rank, dated = 2, f.path.parent
    st = scan.folder_student(student)
    when, notes = _read_timestamp(dated, scan.zone)
    evidence = "nbgrader's timestamp.txt" if when else ""
    if rank == 1:
        notes.append(f"no {scan.assignment}/ folder: the notebook is in the student's folder")
    st.cands.append(_Cand(f, rest[-1], when=when, evidence=evidence, rank=rank, notes=notes))


def _nbgrader_folders(scan: _Scan) -> None:
    """Every student folder holding this assignment's folder has a row, even an empty one."""
    for entry in scan.base.iterdir():
        if not _visible(entry) or _kind(entry) != "dir":
            continue
        if lms.folder_owner(entry.name, "", scan.zone, scan.gradescope):
            continue  # an LMS's folder: its files say whose they are
        try:
            if any(_same_assignment(c.name, scan.assignment) for c in entry.iterdir()):
                scan.folder_student(entry.name)
        except OSError:
            continue


def _place(scan: _Scan, f: _File) -> None:
    """Give ``f`` to its student(s); a file that no rule places is noted."""
    name = f.parts[-1]
    if f.kind == "file" and _RECEIPT.fullmatch(name):
        return _add_receipt(scan, f)
    if len(f.parts) == 1 and name in _METADATA or name == "submission_metadata.yml":
        return None
    owners = _lms_owners(scan, f)
    for placed in owners or []:
        _add_lms(scan, f, placed)
    if owners:
        return None
    return _place_flat(scan, f) if len(f.parts) == 1 else _place_nbgrader(scan, f)


def _released_name(own: str, nb_file: str) -> bool:
    """``own`` is the released notebook's name, a copy counter of a browser or LMS aside
    (``attention (1).ipynb``, Canvas's ``attention-1.ipynb``); Jupyter's ``-Copy1`` is a copy."""
    base = own.rsplit("/", 1)[-1]
    base = re.sub(r"(?:-\d{1,3}|\s+\(\d+\))(?=\.ipynb$)", "", base, flags=re.IGNORECASE)
    return base.casefold() == nb_file.casefold()


def _released(scan: _Scan, st: _Student, cands: list) -> tuple[list, list]:
    """The notebooks that may be graded (``pool``) and why each other one is not."""
    if st.layout == "nbgrader":  # nbgrader's contract: the released name, in the assignment's folder
        named = [c for c in cands if c.own.casefold() == scan.nb_file.casefold()]
        best = min((c.rank for c in named), default=None)
        pool = [c for c in named if c.rank == best]
    else:
        named = [c for c in cands if _released_name(c.own, scan.nb_file)]
        pool = named or cands
    why = [(c.file.source, "not in the assignment folder itself" if c in named else
            f"not the released name {scan.nb_file}") for c in cands if c not in pool]
    return pool, why


def _newest(pool: list) -> tuple[_Cand | None, str]:
    """The newest of one attempt's notebooks by the best evidence, or None (a tie) and why."""
    orders = [c.order for c in pool]
    if None not in orders and len(set(orders)) == len(orders):
        return max(pool, key=lambda c: c.order), "the LMS's newest upload (the highest file id)"
    times = [c.when for c in pool]
    if None not in times and len(set(times)) == len(times):
        best = max(pool, key=lambda c: c.when)
        return best, f"the latest time ({best.evidence})"
    return None, "no evidence of which is newer (same LMS id or time)"


def _pick(scan: _Scan, st: _Student) -> tuple[_Cand | None, list, str]:
    """The notebook to grade among ``st``'s: the newest attempt's, the released name's, then the
    newest upload; None and why when none (``missing``) or no evidence decides (a tie)."""
    cands, ignored = st.cands, []
    attempts = {c.attempt for c in cands}
    if len(attempts) > 1 and all(c.attempt for c in cands):
        newest = max(attempts)
        ignored += [(c.file.source, "older") for c in cands if c.attempt != newest]
        cands = [c for c in cands if c.attempt == newest]
    pool, why = _released(scan, st, cands)
    ignored += why
    if not pool:
        return None, ignored, "missing"
    if len(pool) == 1:
        return pool[0], ignored, "the only notebook"
    best, reason = _newest(pool)
    tag = "older" if best is not None else "ambiguous: not graded"
    ignored += [(c.file.source, tag) for c in sorted(pool, key=lambda c: c.file.source) if c is not best]
    return best, ignored, reason


def _attach_file(sub: Submission, scan: _Scan, f: _File) -> None:
    """Make ``f`` the file ``sub`` grades, or give ``sub`` the problem that stops it."""
    sub.source = f.source
    problems = scan.unpacked.problems if scan.unpacked else {}
    if f.kind == "link":
        sub.problem = _linked(sub.source)
    elif f.kind != "file":
        sub.problem = ("malformed", f"{sub.source} is not a regular file")
    elif f.path in problems:
        sub.problem = ("malformed", f"{sub.source} {problems[f.path]}")
    else:
        sub.path = f.path


_NO_TIME = {
    "canvas": "Canvas's download holds no submission time (its files carry the download's time)",
    "moodle": "Moodle's download holds no submission time (its files carry the download's time)",
}


def _graded(sub: Submission, scan: _Scan, st: _Student, best: _Cand, reason: str) -> None:
    """What the graded notebook ``best`` says of ``sub``: the file, the time and its evidence."""
    _attach_file(sub, scan, best.file)
    sub.notes += best.notes
    if len(st.cands) > 1:
        sub.notes.append(f"graded {sub.source!r}: {reason} of {len(st.cands)} files")
    if st.lms and not _released_name(best.own, scan.nb_file):
        sub.notes.append(f"graded {shown(best.own)!r}, the student's own name for the notebook "
                         f"(not the released {scan.nb_file})")
    sub.submission_id = best.order
    if best.late is not None:
        sub.late = best.late
    if best.when is not None:
        sub.timestamp, sub.evidence = utc_text(best.when), best.evidence
        if best.weak:
            scan.weak.append(sub)
    elif st.lms in _NO_TIME:
        sub.evidence = "; ".join(e for e in (_NO_TIME[st.lms], sub.evidence) if e)


def _choose(scan: _Scan, st: _Student) -> Submission:
    """One student's submission: the notebook to grade (:func:`_pick`), or the problem."""
    sub = Submission("", None, st.layout, notes=list(st.notes), late=st.late, evidence=st.evidence, name=st.name,
                     lms=st.lms, lms_id=st.lms_id)
    best, ignored, reason = _pick(scan, st) if st.cands else (None, [], "missing")
    sub.ignored = ignored + st.others
    if st.problem is not None:
        sub.problem = st.problem
        sub.source = st.cands[0].file.source if st.cands else ""
        sub.ignored = [(c.file.source, "not graded") for c in st.cands[1:]] + st.others
    elif best is None and reason == "missing":
        found = [s for s, _ in sub.ignored]
        sub.problem = ("missing", f"no {scan.nb_file}" + (f"; found {', '.join(found)}" if found else
                                                         " in the submission folder"))
    elif best is None:
        files = ", ".join(sorted(c.file.source for c in st.cands))
        sub.problem = ("ambiguous", f"{len(st.cands)} files for {shown(st.name)!r} and {reason}: {files}; "
                       "keep the one to grade (or fix their times) and grade again")
    else:
        _graded(sub, scan, st, best, reason)
    return sub


def _apply_times(scan: _Scan, subs: list, times) -> None:
    """The submission times (and the LMS's verdicts and extensions) of a times CSV
    (:func:`attngrade.lms.read_times`), matched by the LMS's user id or attngrade's id."""
    if times is None:
        return
    unmatched = []
    for sub in subs:
        keys = [k for k in (sub.lms_id, sub.student) if k]
        row = next((times.rows[k.casefold() if "@" in k else k] for k in keys
                    if (k.casefold() if "@" in k else k) in times.rows), None)
        if row is None:
            unmatched.append(sub.student)
            continue
        when, late, due = row
        if when is not None:
            sub.timestamp, sub.evidence = utc_text(when), f"{shown(times.path)}, column {times.column!r}"
            scan.weak = [s for s in scan.weak if s is not sub]
        if late is not None:
            sub.late = late
        if due is not None:
            sub.due = utc_text(due)
    if unmatched:
        scan.warnings.append(f"--submission-times {shown(times.path)}: no row for {len(unmatched)} submission(s) "
                        f"({', '.join(unmatched[:10])}{', ...' if len(unmatched) > 10 else ''}); their times "
                        "are the download's evidence alone")


def _one_time(scan: _Scan, files: list) -> None:
    """Files that all carry one time carry a copy's or a download's time, not submission times:
    say so, and drop such times where they were the only evidence."""
    if not scan.weak and all(st.layout == "nbgrader" for st in scan.students.values()):
        return  # nbgrader's layout is dated by timestamp.txt alone
    stamps = {os.lstat(f.path).st_mtime for f in files if f.notebook and f.kind == "file"}
    count = sum(1 for f in files if f.notebook and f.kind == "file")
    if count < 2 or len(stamps) != 1:
        return
    when = utc_text(datetime.fromtimestamp(stamps.pop(), timezone.utc))
    dropped = [s for s in scan.weak if s.timestamp == when]
    scan.warnings.append(
        f"all {count} notebooks carry one time, {when[:19]} UTC: the time the "
        f"{'zip' if scan.zipped else 'folder'} was made, not when anyone submitted; it is not used as a "
        "submission time" + (f" ({len(dropped)} submissions have no time)" if dropped else "")
    )
    for sub in dropped:
        sub.timestamp = None
        sub.evidence = "no submission time: every file carries the same time (a download's or a copy's)"


def _namesakes(scan: _Scan) -> None:
    """Brightspace names no user id: several submissions under one name are taken as one
    student's resubmissions; say so, since two students may share the name."""
    for st in scan.students.values():
        attempts = {c.attempt for c in st.cands}
        if st.lms == "brightspace" and len(attempts) > 1:
            scan.warnings.append(
                f"Brightspace's download names no user id: the {len(attempts)} submissions named "
                f"{shown(st.name)!r} are graded as one student's (the newest); if two students share the "
                "name, grade their submissions apart"
            )


def _no_time_warning(subs: list, lms_name: str, warnings: list) -> None:
    untimed = [s for s in subs if s.lms and s.timestamp is None and s.problem is None]
    if untimed and lms_name in _NO_TIME:
        verdict = " (Canvas's LATE marker still says who is late)" if lms_name == "canvas" else ""
        warnings.append(f"{len(untimed)} submissions have no submission time: {_NO_TIME[lms_name]}{verdict}; "
                        "give the LMS's submission times with --submission-times")


def discover_class(
    path: str | Path, assignment: str, notebook: str, *, workdir: str | None = None, zone: tzinfo | None = None,
    times=None, assignments=(),
) -> Discovery:
    """Every submission of ``assignment`` under ``path`` (a folder or a zip), sorted by student,
    and the warnings the instructor must read (module docstring).

    One student with several files: the newest attempt (an LMS's attempt time or id), then the
    notebook with the released name, then the newest upload by the best evidence (an LMS's file
    id, nbgrader's ``timestamp.txt``, a flat folder's file times) is graded; the others are
    listed in ``ignored``. When nothing tells which is newer, the student's status is
    ``ambiguous`` and nothing is guessed. An LMS download's file times are never evidence.
    ``zone``: the course's time zone (:func:`attngrade.late.course_zone`); ``times``: an LMS's
    submission times (:func:`attngrade.lms.read_times`); ``assignments``: the course's
    assignments, whose folders in nbgrader's layout are not this one's. Raises ``ValueError``
    when ``path`` does not exist or holds no submission at all.
    """
    root, zipped, unpacked = _open_root(path, workdir)
    base = _base(root, assignment, notebook)
    files = _walk(base)
    others = {a.casefold() for a in assignments if a.casefold() != assignment.casefold()}
    scan = _Scan(base, assignment, notebook, zone or timezone.utc, zipped, unpacked, others)
    _read_metadata(scan, files)
    flat = [f.parts[0] for f in files if len(f.parts) == 1 and f.notebook]
    scan.long_suffix = _folder_uses_assignment_suffix(flat, notebook, assignment)
    _nbgrader_folders(scan)
    for f in files:
        _place(scan, f)
    if scan.elsewhere:
        scan.warnings.append(
            f"{len(scan.elsewhere)} notebook{'s' if len(scan.elsewhere) != 1 else ''} in folders named like "
            "other assignments left alone "
            f"({', '.join(scan.elsewhere[:5])}{', ...' if len(scan.elsewhere) > 5 else ''})"
        )
    if not scan.students:
        raise ValueError(
            f"{path}: no notebooks found (expected <student>/{assignment}/{notebook}.ipynb, <student>.ipynb "
            "files, an LMS's download (Canvas, Moodle, Blackboard, Brightspace, Gradescope), or a zip of one)"
        )
    ids = distinct_ids({key: st.label for key, st in scan.students.items()})
    subs = []
    for key, st in scan.students.items():
        sub = _choose(scan, st)
        sub.student = ids[key]
        subs.append(sub)
    _apply_times(scan, subs, times)
    _namesakes(scan)
    _one_time(scan, files)
    kinds = [s.lms for s in subs if s.lms]
    lms_name = max(set(kinds), key=kinds.count) if kinds else ""
    _no_time_warning(subs, lms_name, scan.warnings)
    return Discovery(sorted(subs, key=lambda s: s.student), scan.warnings, lms_name)


def discover(
    path: str | Path, assignment: str, notebook: str, *, workdir: str | None = None, zone: tzinfo | None = None,
    times=None, assignments=(),
) -> list[Submission]:
    """The submissions of :func:`discover_class` (its warnings aside)."""
    return discover_class(path, assignment, notebook, workdir=workdir, zone=zone, times=times,
                          assignments=assignments).subs


def other_assignment(gids: set, assignment: str, releases: dict[str, set]) -> str | None:
    """The assignment whose notebook (with grade ids ``gids``) is clearly another one's; else None.

    ``releases`` maps every assignment of the course to its release's grade ids. Grade ids
    that several releases share (``setup``, ``intro``) are no evidence either way.
    """
    count: dict[str, int] = {}
    for name, ids in releases.items():
        shared = set().union(*(v for k, v in releases.items() if k != name)) if len(releases) > 1 else set()
        count[name] = len(gids & (ids - shared))
    if count.get(assignment, 0) > 0:
        return None
    best = max((n for n in count if n != assignment), key=lambda n: count[n], default=None)
    return best if best is not None and count[best] > 0 else None


# --------------------------------------------------------------------------------------------


def _source(cell) -> str | None:
    src = cell.get("source")
    if isinstance(src, str):
        return src
    if isinstance(src, list) and all(isinstance(s, str) for s in src):
        return "".join(src)
    return None


@dataclass
class Rebuilt:
    notebook: dict  # the release with the submitted answers (for formgrader and manual grading)
    answers: dict  # grade id -> source, code answer cells only
    written: dict  # grade id -> source, other answer cells (markdown)
    flags: list  # tampering found in the structure
    unanswered: list  # answer cells left as in the release
    matched: int  # release cells found in the submission
    notes: list = field(default_factory=list)  # for the instructor: where answers were found


def _meta(cell) -> dict:
    meta = cell.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _nbmeta(cell):
    meta = _meta(cell).get("nbgrader")
    return meta if isinstance(meta, dict) else None


def _norm(src: str | None) -> str:
    return "\n".join(line.rstrip() for line in (src or "").strip().splitlines())


def rebuild(release: dict, submitted: dict) -> Rebuilt:
    """Take the answers from ``submitted`` by the release's grade ids; report tampering.

    A code answer is the cell with its grade id; one the student deleted and typed again
    without its nbgrader metadata (an added code cell defining the release's function) stands in
    for it, flagged (:func:`_standin`). A written answer (graded by hand) is whatever the student
    wrote for it (:func:`_take_written`): its cell whatever its type, the images attached to it,
    and the cells the student added right after it, so that formgrader shows all of it.
    """
    release_tags = {cell_grade_id(c): _tags(c) for c in release["cells"] if cell_grade_id(c)}
    by_gid, flags = _by_grade_id(release_tags, submitted)
    out = Rebuilt(copy.deepcopy(release), {}, {}, flags, [], 0)
    cells = submitted["cells"]
    taken: set[int] = set()  # added cells that stand in for a deleted answer
    for cell in out.notebook["cells"]:
        gid = cell_grade_id(cell)
        if not gid:
            continue
        rmeta = cell["metadata"]["nbgrader"]
        is_answer = bool(rmeta.get("solution"))
        found = by_gid.get(gid, [])
        out.matched += bool(found)
        if len(found) > 1 and not (is_answer and cell["cell_type"] == "code"):  # code answer copies run where they stand
            flags.append(f"cell {gid!r} appears {len(found)} times")
        flags.extend(_copy_flags(gid, cell, found, rmeta, is_answer))
        if not is_answer:
            if not found:
                flags.append(f"cell {gid!r} was deleted")
            continue
        stub = cell["source"]
        if cell["cell_type"] == "code":
            _take_code(out, gid, cell, found, cells, taken)
        else:
            _take_written(out, release, gid, cell, found, cells)
        if _norm(cell["source"]) == _norm(stub):
            out.unanswered.append(gid)
        if cell["cell_type"] == "code" and not rmeta.get("grade"):
            out.answers[gid] = cell["source"]
        else:
            out.written[gid] = cell["source"]
    out.flags = list(dict.fromkeys(flags))  # de-duplicated, in order
    return out


def _take_code(out: Rebuilt, gid: str, cell, found: list, cells: list, taken: set) -> None:
    """A code answer's source: the first readable code copy of it (the one at its own place,
    see :func:`attngrade.notebooks.run_plan`), or the added cell that stands in for it."""
    usable = [c for c in found if c.get("cell_type") == "code" and _source(c) is not None]
    if usable:
        cell["source"] = _source(usable[0])
        return
    if found:
        return  # there, but not as readable code: flagged, and the release's stub stands
    index = _standin(cell["source"], cells, taken)
    if index is None:
        out.flags.append(f"answer cell {gid!r} was deleted")
        return
    taken.add(index)
    cell["source"] = _source(cells[index])
    out.flags.append(
        f"answer cell {gid!r} was deleted and typed again without its nbgrader metadata: "
        f"graded from the added cell {index} of the notebook, which defines its function"
    )


def _standin(stub: str, cells: list, taken: set) -> int | None:
    """The index of the added (untracked) code cell that stands in for a deleted answer cell
    whose release source is ``stub``: the last one that defines, at its top level, a function
    that ``stub`` defines (the one in effect after a run of the notebook); None if none does."""
    names = re.findall(r"^(?:async[ \t]+)?def[ \t]+(\w+)", stub, re.M)
    if not names:
        return None
    defines = re.compile(r"^(?:async[ \t]+)?def[ \t]+(?:" + "|".join(map(re.escape, names)) + r")[ \t]*\(", re.M)
    found = [
        i for i, c in enumerate(cells)
        if i not in taken and c.get("cell_type") == "code" and cell_grade_id(c) is None
        and isinstance(_source(c), str) and defines.search(_source(c))
    ]
    return found[-1] if found else None


def _take_written(out: Rebuilt, release: dict, gid: str, cell, found: list, cells: list) -> None:
    """A written answer: the text of its cell (markdown, raw or code alike) and of the markdown
    and raw cells the student added right after it (or, where it was deleted, right after the
    release cell before it), one after the other, with their images (``attachments``)."""
    stub = _norm(cell["source"])
    own = next((c for c in found if _source(c) is not None), None)
    start = next(i for i, c in enumerate(cells) if c is own) if own is not None else _place_of(release, gid, cells)
    more = _continuation(cells, start + 1)
    texts, images = [], {}
    for part in ([own] if own is not None else []) + more:
        text = _source(part)
        if text.strip() and _norm(text) != stub:
            texts.append(_with_images(images, part, text))
    if own is not None and own.get("cell_type") != cell["cell_type"]:
        out.notes.append(
            f"written answer {gid!r} is in a {str(own.get('cell_type'))[:20]} cell: its text is graded by hand as written"
        )
    if more:
        out.notes.append(f"written answer {gid!r} continues in the {len(more)} cell(s) added after it: shown in it")
    if own is None:
        found_text = f"; the text in the {len(more)} cell(s) added where it stood is graded by hand" if texts else ""
        out.flags.append(f"answer cell {gid!r} was deleted{found_text}")
    if texts:
        cell["source"] = "\n\n".join(texts)
    for name in _unkept(cell["source"], images):
        out.notes.append(f"written answer {gid!r} shows the image {name!r}, which was not read: a placeholder stands in")
    if images:
        cell["attachments"] = images


def _place_of(release: dict, gid: str, cells: list) -> int:
    """Where a deleted cell stood in ``cells``: the index of the nearest release cell before it
    that the submission has (-1: before all of them)."""
    first: dict[str, int] = {}
    for i, c in enumerate(cells):
        first.setdefault(cell_grade_id(c), i)
    before = []
    for c in release["cells"]:
        if cell_grade_id(c) == gid:
            break
        before.append(cell_grade_id(c))
    return next((first[g] for g in reversed(before) if g in first), -1)


def _continuation(cells: list, start: int) -> list:
    """The markdown and raw cells without a grade id from ``start`` on, up to the next other cell."""
    more = []
    for c in cells[max(start, 0):]:
        if cell_grade_id(c) is not None or c.get("cell_type") not in ("markdown", "raw") or _source(c) is None:
            break
        more.append(c)
    return more


_ATTACHED = re.compile(r"attachment:([^\s)\"'>]+)")


def _unkept(text: str, images: dict) -> list[str]:
    """The images ``text`` shows (``attachment:NAME``) that ``images`` lacks (left out when the
    notebook was read, or never attached), each given a placeholder in ``images``: formgrader
    cannot show a notebook whose markdown names a missing attachment."""
    import base64
    import html

    missing = sorted({m.group(1) for m in _ATTACHED.finditer(text)} - set(images))
    for name in missing:
        label = html.escape(f"image {name[:80]} was not kept by the grader")
        svg = f"<svg xmlns='http://www.w3.org/2000/svg' width='420' height='24'><text x='4' y='16'>{label}</text></svg>"
        images[name] = {"image/svg+xml": base64.b64encode(svg.encode()).decode()}
    return missing


def _with_images(images: dict, cell, text: str) -> str:
    """Add the images attached to ``cell`` to ``images``; ``text`` with the names that were
    already taken there renamed (Jupyter names every pasted image ``image.png``)."""
    attached = cell.get("attachments")
    renamed = {}
    for name, data in attached.items() if isinstance(attached, dict) else []:
        new, n = name, 1
        while new in images and images[new] != data:
            n += 1
            stem, dot, ext = name.rpartition(".")
            new = f"{stem}-{n}.{ext}" if dot else f"{name}-{n}"
        images[new] = data
        if new != name:
            renamed[name] = new
    if not renamed:
        return text
    return _ATTACHED.sub(lambda m: "attachment:" + renamed.get(m.group(1), m.group(1)), text)


def _tags(cell) -> set:
    tags = _meta(cell).get("tags")
    return {t for t in tags if isinstance(t, str)} if isinstance(tags, list) else set()


_SKIPPING_TAGS = {"skip-execution", "raises-exception", "remove-cell", "skip"}


def _by_grade_id(release_tags: dict, submitted: dict) -> tuple[dict, list]:
    """The submitted cells by grade id, and flags for unknown ids and for execution-skipping tags
    that the release's cell does not carry itself."""
    flags: list[str] = []
    by_gid: dict[str, list] = {}
    for cell in submitted["cells"]:
        meta = _nbmeta(cell)
        gid = meta.get("grade_id") if meta else None
        if isinstance(gid, str):
            by_gid.setdefault(gid, []).append(cell)
            if gid not in release_tags:
                flags.append(f"cell {gid!r} is not in the release")
    for cell in submitted["cells"]:
        bad = sorted((_tags(cell) & _SKIPPING_TAGS) - release_tags.get(cell_grade_id(cell), set()))
        if bad:
            flags.append(f"tag {', '.join(bad)} on cell {cell_grade_id(cell) or '(untracked)'!r}")
    return by_gid, flags


def _copy_flags(gid: str, cell, found: list, rmeta: dict, is_answer: bool) -> list[str]:
    """How the submitted copies of one release cell differ from it (type, source, metadata)."""
    flags = []
    written = is_answer and cell["cell_type"] != "code"  # its text is graded by hand whatever the type
    for c in found:
        if c.get("cell_type") != cell["cell_type"] and not written:
            flags.append(f"cell {gid!r} was changed from {cell['cell_type']} to {str(c.get('cell_type'))[:20]}")
        elif _source(c) is None:
            flags.append(f"cell {gid!r} has an unreadable source")
        smeta = _nbmeta(c)
        if smeta != rmeta:
            keys = sorted(k for k in set(rmeta) | set(smeta or {}) if (smeta or {}).get(k) != rmeta.get(k))
            flags.append(f"nbgrader metadata of cell {gid!r} edited ({', '.join(map(str, keys))[:80]})")
        if (
            not is_answer
            and c.get("cell_type") == cell["cell_type"]
            and _source(c) is not None
            and _norm(_source(c)) != _norm(cell["source"])
        ):
            flags.append(f"locked cell {gid!r} was edited")
    return flags
