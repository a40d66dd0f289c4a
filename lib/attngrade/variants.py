"""Per-student variants: a task's parameters drawn for each student from the course secret.

An assignment's ``cases.py`` may declare ``VARIANTS``, the named parameters of its tasks (a
temperature, a logarithm's base, a constant of a derivation), each with the value of the public
course copy and the values a student may be given::

    VARIANTS = Variants("01_softmax", (
        Param("temperature", default=1.0, choices=(0.25, 0.5, 2.0, 4.0),
              says="the temperature $T$ of your softmax"),
    ))

A **variant** is one value per parameter (a dict, name -> value). It is drawn deterministically
from (course secret, assignment, student id) by :meth:`Variants.draw`; without a secret (a public
copy of the course) or without a student, it is the fixed default variant. The parts whose cases
depend on it say which parameters they use (``attngrade.spec.Part.params``); their case
generators take the variant as a second argument, so the expected values follow the student's
parameters.

Who reads the variant where:

* the **release** (:mod:`attngrade.release`) writes each student's values into the notebook's
  statement cells (markdown cells whose metadata holds ``{"attngrade": {"variant": [names]}}``,
  rewritten from :meth:`Variants.statement`) and into :data:`VARIANT_FILE` next to it;
* the **visible checks** draw their cases for the variant in that file
  (:meth:`Variants.read`, called when ``cases.py`` is loaded: :func:`attngrade.spec.load_cases`);
  without the file (the default release), the default variant;
* the **hidden tests** never read the file (the student could edit it): the grader draws the
  variant from the secret and the student's id (:func:`attngrade.spec.make_cases`).

A solution notebook states its values in lines tagged ``# variant: <name>`` (``T = 1.0  # variant:
temperature``), which :func:`render_notebook` rewrites as well: the instructor's solution for any
student's variant.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["VARIANT_FILE", "Param", "Variants", "render_notebook", "statement_cells", "variants_of"]

#: The file next to a student's notebook that names their variant (read by the visible checks only).
VARIANT_FILE = "variant.json"
#: The cell metadata key of a statement cell: ``cell.metadata["attngrade"]["variant"]``.
META_KEY = "attngrade"
_TAGGED = re.compile(r"^(?P<head>[ \t]*[A-Za-z_]\w*[ \t]*=[ \t]*)(?P<value>[^#\n]*?)(?P<tail>[ \t]*#[ \t]*variant:"
                     r"[ \t]*(?P<name>[A-Za-z_]\w*)[ \t]*)$", re.M)


@dataclass(frozen=True)
class Param:
    """One parameter of an assignment's tasks: ``default`` for the public copy, ``choices`` for
    the students, ``says`` what it is (Markdown, ends without a full stop), ``shown`` how the
    text writes a value where ``f"{value:g}"`` would not do (``{math.e: "e"}``)."""

    name: str
    default: float
    choices: tuple
    says: str
    shown: dict = field(default_factory=dict)

    def __post_init__(self):
        if not re.fullmatch(r"[A-Za-z_]\w*", self.name or ""):
            raise ValueError(f"Param name must be an identifier, got {self.name!r}")
        if len(self.choices) < 2 or len(set(self.choices)) != len(self.choices):
            raise ValueError(f"Param {self.name}: choices must be two or more distinct values, got {self.choices!r}")

    def text(self, value) -> str:
        """How the task text writes ``value``."""
        for known, words in self.shown.items():
            if value == known:
                return words
        return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Variants:
    """The parameters of one assignment (:class:`Param`), by name."""

    assignment: str
    params: tuple

    def __post_init__(self):
        names = [p.name for p in self.params]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"Variants of {self.assignment}: give one or more parameters with distinct names")

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"{self.assignment} has no variant parameter {name!r}")

    def default(self) -> dict:
        """The public copy's variant."""
        return {p.name: p.default for p in self.params}

    def draw(self, secret: str | None, student: str | None) -> dict:
        """The variant of ``student``: each parameter's choice from a hash of (secret, assignment,
        student, parameter); the default variant without a secret or a student."""
        if not secret or student is None:
            return self.default()
        if not isinstance(student, str) or not student:
            raise ValueError(f"student must be a non-empty id, got {student!r}")
        values = {}
        for p in self.params:
            digest = hashlib.sha256("\0".join((secret, "variant", self.assignment, student, p.name)).encode())
            values[p.name] = p.choices[int.from_bytes(digest.digest()[:8], "little") % len(p.choices)]
        return values

    def check(self, values, where: str = "the variant") -> dict:
        """``values`` if it names every parameter with one of its values, else ValueError."""
        if not isinstance(values, dict) or set(values) != {p.name for p in self.params}:
            raise ValueError(f"{where}: expected the values of {sorted(p.name for p in self.params)}, got {values!r}")
        for p in self.params:
            allowed = (p.default, *p.choices)
            if not any(_same(values[p.name], a) for a in allowed):
                raise ValueError(f"{where}: {p.name} = {values[p.name]!r} is none of {allowed}")
        return dict(values)

    def statement(self, values: dict, names=None) -> str:
        """The Markdown of a statement cell: the values of ``names`` (default: all) in words."""
        chosen = [self.param(n) for n in (names or [p.name for p in self.params])]
        terms = [f"{p.says}: **{p.text(values[p.name])}**" for p in chosen]
        return ("**Your variant.** This task uses " + "; ".join(terms) + ". Classmates may have other "
                "values: write yours into your code. The visible checks and your grade use yours.")

    def read(self, folder: str | Path) -> dict:
        """The variant in ``folder/variant.json`` (a student's release), else the default."""
        path = Path(folder) / VARIANT_FILE
        if not path.is_file():
            return self.default()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path} cannot be read ({exc}): download it again with your notebook") from exc
        if not isinstance(data, dict) or data.get("assignment") != self.assignment:
            raise ValueError(f"{path} is not the variant file of {self.assignment}")
        return self.check(data.get("values"), str(path))

    def write(self, folder: str | Path, values: dict, student: str) -> Path:
        """Write ``folder/variant.json`` for ``student``."""
        data = {"assignment": self.assignment, "student": student, "values": self.check(values)}
        path = Path(folder) / VARIANT_FILE
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return path


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b


def variants_of(module) -> Variants | None:
    """The ``VARIANTS`` a ``cases.py`` module declares, or None."""
    found = getattr(module, "VARIANTS", None)
    if found is not None and not isinstance(found, Variants):
        raise ValueError(f"{getattr(module, '__file__', module)}: VARIANTS must be an attngrade.variants.Variants")
    return found


def statement_cells(nb) -> list:
    """``(index, names)`` of the notebook's statement cells (``names``: [] means all parameters)."""
    out = []
    for i, cell in enumerate(nb.get("cells", [])):
        meta = (cell.get("metadata") or {}).get(META_KEY) or {}
        if cell.get("cell_type") == "markdown" and "variant" in meta:
            out.append((i, list(meta["variant"] or [])))
    return out


def render_notebook(nb, variants: Variants, values: dict):
    """A copy of ``nb`` (an nbformat dict) for the variant ``values``: its statement cells
    rewritten, and each line tagged ``# variant: <name>`` given that parameter's value."""
    values = variants.check(values)
    out = copy.deepcopy(nb)
    for index, names in statement_cells(out):
        out["cells"][index]["source"] = variants.statement(values, names or None)
    for cell in out.get("cells", []):
        if cell.get("cell_type") == "code":
            src = cell.get("source", "")
            src = "".join(src) if isinstance(src, list) else src
            cell["source"] = _TAGGED.sub(lambda m: _retag(m, variants, values), src)
    return out


def _retag(m, variants: Variants, values: dict) -> str:
    name = m.group("name")
    variants.param(name)  # a tag must name a parameter of the assignment
    return f"{m.group('head')}{values[name]!r}{m.group('tail')}"
