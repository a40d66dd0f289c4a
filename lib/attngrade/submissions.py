"""Finding submissions, reading them defensively, and rebuilding them from the release.

Layouts accepted for ``SUBMISSIONS`` (see :func:`discover`):

* **nbgrader**: ``<student>/<assignment>/<notebook>.ipynb`` (optionally with ``timestamp.txt``),
  as in a course's ``submitted/`` folder; a course root holding ``submitted/`` works too.
* **flat folder** of notebooks named by student (rules in :func:`student_from_filename`).
* **zip** of either of the above (one enclosing folder is fine).

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
from datetime import datetime, timezone
from pathlib import Path

from .names import base_id, clip_bytes, shown, student_ids
from .notebooks import cell_grade_id
from .reading import MAX_FILE_BYTES, SubmissionError, read_small

__all__ = [
    "Submission",
    "discover",
    "student_from_filename",
    "parse_filename",
    "FileName",
    "other_assignment",
    "rebuild",
    "Rebuilt",
    "SubmissionError",
    "Unpacked",
]

MAX_ZIP_BYTES = 2 * 2**30
_IGNORED = {"__MACOSX", ".ipynb_checkpoints", "__pycache__"}


@dataclass
class Submission:
    student: str
    path: Path | None  # the notebook; None when it is missing
    layout: str  # nbgrader, flat
    timestamp: str | None = None  # UTC, nbgrader's format; from the best evidence (see ``evidence``)
    problem: tuple[str, str] | None = None  # (status, reason) found while discovering
    notes: list = field(default_factory=list)
    source: str = ""  # the file graded, as named in the submissions
    ignored: list = field(default_factory=list)  # [(file, why)] files of this student not graded
    late: bool = False  # the LMS marked the file late
    evidence: str = ""  # where ``timestamp`` comes from
    submission_id: int | None = None  # the LMS's submission id (Canvas)
    name: str = ""  # the name the id was made from (before sanitising)


@dataclass
class FileName:
    """What a flat folder's file name says (see :func:`parse_filename`)."""

    student: str | None
    name: str  # the student's part of the file name, before sanitising
    late: bool = False
    submission_id: int | None = None
    copy: int | None = None  # a copy or resubmission counter: ``alice (1)``, ``..._67890-2``
    notes: list = field(default_factory=list)


_CANVAS = re.compile(r"(?P<name>.*?)(?P<late>_late)?_(?P<user>\d+)_(?P<sub>\d+)")
_MOODLE = re.compile(r"(?P<name>.*?)_(?P<user>\d+)_assignsubmission_\w+?_?")


def _strip_names(stem: str, names: set) -> str | None:
    """``stem`` without a trailing ``_<name>`` of ``names``; None when it is one of them."""
    low = stem.lower()
    for n in sorted(names, key=len, reverse=True):
        if low == n:
            return None
        if low.endswith("_" + n):
            return stem[: -len(n) - 1]
    return stem


def parse_filename(
    filename: str, notebook: str, assignment: str, *, assignment_suffix: bool = True
) -> FileName:
    """Read a flat folder's file name: the student, LMS tokens, late markers, copy counters.

    Rules, applied to the name without ``.ipynb``; nothing is removed unless its pattern is
    unambiguous, so two different file names never give one student by accident:

    1. a browser's copy marker ``alice (1)`` is removed and noted;
    2. a trailing ``_<notebook>`` or ``_<assignment>`` is removed (``alice_softmax``,
       ``alice_01_softmax``); a name that *is* the notebook or assignment names nobody;
    3. LMS tokens are removed: Canvas's ``[_late]_<user id>_<submission id>`` (two numbers; its
       resubmission counter after the file name is removed with it) and Moodle's
       ``_<id>_assignsubmission_file_``. The late marker and the submission id are kept;
       a resubmission counter ``-2`` is removed only where it follows the notebook's name
       (``alice_softmax-2``) or Canvas's tokens;
    4. what is left is the student id (:func:`attngrade.names.base_id`). ``s_1001``, ``team-01``,
       ``alice_2`` stay as they are: one number alone is not an LMS token.

    ``student_01_softmax`` reads as ``student`` + ``_01_softmax`` or as ``student_01`` +
    ``_softmax``; with ``assignment_suffix=False`` only ``_<notebook>`` is removed.
    :func:`discover` decides that for a whole folder (see :func:`_folder_uses_assignment_suffix`).
    """
    stem = filename[:-6] if filename.lower().endswith(".ipynb") else filename
    copy_no, notes = None, []
    m = re.fullmatch(r"(.*?)\s+\((\d+)\)", stem)
    if m and m.group(1):
        stem, copy_no = m.group(1), int(m.group(2))
        notes.append(f"file is a copy ({copy_no})")
    counter = re.fullmatch(r"(.*?)-(\d{1,3})", stem)
    names = {notebook.lower(), assignment.lower()} if assignment_suffix else {notebook.lower()}
    for candidate, with_counter in ((counter.group(1), True) if counter else (None, False), (stem, False)):
        if candidate is None:
            continue
        rest = _strip_names(candidate, names)
        if rest is None:
            if with_counter:
                continue
            return FileName(None, stem, copy=copy_no, notes=notes)
        canvas = _CANVAS.fullmatch(rest)
        moodle = _MOODLE.fullmatch(rest)
        if with_counter and not canvas and rest == candidate:
            continue  # "-2" counts resubmissions only after the notebook's name or Canvas's tokens
        late, sub_id = False, None
        if canvas and canvas.group("name"):
            rest, late, sub_id = canvas.group("name"), bool(canvas.group("late")), int(canvas.group("sub"))
        elif moodle and moodle.group("name"):
            rest = moodle.group("name")
        if with_counter:
            copy_no = int(counter.group(2))
            notes.append(f"LMS resubmission counter -{copy_no}")
        if late:
            notes.append("marked late by the LMS")
        return FileName(clip_bytes(base_id(rest), 100) or None, rest, late, sub_id, copy_no, notes)
    return FileName(None, stem, copy=copy_no, notes=notes)  # pragma: no cover - the loop returns


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


def _utc_text(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def _kind(path: Path) -> str:
    """``dir``, ``file``, ``link``, ``other`` or ``absent``, from ``lstat``: links are never followed."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    if stat.S_ISLNK(mode):
        return "link"
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _read_timestamp(folder: Path) -> tuple[str | None, list[str]]:
    path = folder / "timestamp.txt"
    if _kind(path) == "absent":
        return None, []
    try:
        text = read_small(path, 4096).decode("utf-8", "replace").strip()[:100]
        from nbgrader.utils import parse_utc

        return _utc_text(parse_utc(text).replace(tzinfo=timezone.utc)), []
    except Exception:  # noqa: BLE001 - any unreadable timestamp is ignored, and noted
        return None, ["timestamp.txt unreadable (not a plain text file); no submission time recorded"]


@dataclass
class Unpacked:
    """A zip unpacked into ``root``; ``problems``: members left out (an empty file in their place)."""

    root: Path
    problems: dict = field(default_factory=dict)  # Path -> why the member was not unpacked


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
        return f"was not unpacked: the zip expands to more than {MAX_ZIP_BYTES} bytes"
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


def _extract_zip(path: Path, into: Path) -> Unpacked:
    """Unpack safely: no member outside ``into``, no links; a member too large or unreadable is
    left out and recorded (it makes its student's submission ``malformed``, nobody else's).
    Every file gets the time the zip stored for it (read as UTC)."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{path} is not a readable zip file: {exc}") from exc
    unpacked, budget = Unpacked(into), MAX_ZIP_BYTES
    with zf:
        for info in zf.infolist():
            parts = None if info.is_dir() else _member_parts(info.filename)
            if parts is None:
                continue
            target = into.joinpath(*parts)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                why = _unpack_member(zf, info, target, budget)
                if why is not None:
                    target.write_bytes(b"")
                    unpacked.problems[target] = why
                    continue
                budget -= info.file_size
                stamp = calendar.timegm((*info.date_time, 0, 0, 0))
                os.utime(target, (stamp, stamp))
            except (OSError, ValueError, OverflowError):
                continue  # a member whose path cannot be made here (a file where a folder is)
    return unpacked


def _visible(p: Path) -> bool:
    return not (p.name.startswith(".") or p.name in _IGNORED)


def _file_time(path: Path, zipped: bool) -> tuple[str, str]:
    when = datetime.fromtimestamp(os.lstat(path).st_mtime, timezone.utc)
    evidence = "the zip's stored time of the file" if zipped else "the file's modification time"
    return _utc_text(when), evidence


def _newest(cands: list[Submission]) -> tuple[Submission | None, str]:
    """The newest of one student's files from the best evidence, or None (a tie) and why."""
    present = [c for c in cands if c.path is not None] or cands
    if len(present) == 1:
        return present[0], "the only notebook"
    ids = [c.submission_id for c in present]
    if all(i is not None for i in ids) and len(set(ids)) == len(ids):
        return max(present, key=lambda c: c.submission_id), "the highest LMS submission id"
    times = [c.timestamp for c in present]
    if all(times) and len(set(times)) == len(times):
        best = max(present, key=lambda c: c.timestamp)
        return best, f"the latest time ({best.evidence})"
    return None, "no evidence of which is newer (same LMS id or time)"


@dataclass
class _Scan:
    """What every entry of one submissions folder is read against."""

    root: Path
    assignment: str
    notebook: str
    zipped: bool
    problems: dict  # from the zip: Path -> why that member was left out
    long_suffix: bool = True

    @property
    def nb_file(self) -> str:
        return self.notebook + ".ipynb"


def _open_root(path: str | Path, workdir: str | None) -> tuple[Path, bool, dict]:
    root = Path(path)
    if not root.exists():
        raise ValueError(f"{path}: no such file or folder; give the folder or zip of the submissions")
    zipped = root.is_file() and zipfile.is_zipfile(root)
    problems: dict = {}
    if zipped:
        unpacked = _extract_zip(root, Path(tempfile.mkdtemp(prefix="attngrade-zip-", dir=workdir)))
        root, problems = unpacked.root, unpacked.problems
    if not root.is_dir():
        raise ValueError(
            f"{path} is neither a folder nor a zip file; give the folder or zip of the submissions"
        )
    return root, zipped, problems


def _entries(root: Path, assignment: str) -> tuple[Path, list[Path]]:
    """The folder holding the submissions (``submitted/`` or one enclosing folder) and its entries."""
    if _kind(root / "submitted") == "dir" and not any(p.suffix == ".ipynb" for p in root.iterdir()):
        root = root / "submitted"
    entries = [p for p in root.iterdir() if _visible(p)]
    if len(entries) == 1 and _kind(entries[0]) == "dir" and _kind(entries[0] / assignment) != "dir":
        inner = entries[0]
        inside = list(inner.iterdir())
        if any(p.suffix == ".ipynb" for p in inside) or any(_kind(d / assignment) == "dir" for d in inside):
            root, entries = inner, [p for p in inside if _visible(p)]
    return root, sorted(entries)


def _has_notebooks(entries: list[Path], assignment: str) -> bool:
    return any(
        e.suffix.lower() == ".ipynb" or (_kind(e) == "dir" and _kind(e / assignment) != "absent")
        for e in entries
    )


def _nbgrader_entry(scan: _Scan, entry: Path, kind: str) -> Submission | None:
    """``<student>/<assignment>/<notebook>.ipynb``; None when the folder has no such assignment."""
    name, folder = unicodedata.normalize("NFC", entry.name), entry / scan.assignment
    where = f"{shown(entry.name)}/{scan.assignment}/"
    sub = Submission(name, None, "nbgrader", name=name, source=where)
    if kind == "link":
        sub.problem = ("malformed", f"{shown(entry.name)} is a symbolic link; links are not followed")
        return sub
    folder_kind = _kind(folder)
    if folder_kind == "link":
        sub.problem = ("malformed", f"{where.rstrip('/')} is a symbolic link; links are not followed")
        return sub
    if folder_kind != "dir":
        return None
    sub.timestamp, sub.notes = _read_timestamp(folder)
    sub.evidence = "nbgrader's timestamp.txt" if sub.timestamp else ""
    others = sorted(
        p.name for p in folder.iterdir() if p.suffix == ".ipynb" and _visible(p) and p.name != scan.nb_file
    )
    sub.ignored = [(shown(where + o), f"not the released name {scan.nb_file}") for o in others]
    candidate = folder / scan.nb_file
    _attach_file(sub, scan, candidate, _kind(candidate), where + scan.nb_file)
    if sub.problem is None and sub.path is None:
        found = f"; found {', '.join(map(shown, others))}" if others else " in the submission folder"
        sub.problem = ("missing", f"no {scan.nb_file}{found}")
    return sub


def _attach_file(sub: Submission, scan: _Scan, path: Path, kind: str, source: str) -> None:
    """Make ``path`` the file ``sub`` grades, or give ``sub`` the problem that stops it."""
    if kind == "absent":
        return
    sub.source = shown(source)
    if kind == "link":
        sub.problem = ("malformed", f"{sub.source} is a symbolic link; links are not followed")
    elif kind != "file":
        sub.problem = ("malformed", f"{sub.source} is not a regular file")
    elif path in scan.problems:
        sub.problem = ("malformed", f"{sub.source} {scan.problems[path]}")
    else:
        sub.path = path


def _flat_entry(scan: _Scan, entry: Path, kind: str) -> Submission:
    """A notebook named by its student (:func:`parse_filename`)."""
    parsed = parse_filename(entry.name, scan.notebook, scan.assignment, assignment_suffix=scan.long_suffix)
    name = unicodedata.normalize("NFC", parsed.name if parsed.student else entry.stem)
    timestamp, evidence = _file_time(entry, scan.zipped)
    sub = Submission(
        name, None, "flat", timestamp, None, list(parsed.notes), late=parsed.late, evidence=evidence,
        submission_id=parsed.submission_id, name=name,
    )
    _attach_file(sub, scan, entry, kind, entry.name)
    if parsed.student is None and sub.problem is None:
        sub.problem = ("malformed", f"the file name {shown(entry.name)!r} does not name a student")
        sub.path = None
    return sub


def _entry(scan: _Scan, entry: Path) -> Submission | None:
    """One entry of the submissions folder as a submission; every failure is that entry's own."""
    try:
        kind = _kind(entry)
        if entry.suffix.lower() == ".ipynb" and kind != "dir":
            return _flat_entry(scan, entry, kind)
        if kind in ("dir", "link"):
            return _nbgrader_entry(scan, entry, kind)
        return None
    except Exception as exc:  # noqa: BLE001 - the class goes on; this entry says why it was not read
        name = unicodedata.normalize("NFC", entry.name)
        why = f"the grader could not read {shown(entry.name)!r} ({type(exc).__name__}: {shown(str(exc))[:100]})"
        return Submission(name, None, "unknown", problem=("malformed", why), name=name)


def _choose(name: str, cands: list[Submission]) -> Submission:
    """One student's submission among their files: the newest, or ``ambiguous`` on a tie."""
    if len(cands) == 1:
        return cands[0]
    files = ", ".join(sorted(c.source for c in cands))
    best, why = _newest(cands)
    if best is None:
        keep = cands[0]
        keep.problem = (
            "ambiguous",
            f"{len(cands)} files for {shown(name)!r} and {why}: {files}; "
            "keep the one to grade (or fix their times) and grade again",
        )
    else:
        keep = best
        keep.notes.append(f"graded {keep.source!r}: {why} of {len(cands)} files")
    for c in sorted(cands, key=lambda c: c.source):
        if c is not keep or keep.problem is not None:
            keep.ignored.append((c.source, "older" if keep.problem is None else "ambiguous: not graded"))
        if c is not keep:
            keep.ignored.extend(c.ignored)
    if keep.problem is not None:
        keep.source, keep.path, keep.timestamp = "", None, None  # nothing graded, no file named
    keep.late = any(c.late for c in ([keep] if keep.problem is None else cands))
    return keep


def discover(
    path: str | Path, assignment: str, notebook: str, *, workdir: str | None = None
) -> list[Submission]:
    """Every submission of ``assignment`` under ``path`` (folder or zip), sorted by student.

    Links are never followed (a link is its student's ``malformed``), and whatever one entry
    holds (a name that is not UTF-8, a FIFO, a zip member too large) is that entry's problem,
    never the class's. One student with several files: the newest by the best evidence is graded
    (LMS submission ids, then nbgrader's ``timestamp.txt`` or the zip's stored times or the
    files' times); the others are listed in ``ignored``. When nothing tells which is newer, the
    student's status is ``ambiguous`` and nothing is guessed. Different names get different ids
    (:func:`attngrade.names.student_ids`). Raises ``ValueError`` when ``path`` does not exist or
    holds no notebook at all.
    """
    root, zipped, problems = _open_root(path, workdir)
    root, entries = _entries(root, assignment)
    if not _has_notebooks(entries, assignment):
        raise ValueError(
            f"{path}: no notebooks found (expected <student>/{assignment}/{notebook}.ipynb, "
            f"or <student>.ipynb files, or a zip of either)"
        )
    flat_names = [e.name for e in entries if e.suffix.lower() == ".ipynb" and _kind(e) != "dir"]
    scan = _Scan(root, assignment, notebook, zipped, problems)
    scan.long_suffix = _folder_uses_assignment_suffix(flat_names, notebook, assignment)
    groups: dict[str, list[Submission]] = {}
    for entry in entries:
        sub = _entry(scan, entry)
        if sub is not None:
            groups.setdefault(sub.name, []).append(sub)
    ids = student_ids(groups)
    subs = []
    for name, cands in groups.items():
        keep = _choose(name, cands)
        keep.student = ids[unicodedata.normalize("NFC", name)]
        subs.append(keep)
    return sorted(subs, key=lambda s: s.student)


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


def _meta(cell) -> dict:
    meta = cell.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _nbmeta(cell):
    meta = _meta(cell).get("nbgrader")
    return meta if isinstance(meta, dict) else None


def _norm(src: str | None) -> str:
    return "\n".join(line.rstrip() for line in (src or "").strip().splitlines())


def rebuild(release: dict, submitted: dict) -> Rebuilt:
    """Take the answers from ``submitted`` by the release's grade ids; report tampering."""
    release_tags = {cell_grade_id(c): _tags(c) for c in release["cells"] if cell_grade_id(c)}
    by_gid, flags = _by_grade_id(release_tags, submitted)
    nb = copy.deepcopy(release)
    answers, written, unanswered = {}, {}, []
    matched = 0
    for cell in nb["cells"]:
        gid = cell_grade_id(cell)
        if not gid:
            continue
        rmeta = cell["metadata"]["nbgrader"]
        is_answer = bool(rmeta.get("solution"))
        found = by_gid.get(gid, [])
        if found:
            matched += 1
        if len(found) > 1 and not (is_answer and cell["cell_type"] == "code"):  # code answer copies run where they stand
            flags.append(f"cell {gid!r} appears {len(found)} times")
        if not found:
            flags.append(f"{'answer ' if is_answer else ''}cell {gid!r} was deleted")
        usable = [c for c in found if c.get("cell_type") == cell["cell_type"] and _source(c) is not None]
        flags.extend(_copy_flags(gid, cell, found, rmeta, is_answer))
        if not is_answer:
            continue
        if usable:
            src = _source(usable[0])  # the copy at its own place (notebooks.run_plan)
            cell["source"] = src
        if _norm(cell["source"]) == _norm(_release_source(release, gid)):
            unanswered.append(gid)
        if cell["cell_type"] == "code" and not rmeta.get("grade"):
            answers[gid] = cell["source"]
        else:
            written[gid] = cell["source"]
    # De-duplicate flags, keep order.
    flags = list(dict.fromkeys(flags))
    return Rebuilt(nb, answers, written, flags, unanswered, matched)


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
    for c in found:
        if c.get("cell_type") != cell["cell_type"]:
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


def _release_source(release: dict, gid: str) -> str:
    for cell in release["cells"]:
        if cell_grade_id(cell) == gid:
            return cell["source"]
    return ""
