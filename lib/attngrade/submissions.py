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

import copy
import json
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .notebooks import cell_grade_id

__all__ = [
    "Submission",
    "discover",
    "student_from_filename",
    "read_submission",
    "rebuild",
    "Rebuilt",
    "SubmissionError",
    "MAX_NOTEBOOK_BYTES",
]

MAX_NOTEBOOK_BYTES = 32 * 2**20
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
    timestamp: str | None = None
    problem: tuple[str, str] | None = None  # (status, reason) found while discovering
    notes: list = field(default_factory=list)
    source: str = ""  # how the file was named, for the report


def _safe_student(name: str) -> str:
    name = re.sub(r"\s+", "_", name.strip())
    name = re.sub(r"[^A-Za-z0-9_.@+-]", "_", name)
    return name.strip("._")[:100]


def student_from_filename(filename: str, notebook: str, assignment: str) -> tuple[str | None, list[str]]:
    """The student id that a flat folder's file name gives, or None; plus notes.

    Rules, applied to the name without ``.ipynb``:

    1. copies and resubmissions are recognised and noted: ``alice (1)``, ``alice-2`` (LMS counters);
    2. a trailing ``_<notebook>`` or ``_<assignment>`` is removed (``alice_softmax``,
       ``alice_01_softmax``); a name that *is* the notebook or assignment names nobody;
    3. LMS tokens are removed: Moodle's ``_<id>_assignsubmission_file_`` and Canvas's
       ``[_late]_<user id>_<submission id>`` (``alice_12345_67890_softmax``,
       ``alice_late_12345_67890_softmax``);
    4. what is left is the student id, with spaces and unusual characters turned into ``_``
       (``Alice Smith`` becomes ``Alice_Smith``).
    """
    notes = []
    stem = filename[:-6] if filename.lower().endswith(".ipynb") else filename
    m = re.fullmatch(r"(.*?)\s*\((\d+)\)", stem)
    if m:
        stem = m.group(1)
        notes.append(f"file is copy ({m.group(2)})")
    m = re.fullmatch(r"(.*?)-(\d{1,3})", stem)
    if m and m.group(1):
        stem = m.group(1)
        notes.append(f"resubmission {m.group(2)}")
    low = stem.lower()
    for name in sorted({notebook.lower(), assignment.lower()}, key=len, reverse=True):
        if low == name:
            return None, notes
        if low.endswith("_" + name):
            stem = stem[: -len(name) - 1]
            break
    stem = re.sub(r"_\d+_assignsubmission_\w+?_?$", "", stem)
    stem = re.sub(r"_assignsubmission_\w+?_?$", "", stem)
    stem = re.sub(r"(_late)?(_\d+){1,2}$", "", stem)
    student = _safe_student(stem)
    return (student or None), notes


def _read_timestamp(folder: Path) -> tuple[str | None, list[str]]:
    path = folder / "timestamp.txt"
    if not path.is_file():
        return None, []
    try:
        text = path.read_text(errors="replace").strip()[:100]
        from nbgrader.utils import parse_utc

        parse_utc(text)
        return text, []
    except Exception:  # noqa: BLE001 - any unreadable timestamp is ignored, and noted
        return None, ["timestamp.txt unreadable; no submission time recorded"]


def _extract_zip(path: Path, into: Path) -> Path:
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
    return into


def _visible(p: Path) -> bool:
    return not (p.name.startswith(".") or p.name in _IGNORED)


def discover(
    path: str | Path, assignment: str, notebook: str, *, workdir: str | None = None
) -> list[Submission]:
    """Every submission of ``assignment`` under ``path`` (folder or zip), sorted by student."""
    root = Path(path)
    if root.is_file() and zipfile.is_zipfile(root):
        root = _extract_zip(root, Path(tempfile.mkdtemp(prefix="attngrade-zip-", dir=workdir)))
    if not root.is_dir():
        raise ValueError(f"{path} is neither a folder nor a zip file")
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
    subs: dict[str, Submission] = {}
    nb_file = notebook + ".ipynb"

    def add(sub: Submission) -> None:
        old = subs.get(sub.student)
        if old is None:
            subs[sub.student] = sub
            return

        # Two files for one student: keep the later resubmission / the newer file, note the other.
        def key(s):
            return (s.path is not None, s.path.stat().st_mtime if s.path else 0, s.source)

        keep, drop = (sub, old) if key(sub) >= key(old) else (old, sub)
        keep.notes.append(f"also submitted {drop.source!r} (ignored)")
        subs[sub.student] = keep

    for entry in sorted(entries):
        if entry.is_dir():
            folder = entry / assignment
            if not folder.is_dir():
                continue
            student = _safe_student(entry.name) or "unnamed"
            timestamp, notes = _read_timestamp(folder)
            candidate = folder / nb_file
            if candidate.is_file():
                add(
                    Submission(
                        student,
                        candidate,
                        "nbgrader",
                        timestamp,
                        None,
                        notes,
                        f"{entry.name}/{assignment}/{nb_file}",
                    )
                )
            else:
                found = sorted(p.name for p in folder.iterdir() if p.suffix == ".ipynb" and _visible(p))
                why = f"no {nb_file}" + (
                    f"; found {', '.join(found)}" if found else " in the submission folder"
                )
                add(
                    Submission(
                        student,
                        None,
                        "nbgrader",
                        timestamp,
                        ("missing", why),
                        notes,
                        f"{entry.name}/{assignment}/",
                    )
                )
        elif entry.suffix.lower() == ".ipynb":
            student, notes = student_from_filename(entry.name, notebook, assignment)
            if student is None:
                fallback = _safe_student(entry.stem) or "unnamed"
                add(
                    Submission(
                        fallback,
                        entry,
                        "flat",
                        None,
                        ("malformed", f"the file name {entry.name!r} does not name a student"),
                        notes,
                        entry.name,
                    )
                )
            else:
                add(Submission(student, entry, "flat", None, None, notes, entry.name))
    return [subs[k] for k in sorted(subs)]


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
        if size > MAX_NOTEBOOK_BYTES:
            raise SubmissionError("malformed", f"notebook is {size} bytes (limit {MAX_NOTEBOOK_BYTES})")
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
