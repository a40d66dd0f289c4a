"""Re-grading only what changed: a fingerprint per submission, and the results kept beside it.

A re-grade into the same output folder skips a submission whose fingerprint is unchanged: the
sources, types, nbgrader metadata and attached images of its cells (outputs and execution
counts do not count),
the release and hidden tests of the assignment (every file of its source folder), each part's
points, cases, expected values, tolerances and memory budgets as made now, the code of the library
the expected values come from (``attnmath``) and the versions of the packages they are computed
with, the grader's own code, the limits, the late marker, and the submission time where the
assignment has a late policy. So after the instructor fixes the library or a hidden test, a
re-grade without ``--force`` grades again everyone whose grade could change. Its row in the gradebook
is left alone (manual grades included) and its result is read back from
``OUT/state/<student>.json`` for the CSV and the summary.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import sys
from pathlib import Path

from . import plain
from .grader import PartResult, Result

__all__ = ["fingerprint", "save_state", "load_state"]

_CODE = sorted(Path(__file__).resolve().parent.glob("*.py"))
#: The packages whose versions can change an expected value.
_VERSIONED = ("numpy", "torch", "nbgrader", "attnmath")


def _library_root() -> Path | None:
    """Where ``attnmath`` (the expected values' source) is installed, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("attnmath")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]).resolve() if locations else None


def _library_digest(root: Path | None) -> str:
    """Every source file of the library and the versions of what it computes with, hashed
    (read again whenever a file's size or time differs)."""
    files = sorted(root.rglob("*.py")) if root is not None else []
    return _hash_library(root, tuple((p, p.stat().st_mtime_ns, p.stat().st_size) for p in files))


@functools.lru_cache(maxsize=8)
def _hash_library(root: Path | None, files: tuple) -> str:
    from importlib import metadata

    h = hashlib.sha256(sys.version.encode())
    for name in _VERSIONED:
        try:
            h.update(f"{name}=={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name} absent".encode())
    for path, _, _ in files:
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _assignment_digest(spec) -> str:
    """The hidden tests' source folder and each part's points and cases as made now (inputs,
    expected values, tolerances, budgets, kinds), hashed once per assignment."""
    cached = getattr(spec, "_regrade_digest", None)
    if cached is not None:
        return cached
    h = hashlib.sha256()
    folder = spec.source_path.parent
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    for ps in spec.parts:
        h.update(json.dumps([ps.grade_id, ps.function, ps.points]).encode())
        for case in ps.cases:
            fields = (case.label, case.kind, case.tol, case.max_peak_bytes, case.args, case.kwargs, case.expected)
            try:
                h.update(plain.pack(list(fields)))
            except plain.PlainDataError:
                h.update(repr(fields).encode())
    digest = h.hexdigest()
    try:
        spec._regrade_digest = digest
    except AttributeError:  # pragma: no cover - a frozen spec: recompute each time
        pass
    return digest


def _cells(notebook: dict | None) -> object:
    """What of the read stage's notebook decides a result (outputs never reach it)."""
    if notebook is None:
        return None
    return [
        [c.get("cell_type"), c.get("source"), (c.get("metadata") or {}).get("nbgrader"),
         (c.get("metadata") or {}).get("tags"), c.get("attachments")]
        for c in notebook["cells"]
    ]


def fingerprint(spec, sub, *, limits, policy=None, notebook: dict | None = None) -> str:
    """What decides a submission's result, hashed (see the module's docstring); ``notebook``:
    the read stage's (:class:`attngrade.reading.Prepared`), None when it could not be read."""
    h = hashlib.sha256()
    for code in _CODE:
        h.update(code.read_bytes())
    h.update(json.dumps(spec.release, sort_keys=True, default=str).encode())
    h.update(_assignment_digest(spec).encode())
    h.update(_library_digest(_library_root()).encode())
    h.update(json.dumps(
        [sub.student, sub.source, sub.late, sub.problem, sub.ignored, _cells(notebook), repr(limits),
         # the time counts only where a late policy makes it count: a copied file is no change
         repr(policy), [sub.timestamp, sub.due] if policy is not None else None],
        sort_keys=True, default=str,
    ).encode())
    return h.hexdigest()


def _state_path(out: Path, student: str) -> Path:
    return out / "state" / f"{student}.json"


def save_state(out: Path, result: Result, key: str) -> None:
    data = {f.name: getattr(result, f.name) for f in dataclasses.fields(result) if f.name != "notebook"}
    data["parts"] = {g: dataclasses.asdict(p) for g, p in result.parts.items()}
    path = _state_path(out, result.student)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"fingerprint": key, "result": data}, default=str), encoding="utf-8")


def load_state(out: Path, student: str, key: str) -> Result | None:
    """The result kept for ``student`` when its fingerprint is ``key``; else None."""
    path = _state_path(out, student)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("fingerprint") != key:
            return None
        kept = data["result"]
        names = {f.name for f in dataclasses.fields(Result)}
        result = Result(**{k: v for k, v in kept.items() if k in names and k != "parts"})
        result.parts = {g: PartResult(**p) for g, p in kept["parts"].items()}
        return result
    except (OSError, ValueError, KeyError, TypeError):
        return None
