"""Re-grading only what changed: a fingerprint per submission, and the results kept beside it.

A re-grade into the same output folder skips a submission whose fingerprint is unchanged: the
sources, types and nbgrader metadata of its cells (outputs and execution counts do not count),
the release and hidden tests of the assignment, the grader's own code, the limits, the late
marker, and the submission time where the assignment has a late policy. Its row in the gradebook
is left alone (manual grades included) and its result is read back from
``OUT/state/<student>.json`` for the CSV and the summary.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from .grader import PartResult, Result

__all__ = ["fingerprint", "save_state", "load_state"]

_CODE = sorted(Path(__file__).resolve().parent.glob("*.py"))


def _cells(notebook: dict | None) -> object:
    """What of the read stage's notebook decides a result (outputs never reach it)."""
    if notebook is None:
        return None
    return [
        [c.get("cell_type"), c.get("source"), (c.get("metadata") or {}).get("nbgrader"),
         (c.get("metadata") or {}).get("tags")]
        for c in notebook["cells"]
    ]


def fingerprint(spec, sub, *, limits, policy=None, notebook: dict | None = None) -> str:
    """What decides a submission's result, hashed (see the module's docstring); ``notebook``:
    the read stage's (:class:`attngrade.reading.Prepared`), None when it could not be read."""
    h = hashlib.sha256()
    for code in _CODE:
        h.update(code.read_bytes())
    h.update(json.dumps(spec.release, sort_keys=True, default=str).encode())
    hidden = spec.source_path.parent / "hidden_tests.py"
    h.update(hidden.read_bytes() if hidden.is_file() else b"")
    h.update(json.dumps(
        [sub.student, sub.source, sub.late, sub.problem, sub.ignored, _cells(notebook), repr(limits),
         # the time counts only where a late policy makes it count: a copied file is no change
         repr(policy), sub.timestamp if policy is not None else None],
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
