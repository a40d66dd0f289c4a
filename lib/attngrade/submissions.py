"""Finding submissions, reading them defensively, and rebuilding them from the release.

Layouts accepted for ``SUBMISSIONS`` (see :func:`discover`):

* **nbgrader**: ``<student>/<assignment>/<notebook>.ipynb`` (optionally with ``timestamp.txt``),
  as in a course's ``submitted/`` folder; a course root holding ``submitted/`` works too.
* **flat folder** of notebooks named by student (rules in :func:`student_from_filename`).
* **zip** of either of the above (one enclosing folder is fine).

A submitted notebook is never trusted: :func:`read_submission` checks it is nbformat 4 JSON of
sane size, and :func:`rebuild` takes from it only the sources of the answer cells, by the grade
ids that the *released* notebook declares. Every difference from the release that a student
could use to cheat (deleted, duplicated or retyped cells, edited nbgrader metadata, points,
tags, locked cells) is reported as a tampering flag and has no effect on the grade.
"""

from __future__ import annotations

import calendar
import copy
import json
import os
import re
import shutil
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .notebooks import cell_grade_id

__all__ = [
    "Submission",
    "discover",
    "student_from_filename",
    "parse_filename",
    "FileName",
    "other_assignment",
    "read_submission",
    "rebuild",
    "Rebuilt",
    "SubmissionError",
    "MAX_NOTEBOOK_BYTES",
]

MAX_NOTEBOOK_BYTES = 32 * 2**20  # the notebook without its outputs and attachments
MAX_FILE_BYTES = 512 * 2**20  # the file as submitted, outputs included
MAX_ZIP_BYTES = 2 * 2**30
_IGNORED = {"__MACOSX", ".ipynb_checkpoints", "__pycache__"}


class SubmissionError(Exception):
    """A submission that cannot be graded; ``status`` is ``malformed`` or ``missing``."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


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


def _safe_student(name: str) -> str:
    """A student id that keeps the name's letters: Unicode NFC, whitespace runs to ``_``.

    Only characters that cannot be in a file or folder name safely (path separators, control
    characters, quotes, shell and URL specials) become ``_``; ``Anna Müller`` is ``Anna_Müller``.
    """
    name = unicodedata.normalize("NFC", name).strip()
    name = re.sub(r"\s+", "_", name)
    name = re.sub(r"[^\w.@+-]", "_", name)
    return name.strip("._")[:100]


_CANVAS = re.compile(r"(?P<name>.*?)(?P<late>_late)?_(?P<user>\d+)_(?P<sub>\d+)")
_MOODLE = re.compile(r"(?P<name>.*?)_(?P<user>\d+)_assignsubmission_\w+?_?")


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
    4. what is left is the student id (:func:`_safe_student`). ``s_1001``, ``team-01``,
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

    def strip_names(s: str) -> str | None:
        low = s.lower()
        names = {notebook.lower(), assignment.lower()} if assignment_suffix else {notebook.lower()}
        for n in sorted(names, key=len, reverse=True):
            if low == n:
                return None
            if low.endswith("_" + n):
                return s[: -len(n) - 1]
        return s

    for candidate, with_counter in ((counter.group(1), True) if counter else (None, False), (stem, False)):
        if candidate is None:
            continue
        rest = strip_names(candidate)
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
        return FileName(_safe_student(rest) or None, rest, late, sub_id, copy_no, notes)
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


def _read_timestamp(folder: Path) -> tuple[str | None, list[str]]:
    path = folder / "timestamp.txt"
    if not path.is_file():
        return None, []
    try:
        text = path.read_text(errors="replace").strip()[:100]
        from nbgrader.utils import parse_utc

        return _utc_text(parse_utc(text).replace(tzinfo=timezone.utc)), []
    except Exception:  # noqa: BLE001 - any unreadable timestamp is ignored, and noted
        return None, ["timestamp.txt unreadable; no submission time recorded"]


def _extract_zip(path: Path, into: Path) -> Path:
    """Unpack safely; every file gets the time the zip stored for it (read as UTC)."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{path} is not a readable zip file: {exc}") from exc
    total = 0
    with zf:
        for info in zf.infolist():
            name = info.filename
            parts = Path(name).parts
            if (
                info.is_dir()
                or not parts
                or name.startswith("/")
                or ".." in parts
                or any(p in _IGNORED or p.startswith(".") for p in parts)
            ):
                continue
            if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symlink
                continue
            total += info.file_size
            if total > MAX_ZIP_BYTES:
                raise ValueError(f"{path} expands to more than {MAX_ZIP_BYTES} bytes")
            target = into.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            stamp = calendar.timegm((*info.date_time, 0, 0, 0))
            os.utime(target, (stamp, stamp))
    return into


def _visible(p: Path) -> bool:
    return not (p.name.startswith(".") or p.name in _IGNORED)


def _file_time(path: Path, zipped: bool) -> tuple[str, str]:
    when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
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


def discover(
    path: str | Path, assignment: str, notebook: str, *, workdir: str | None = None
) -> list[Submission]:
    """Every submission of ``assignment`` under ``path`` (folder or zip), sorted by student.

    One student with several files: the newest by the best evidence is graded (LMS submission
    ids, then nbgrader's ``timestamp.txt`` or the zip's stored times or the files' times); the
    others are listed in ``ignored``. When nothing tells which is newer, or when two different
    names give one id, the student's status is ``ambiguous`` and nothing is guessed.
    Raises ``ValueError`` when ``path`` does not exist or holds no notebook at all.
    """
    root = Path(path)
    if not root.exists():
        raise ValueError(f"{path}: no such file or folder; give the folder or zip of the submissions")
    zipped = root.is_file() and zipfile.is_zipfile(root)
    if zipped:
        root = _extract_zip(root, Path(tempfile.mkdtemp(prefix="attngrade-zip-", dir=workdir)))
    if not root.is_dir():
        raise ValueError(
            f"{path} is neither a folder nor a zip file; give the folder or zip of the submissions"
        )
    if (root / "submitted").is_dir() and not list(root.glob("*.ipynb")):
        root = root / "submitted"
    # One enclosing folder (a zip of a folder): descend.
    entries = [p for p in root.iterdir() if _visible(p)]
    if len(entries) == 1 and entries[0].is_dir() and not (entries[0] / assignment).is_dir():
        inner = entries[0]
        if any(p.suffix == ".ipynb" for p in inner.iterdir()) or any(
            (d / assignment).is_dir() for d in inner.iterdir() if d.is_dir()
        ):
            root, entries = inner, [p for p in inner.iterdir() if _visible(p)]
    if not any(p.suffix.lower() == ".ipynb" and _visible(p) for p in root.rglob("*.ipynb")) and not any(
        (e / assignment).is_dir() for e in entries if e.is_dir()
    ):
        raise ValueError(
            f"{path}: no notebooks found (expected <student>/{assignment}/{notebook}.ipynb, "
            f"or <student>.ipynb files, or a zip of either)"
        )
    groups: dict[str, list[Submission]] = {}
    nb_file = notebook + ".ipynb"
    long_suffix = _folder_uses_assignment_suffix(
        [e.name for e in entries if e.is_file() and e.suffix.lower() == ".ipynb"], notebook, assignment
    )

    for entry in sorted(entries):
        if entry.is_dir():
            folder = entry / assignment
            if not folder.is_dir():
                continue
            student = _safe_student(entry.name) or "unnamed"
            timestamp, notes = _read_timestamp(folder)
            others = sorted(
                p.name for p in folder.iterdir() if p.suffix == ".ipynb" and _visible(p) and p.name != nb_file
            )
            candidate = folder / nb_file
            sub = Submission(
                student, candidate if candidate.is_file() else None, "nbgrader", timestamp, None, notes,
                f"{entry.name}/{assignment}/" + (nb_file if candidate.is_file() else ""),
                [(f"{entry.name}/{assignment}/{o}", f"not the released name {nb_file}") for o in others],
                evidence="nbgrader's timestamp.txt" if timestamp else "", name=entry.name,
            )
            if sub.path is None:
                found = f"; found {', '.join(others)}" if others else " in the submission folder"
                why = f"no {nb_file}{found}"
                sub.problem = ("missing", why)
            groups.setdefault(student, []).append(sub)
        elif entry.suffix.lower() == ".ipynb":
            parsed = parse_filename(entry.name, notebook, assignment, assignment_suffix=long_suffix)
            timestamp, evidence = _file_time(entry, zipped)
            sub = Submission(
                parsed.student or _safe_student(entry.stem) or "unnamed", entry, "flat", timestamp, None,
                list(parsed.notes), entry.name, late=parsed.late, evidence=evidence,
                submission_id=parsed.submission_id, name=unicodedata.normalize("NFC", parsed.name),
            )
            if parsed.student is None:
                sub.problem = ("malformed", f"the file name {entry.name!r} does not name a student")
            groups.setdefault(sub.student, []).append(sub)

    subs = []
    for student, cands in sorted(groups.items()):
        if len(cands) == 1:
            subs.append(cands[0])
            continue
        names = sorted({c.name for c in cands})
        files = ", ".join(sorted(c.source for c in cands))
        if len(names) > 1:
            keep = cands[0]
            keep.problem = (
                "ambiguous",
                f"different names give the one id {student!r} ({', '.join(map(repr, names))}): {files}; "
                "rename the files so that each student has one name, and grade again",
            )
        else:
            best, why = _newest(cands)
            if best is None:
                keep = cands[0]
                keep.problem = (
                    "ambiguous",
                    f"{len(cands)} files for {student!r} and {why}: {files}; "
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
        subs.append(keep)
    return subs


def other_assignment(path: Path, assignment: str, releases: dict[str, set]) -> str | None:
    """The assignment whose notebook ``path`` is, when it is clearly another one's; else None.

    ``releases`` maps every assignment of the course to its release's grade ids. Grade ids
    that several releases share (``setup``, ``intro``) are no evidence either way.
    """
    try:
        nb = json.loads(path.read_bytes().decode("utf-8-sig"))
        gids = {
            c["metadata"]["nbgrader"]["grade_id"]
            for c in nb["cells"]
            if isinstance(c, dict) and isinstance(c.get("metadata", {}).get("nbgrader"), dict)
            and isinstance(c["metadata"]["nbgrader"].get("grade_id"), str)
        }
    except Exception:  # noqa: BLE001 - an unreadable notebook is read_submission's to report
        return None
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


def read_submission(path: Path) -> dict:
    """The notebook as a dict, or :class:`SubmissionError` (``malformed``) saying why not."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SubmissionError("malformed", f"notebook file is {size} bytes (limit {MAX_FILE_BYTES})")
        data = path.read_bytes()
    except OSError as exc:
        raise SubmissionError("missing", f"cannot read the notebook: {exc.strerror or exc}") from exc
    if not data.strip():
        raise SubmissionError("malformed", "the notebook file is empty")
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise SubmissionError("malformed", "the notebook is not UTF-8 text") from exc
    except RecursionError as exc:
        raise SubmissionError("malformed", "the notebook's JSON is nested too deeply") from exc
    except ValueError as exc:
        raise SubmissionError("malformed", f"the notebook is not valid JSON ({str(exc)[:80]})") from exc
    if not isinstance(nb, dict):
        raise SubmissionError("malformed", "the notebook is not a JSON object")
    major = nb.get("nbformat")
    if major != 4 or isinstance(major, bool):
        raise SubmissionError("malformed", f"nbformat {major!r} is not supported (version 4 is)")
    cells = nb.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise SubmissionError("malformed", "the notebook has no list of cells")
    # Outputs (plots, printed text) and attachments are never graded: drop them before the size
    # limit applies, so a notebook made large by images is graded like any other.
    for cell in cells:
        cell.pop("attachments", None)
        if "outputs" in cell:
            cell["outputs"] = []
    del data
    stripped = len(json.dumps(nb))
    if stripped > MAX_NOTEBOOK_BYTES:
        raise SubmissionError(
            "malformed", f"notebook is {stripped} bytes without its outputs (limit {MAX_NOTEBOOK_BYTES})"
        )
    return nb


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
    flags: list[str] = []
    by_gid: dict[str, list] = {}
    release_gids = set()
    for cell in release["cells"]:
        gid = cell_grade_id(cell)
        if gid:
            release_gids.add(gid)
    for cell in submitted["cells"]:
        meta = _nbmeta(cell)
        gid = meta.get("grade_id") if meta else None
        if isinstance(gid, str):
            by_gid.setdefault(gid, []).append(cell)
            if gid not in release_gids:
                flags.append(f"cell {gid!r} is not in the release")
    for cell in submitted["cells"]:
        tags = _meta(cell).get("tags")
        if isinstance(tags, list):
            bad = sorted(
                {t for t in tags if isinstance(t, str)}
                & {"skip-execution", "raises-exception", "remove-cell", "skip"}
            )
            if bad:
                flags.append(f"tag {', '.join(bad)} on cell {cell_grade_id(cell) or '(untracked)'!r}")

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
        if len(found) > 1:
            flags.append(f"cell {gid!r} appears {len(found)} times")
        if not found:
            flags.append(f"{'answer ' if is_answer else ''}cell {gid!r} was deleted")
        usable = [c for c in found if c.get("cell_type") == cell["cell_type"] and _source(c) is not None]
        for c in found:
            if c.get("cell_type") != cell["cell_type"]:
                flags.append(
                    f"cell {gid!r} was changed from {cell['cell_type']} to {str(c.get('cell_type'))[:20]}"
                )
            elif _source(c) is None:
                flags.append(f"cell {gid!r} has an unreadable source")
            smeta = _nbmeta(c)
            if smeta != rmeta:
                keys = sorted(
                    k for k in set(rmeta) | set(smeta or {}) if (smeta or {}).get(k) != rmeta.get(k)
                )
                flags.append(f"nbgrader metadata of cell {gid!r} edited ({', '.join(map(str, keys))[:80]})")
            if (
                not is_answer
                and c.get("cell_type") == cell["cell_type"]
                and _source(c) is not None
                and _norm(_source(c)) != _norm(cell["source"])
            ):
                flags.append(f"locked cell {gid!r} was edited")
        if not is_answer:
            continue
        if usable:
            src = _source(usable[-1])  # the last copy: what ran last in the student's notebook
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


def _release_source(release: dict, gid: str) -> str:
    for cell in release["cells"]:
        if cell_grade_id(cell) == gid:
            return cell["source"]
    return ""
