"""The read stage: a submitted notebook parsed and analysed where an overrun costs only its student.

Everything the grader itself does with a notebook's content (decoding, parsing the JSON, checking
its shape, turning magics into Python, the static analysis of every code cell) runs in a child
process of the grader's own code, under a memory limit (:data:`READ_MEMORY_MB`) and a time limit
(:data:`READ_SECONDS`). A notebook that overruns them is that student's ``malformed``, with the
reason; the grader's memory and the rest of the class never pay.

The child keeps what grading uses and drops the rest before any size limit applies: outputs,
the notebook's own metadata (widget state, for example) and every cell metadata key but
``nbgrader`` and ``tags``. Images attached to markdown and raw cells (a photo of a handwritten
proof) are kept, up to :data:`MAX_ATTACHMENT_BYTES` in all, for the written answers that the
instructor grades by hand. An honest notebook made large by plots or widgets is graded like any
other. Past the limits on cells (:data:`MAX_CELLS`) and on their sources
(:data:`MAX_SOURCE_BYTES`), what nbgrader tracks is kept and what the student added is left out
first, with a note: the answers are graded whenever they fit.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Prepared",
    "SubmissionError",
    "read_notebook",
    "read_small",
    "slim_notebook",
    "MAX_FILE_BYTES",
    "MAX_SOURCE_BYTES",
    "MAX_CELLS",
    "MAX_ATTACHMENT_BYTES",
]

MAX_FILE_BYTES = 512 * 2**20  # the file as submitted, outputs and metadata included
MAX_SOURCE_BYTES = 32 * 2**20  # the cells' sources together
MAX_CELLS = 5000
MAX_ATTACHMENT_BYTES = 32 * 2**20  # images attached to markdown and raw cells, base64 text
READ_MEMORY_MB = 3072  # the reading child's address space: a 512 MiB file parses within it
READ_SECONDS = 60.0
#: A notebook this small is read in the grader's own process, where its parse and analysis cost
#: milliseconds and a few MiB at most; anything larger is read in the limited child.
INLINE_FILE_BYTES = 2 * 2**20
INLINE_CELL_BYTES = 64 * 2**10  # the largest code cell
INLINE_CODE_BYTES = 256 * 2**10  # all code cells together
_SMALL_META = 64 * 2**10  # a cell's nbgrader metadata, the notebook's kernelspec / language_info
_LIB = str(Path(__file__).resolve().parents[1])


class SubmissionError(Exception):
    """A submission that cannot be graded; ``status`` is ``malformed`` or ``missing``."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def read_small(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path`` if it holds at most ``limit``; ``OSError`` for a link,
    a folder, a FIFO, a device or a larger file. Never follows a link and never blocks."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"the file is {info.st_size} bytes (limit {limit})")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > limit:
                raise OSError(errno.EFBIG, f"the file is more than {limit} bytes (limit {limit})")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _small(value, limit: int = _SMALL_META):
    """``value`` when its JSON is at most ``limit`` bytes, else a marker (never the value)."""
    try:
        return value if len(json.dumps(value)) <= limit else {"dropped": "too large"}
    except (TypeError, ValueError, RecursionError):
        return {"dropped": "unreadable"}


def _grade_id(cell: dict) -> str | None:
    meta = cell.get("metadata")
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    gid = nbg.get("grade_id") if isinstance(nbg, dict) else None
    return gid if isinstance(gid, str) else None


def _images(attachments, budget: list, notes: list, where: str) -> dict:
    """The images of a cell's ``attachments`` (``{name: {mime: base64 text}}``) that fit in
    ``budget[0]`` bytes (spent here); a note for each one left out."""
    kept = {}
    for name, bundle in list(attachments.items())[:1000]:
        label = f"attachment {str(name)[:80]!r} of {where}"
        data = {}
        for mime, value in bundle.items() if isinstance(bundle, dict) else []:
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                value = "".join(value)
            if isinstance(mime, str) and mime.startswith("image/") and isinstance(value, str):
                data[mime[:100]] = value
        size = sum(len(v) for v in data.values())
        if not data:
            notes.append(f"{label} is not an image; not kept")
        elif size > budget[0]:
            notes.append(f"{label} not kept: the images kept reach {MAX_ATTACHMENT_BYTES} bytes")
        elif isinstance(name, str):
            kept[name[:200]] = data
            budget[0] -= size
    return kept


def _slim_cell(cell: dict, budget: list | None = None, notes: list | None = None, index: int = 0) -> dict:
    src = cell.get("source")
    if isinstance(src, list) and all(isinstance(s, str) for s in src):
        src = "".join(src)
    meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    kept = {}
    if "nbgrader" in meta:
        kept["nbgrader"] = _small(meta["nbgrader"])
    if isinstance(meta.get("tags"), list):
        kept["tags"] = [t[:200] for t in meta["tags"][:100] if isinstance(t, str)]
    ctype = cell.get("cell_type")
    out = {
        "cell_type": ctype[:40] if isinstance(ctype, str) else ctype if isinstance(ctype, (int, float)) else None,
        "source": src if isinstance(src, str) else 0,  # 0: a source that is not text (rebuild flags it)
        "metadata": kept,
    }
    if isinstance(cell.get("id"), str):
        out["id"] = cell["id"][:64]
    attachments = cell.get("attachments")
    if _may_answer(cell) and isinstance(attachments, dict) and attachments and budget is not None:
        out["attachments"] = _images(attachments, budget, notes if notes is not None else [], f"cell {index}")
    return out


def _may_answer(cell: dict) -> bool:
    """Whether a cell's images may belong to a written answer: a markdown or raw cell that is an
    answer cell (``solution``) or one the student added (no grade id)."""
    if cell.get("cell_type") not in ("markdown", "raw"):
        return False
    nbg = cell["metadata"].get("nbgrader") if isinstance(cell.get("metadata"), dict) else None
    return _grade_id(cell) is None or (isinstance(nbg, dict) and nbg.get("solution") is True)


def _within_cell_limit(cells: list, notes: list) -> list:
    """The cells read: all of them up to :data:`MAX_CELLS`; past it, the first ``MAX_CELLS`` and
    then only those that carry a grade id (at most ``MAX_CELLS`` more), with a note."""
    if len(cells) <= MAX_CELLS:
        return cells
    tracked = [c for c in cells[MAX_CELLS:] if _grade_id(c) is not None][:MAX_CELLS]
    left = len(cells) - MAX_CELLS - len(tracked)
    notes.append(
        f"the notebook has {len(cells)} cells (limit {MAX_CELLS}): the first {MAX_CELLS} were read and, "
        f"after them, the {len(tracked)} with a grade id; {left} cells added after cell {MAX_CELLS} were not read"
    )
    return cells[:MAX_CELLS] + tracked


def _within_source_limit(slim: list, notes: list) -> None:
    """Past :data:`MAX_SOURCE_BYTES`, the largest cells without a grade id are left out (their
    source emptied, with a note) until the rest fits; ``malformed`` when the tracked ones alone
    do not."""
    sizes = [len(c["source"].encode("utf-8", "surrogatepass")) if c["source"] != 0 else 0 for c in slim]
    total = sum(sizes)
    if total <= MAX_SOURCE_BYTES:
        return
    emptied = []
    for i in sorted(range(len(slim)), key=lambda i: -sizes[i]):
        if total <= MAX_SOURCE_BYTES:
            break
        if sizes[i] and _grade_id(slim[i]) is None:
            slim[i]["source"], total = "", total - sizes[i]
            emptied.append(i)
    if total > MAX_SOURCE_BYTES:
        raise SubmissionError(
            "malformed", f"the sources of the cells with a grade id are {total} bytes (limit {MAX_SOURCE_BYTES})"
        )
    notes.append(
        f"the cells' sources are {sum(sizes)} bytes (limit {MAX_SOURCE_BYTES}): the {len(emptied)} largest "
        f"cells without a grade id were not read (cells {', '.join(map(str, sorted(emptied)[:20]))})"
    )


def slim_notebook(nb) -> tuple[dict, list[str]]:
    """What grading uses of a parsed notebook, and notes on what was dropped; raises
    :class:`SubmissionError` (``malformed``) for a notebook that is not nbformat 4."""
    if not isinstance(nb, dict):
        raise SubmissionError("malformed", "the notebook is not a JSON object")
    major = nb.get("nbformat")
    if major != 4 or isinstance(major, bool):
        what = repr(major) if isinstance(major, int) and abs(major) < 10**6 else repr(str(major)[:20])
        raise SubmissionError("malformed", f"nbformat {what} is not supported (version 4 is)")
    cells = nb.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise SubmissionError("malformed", "the notebook has no list of cells")
    notes: list[str] = []
    budget = [MAX_ATTACHMENT_BYTES]
    slim = [_slim_cell(c, budget, notes, i) for i, c in enumerate(_within_cell_limit(cells, notes))]
    _within_source_limit(slim, notes)
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    keep = {k: _small(meta[k]) for k in ("kernelspec", "language_info") if k in meta}
    dropped = sorted(str(k)[:40] for k in meta if k not in keep)
    if dropped:
        notes.append(f"notebook metadata not used by the grader, ignored: {', '.join(dropped)[:200]}")
    minor = nb.get("nbformat_minor")
    return {
        "nbformat": 4,
        "nbformat_minor": minor if isinstance(minor, int) and not isinstance(minor, bool) else 5,
        "metadata": keep,
        "cells": slim,
    }, notes


def _parse(path: str, limit: int = MAX_FILE_BYTES) -> tuple[dict, list[str]]:
    try:
        data = read_small(Path(path), limit)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise SubmissionError("missing", "cannot read the notebook: it is gone") from exc
        raise SubmissionError("malformed", f"cannot read the notebook: {exc.strerror or exc}") from exc
    if not data.strip():
        raise SubmissionError("malformed", "the notebook file is empty")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SubmissionError("malformed", "the notebook is not UTF-8 text") from exc
    del data
    try:
        nb = json.loads(text)
    except RecursionError as exc:
        raise SubmissionError("malformed", "the notebook's JSON is nested too deeply") from exc
    except ValueError as exc:
        raise SubmissionError("malformed", f"the notebook is not valid JSON ({str(exc)[:80]})") from exc
    del text
    return slim_notebook(nb)


def _key(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def _analyse_all(notebook: dict, reference: frozenset, module_names: set) -> dict:
    """Per distinct code-cell source: its Python (magics removed), notes and static findings."""
    from .staticcheck import analyse_cell

    out = {}
    for cell in notebook["cells"]:
        src = cell["source"]
        if cell["cell_type"] != "code" or not isinstance(src, str) or _key(src) in out:
            continue
        info = analyse_cell(src, reference=reference, module_names=module_names)
        out[_key(src)] = {
            "python": info.python,
            "defines": sorted(info.defines),
            "uses": sorted(info.uses),
            "findings": [[f.kind, f.message] for f in info.findings],
            "syntax_error": info.syntax_error,
            "notes": info.notes,
        }
    return out


def _child() -> None:
    """The reading child: one request as JSON on stdin, one answer as JSON on stdout."""
    import resource

    request = json.loads(sys.stdin.buffer.read())
    limit = request["memory_mb"] << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        notebook, notes = _parse(request["path"])
        analysis = _analyse_all(notebook, frozenset(request["reference"]), set(request["module_names"]))
        answer = {"notebook": notebook, "notes": notes, "analysis": analysis}
    except SubmissionError as exc:
        answer = {"error": [exc.status, str(exc)]}
    except MemoryError:
        answer = {"error": ["malformed", f"reading the notebook needs more than {request['memory_mb']} MiB"]}
    sys.stdout.write(json.dumps(answer))


@dataclass
class Prepared:
    """A submission's notebook as the grader reads it (see :func:`read_notebook`)."""

    notebook: dict  # the slim notebook: cells with their type, source, nbgrader metadata and tags
    analysis: dict  # sha256 of a code cell's source -> its Python, notes and findings (plain data)
    notes: list = field(default_factory=list)
    reference: frozenset = frozenset()
    module_names: set = field(default_factory=set)

    def grade_ids(self) -> set:
        ids = set()
        for cell in self.notebook["cells"]:
            meta = cell["metadata"].get("nbgrader")
            if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str):
                ids.add(meta["grade_id"])
        return ids

    def cell(self, source: str):
        """The :class:`~attngrade.staticcheck.CellInfo` of a code cell's source (its ``python``
        and ``notes`` included); a source the child did not see (a release cell) is analysed here."""
        from .staticcheck import CellInfo, Finding, analyse_cell

        got = self.analysis.get(_key(source))
        if got is None:
            return analyse_cell(source, reference=self.reference, module_names=self.module_names)
        return CellInfo(
            set(got["defines"]), set(got["uses"]), [Finding(k, m) for k, m in got["findings"]],
            got["syntax_error"], list(got["notes"]), got["python"],
        )


def _inline(path: Path, reference: frozenset, module_names: set) -> Prepared | None:
    """The notebook read in this process when it is small enough; None: the child reads it."""
    try:
        if os.lstat(path).st_size > INLINE_FILE_BYTES:
            return None
    except OSError:
        return None  # the child says what is wrong with it
    notebook, notes = _parse(os.fsdecode(path), INLINE_FILE_BYTES)
    sizes = [len(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code" and c["source"] != 0]
    if sizes and (max(sizes) > INLINE_CELL_BYTES or sum(sizes) > INLINE_CODE_BYTES):
        return None
    return Prepared(notebook, _analyse_all(notebook, reference, module_names), notes, reference, module_names)


def read_notebook(
    path: Path, *, reference: frozenset, module_names: set, seconds: float = READ_SECONDS,
    memory_mb: int = READ_MEMORY_MB,
) -> Prepared:
    """Parse and analyse the notebook at ``path`` (module docstring): here when it is small
    (``INLINE_*``), else in a limited child process. Raises :class:`SubmissionError` with the
    reason when it cannot be graded."""
    prepared = _inline(path, reference, module_names)
    if prepared is not None:
        return prepared
    request = json.dumps({
        "path": os.fsdecode(path), "reference": sorted(reference), "module_names": sorted(module_names),
        "memory_mb": memory_mb,
    })
    code = f"import sys; sys.path.insert(0, {_LIB!r}); from attngrade.reading import _child; _child()"
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", code], input=request.encode(), capture_output=True,
            timeout=seconds, env={"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8"},
        )
    except subprocess.TimeoutExpired as exc:
        raise SubmissionError("malformed", f"reading the notebook took more than {seconds:g} s") from exc
    if proc.returncode != 0:
        last = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        why = "it ran out of memory" if "MemoryError" in last[0] else f"it ended: {last[0][:120]}"
        raise SubmissionError("malformed", f"the notebook could not be read ({why})")
    answer = json.loads(proc.stdout)
    if "error" in answer:
        raise SubmissionError(*answer["error"])
    return Prepared(answer["notebook"], answer["analysis"], answer["notes"], reference, module_names)
