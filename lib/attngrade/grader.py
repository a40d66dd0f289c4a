"""What grading shares: the course, the assignment, the result of one submission, its statuses.

:func:`load_assignment` prepares what every submission of an assignment shares (the release,
the hidden parts, their cases and expected values, computed once in this process).
:func:`grade_submission` is one student's fault boundary around the stages that grade one
submission: read (:mod:`attngrade.reading`), run (:mod:`attngrade.running`) and check
(:mod:`attngrade.checking`). It always returns a :class:`Result` with exactly one status
(:data:`STATUSES`); it never raises for anything a student can put in a file. Where the
assignment has per-student variants (:mod:`attngrade.variants`) and the course a secret, it grades
with the cases of the student's variant (:func:`student_spec`).
"""

from __future__ import annotations

import ast
import json
import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat

from . import plain
from .notebooks import cell_grade_id
from .reading import SubmissionError, read_notebook
from .sandbox import Isolation, Limits
from .spec import course_secret, load_cases, load_parts, make_cases
from .staticcheck import REFERENCE_MODULES, analyse_cell, to_python
from .submissions import Submission

__all__ = [
    "STATUSES",
    "CourseConfig",
    "AssignmentSpec",
    "PartResult",
    "Result",
    "load_course",
    "load_assignment",
    "grade_submission",
    "grader_failure",
    "student_spec",
    "ConfigError",
]

#: Every submission ends with exactly one of these, in this order of precedence.
STATUSES = ("missing", "malformed", "ambiguous", "flagged", "resource_limit", "timed_out", "crashed", "graded")
_PRECEDENCE = {s: i for i, s in enumerate(STATUSES)}


class ConfigError(Exception):
    """The course or the assignment cannot be graded (not a student's fault)."""


@dataclass
class CourseConfig:
    root: Path
    source: Path
    release: Path
    db_url: str
    course_id: str
    autograded: Path
    config: object = None  # the traitlets Config of nbgrader_config.py


def load_course(root: str | Path | None = None) -> CourseConfig:
    """Read the course's ``nbgrader_config.py`` (found upwards from ``root`` or the working directory)."""
    start = Path(root or os.getcwd()).resolve()
    candidates = [start, *start.parents]
    if root is None:
        candidates.append(Path(__file__).resolve().parents[2])
    for folder in candidates:
        if (folder / "nbgrader_config.py").is_file():
            break
    else:
        raise ConfigError(f"no nbgrader_config.py in {start} or above")
    from traitlets.config.loader import PyFileConfigLoader

    try:
        cfg = PyFileConfigLoader("nbgrader_config.py", path=str(folder)).load_config()
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"cannot load {folder / 'nbgrader_config.py'}: {exc}") from exc
    cd = cfg.CourseDirectory
    course_root = Path(cd.get("root", folder)).resolve() if "root" in cd else folder
    db_url = cd["db_url"] if "db_url" in cd else "sqlite:///" + str(course_root / "gradebook.db")
    return CourseConfig(
        root=course_root,
        source=course_root / (cd["source_directory"] if "source_directory" in cd else "source"),
        release=course_root / (cd["release_directory"] if "release_directory" in cd else "release"),
        db_url=db_url,
        course_id=cd["course_id"] if "course_id" in cd else "default_course",
        autograded=course_root
        / (cd["autograded_directory"] if "autograded_directory" in cd else "autograded"),
        config=cfg,
    )


@dataclass
class PartSpec:
    grade_id: str
    function: str
    points: float
    part: object  # attngrade.spec.Part
    cases: list
    payload: dict  # what the worker gets: id, function, trace


@dataclass
class AssignmentSpec:
    name: str
    course: CourseConfig
    notebook: str  # name without .ipynb
    release: object  # the released notebook (nbformat NotebookNode)
    source_path: Path
    parts: list  # [PartSpec] in notebook order
    code_cells: list  # [(label, kind, source)] in notebook order; kind is "setup", "answer" or "test"
    manual: dict  # grade id -> points, graded by hand in formgrader
    inputs: bytes  # the cases' inputs as plain data
    blocked: list
    reference: frozenset
    trusted_names: set  # names the setup cells define (np, math, ...)
    module_names: set
    modules: tuple = ("numpy",)  # what the setup cells import: the worker's site-packages view
    held: dict = field(default_factory=dict)  # memory cases' inputs, sent when the case starts
    secret: str | None = None  # the course secret the hidden cases were drawn with
    variant: dict | None = None  # the variant the cases were drawn for (None: the default)
    allowed: tuple = ()  # references the answers may import (cases.py's ALLOWED_MODULES: torch, 17 only)

    @property
    def max_auto(self) -> float:
        return float(sum(p.points for p in self.parts))

    def part(self, gid: str) -> PartSpec:
        return next(p for p in self.parts if p.grade_id == gid)


def load_assignment(course: CourseConfig, name: str) -> AssignmentSpec:
    """Everything the grading of ``name`` needs, from the course's release and hidden tests."""
    release_dir = course.release / name
    notebooks = sorted(release_dir.glob("*.ipynb")) if release_dir.is_dir() else []
    if len(notebooks) != 1:
        raise ConfigError(f"expected one released notebook in {release_dir}, found {len(notebooks)}")
    nb_path = notebooks[0]
    spec_file = course.source / name / "hidden_tests.py"
    if not spec_file.is_file():
        raise ConfigError(f"no hidden tests for {name}: {spec_file} is missing")
    release = nbformat.read(str(nb_path), as_version=4)
    try:
        parts_by_id = load_parts(spec_file)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"cannot load {spec_file}: {type(exc).__name__}: {exc}") from exc
    parts, code_cells, manual = _release_cells(name, release, parts_by_id, spec_file.name)
    secret = course_secret(course.root)
    blob, held = _case_inputs(name, parts, secret)
    allowed = _allowed_modules(spec_file)
    reference = frozenset((REFERENCE_MODULES - allowed) | {m for ps in parts for m in ps.part.forbidden})
    trusted, modules, imported = set(), set(), {"numpy"}
    for _, kind, src in code_cells:
        if kind == "setup":
            info = analyse_cell(src)
            trusted |= info.defines
            modules |= {n for n in info.defines}
            imported |= _imports(src) - reference
    blocked = sorted(reference | {"attngrade", "nbgrader"})
    return AssignmentSpec(
        name, course, nb_path.stem, release, course.source / name / nb_path.name, parts, code_cells,
        manual, blob, blocked, reference, trusted, modules, tuple(sorted(imported)), held, secret,
        allowed=tuple(sorted(allowed)),
    )


def _allowed_modules(spec_file: Path) -> frozenset:
    """The reference modules an assignment's answers may import: ``ALLOWED_MODULES`` of its
    ``cases.py`` (none where it has no such list, or no ``cases.py``)."""
    try:
        module = load_cases(spec_file)
    except FileNotFoundError:
        return frozenset()
    return frozenset(getattr(module, "ALLOWED_MODULES", ()))


def _release_cells(name: str, release, parts_by_id: dict, spec_name: str) -> tuple[list, list, dict]:
    """The release's autograded parts, its code cells in order and its manually graded cells."""
    parts, code_cells, manual = [], [], {}
    for index, cell in enumerate(release.cells):
        meta = cell.metadata.get("nbgrader", {})
        gid = cell_grade_id(cell)
        grade, solution = bool(meta.get("grade")), bool(meta.get("solution"))
        if cell.cell_type == "code" and grade and not solution:
            if gid not in parts_by_id:
                raise ConfigError(f"{name}: test cell {gid!r} has no part in {spec_name}")
            part = parts_by_id[gid]
            parts.append(PartSpec(gid, part.function, float(meta.get("points", 0)), part, [], {}))
            code_cells.append((gid, "test", cell.source))
        elif grade or meta.get("task"):
            manual[gid] = float(meta.get("points", 0))
        elif cell.cell_type == "code" and solution:
            code_cells.append((gid, "answer", cell.source))
        elif cell.cell_type == "code":
            code_cells.append((gid or f"cell{index}", "setup", cell.source))
    missing = sorted(set(parts_by_id) - {p.grade_id for p in parts})
    if missing:
        raise ConfigError(f"{name}: {spec_name} has parts without a test cell: {', '.join(missing)}")
    return parts, code_cells, manual


_VARIANT_LOCK = threading.Lock()


def student_spec(spec: AssignmentSpec, student: str) -> AssignmentSpec:
    """The assignment as graded for ``student``: ``spec`` itself, or, where parts have variants
    and the course a secret, a copy whose variant parts' cases are drawn for the student's variant
    (from the secret and the id, never from a file the student hands in). Made once per variant."""
    base = getattr(spec, "_base", spec)
    varied = [ps for ps in base.parts if ps.part.variants is not None]
    if not base.secret or not varied:
        return base
    variant = varied[0].part.variant(base.secret, student)
    key = json.dumps(variant, sort_keys=True)
    with _VARIANT_LOCK:
        cache = base.__dict__.setdefault("_variant_specs", {})
        if key not in cache:
            parts = [replace(ps, cases=[] if ps.part.variants is not None else ps.cases) for ps in base.parts]
            blob, held = _case_inputs(base.name, parts, base.secret, student)
            derived = replace(base, parts=parts, inputs=blob, held=held, variant=variant)
            derived._base = base
            cache[key] = derived
        return cache[key]


def _case_inputs(name: str, parts: list, secret: str | None = None, student: str | None = None) -> tuple[bytes, dict]:
    """The cases of every part that has none yet, made once (from the course secret where there
    is one, for ``student``'s variant); their inputs as plain data (memory cases' apart)."""
    inputs, held = {}, {}
    for ps in parts:
        try:
            if not ps.cases:
                ps.cases = make_cases(ps.part, secret, student)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"{name}: making the cases of {ps.grade_id} failed: {exc!r}") from exc
        inputs[ps.grade_id] = [
            ((), {}) if c.max_peak_bytes is not None else (tuple(c.args), dict(c.kwargs)) for c in ps.cases
        ]
        try:
            held[ps.grade_id] = {
                i: plain.pack((tuple(c.args), dict(c.kwargs)))
                for i, c in enumerate(ps.cases)
                if c.max_peak_bytes is not None
            }
        except plain.PlainDataError as exc:
            raise ConfigError(f"{name}: the hidden cases' inputs are not plain data: {exc}") from exc
        ps.payload = {
            "id": ps.grade_id,
            "function": ps.function,
            "trace": [c.max_peak_bytes is not None for c in ps.cases],
        }
    try:
        return plain.pack(inputs), held
    except plain.PlainDataError as exc:
        raise ConfigError(f"{name}: the hidden cases' inputs are not plain data: {exc}") from exc


def _imports(source: str) -> set:
    """Top-level modules a release cell imports (anywhere in it, a ``try`` included)."""
    try:
        tree = ast.parse(to_python(source)[0])
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


# --------------------------------------------------------------------------------------------


@dataclass
class PartResult:
    score: float
    max_score: float
    passed: bool
    message: str  # for the student: never inputs, expected values or tracebacks
    detail: str  # for the instructor's log


@dataclass
class Result:
    student: str
    status: str
    reason: str = ""
    parts: dict = field(default_factory=dict)  # grade id -> PartResult
    flags: list = field(default_factory=list)
    structural: list = field(default_factory=list)  # the flags that are differences from the release
    notes: list = field(default_factory=list)
    file: str = ""
    timestamp: str | None = None
    seconds: float = 0.0
    notebook: object = None  # the rebuilt notebook (None when nothing could be read)
    written: dict = field(default_factory=dict)
    cell_errors: dict = field(default_factory=dict)
    log: list = field(default_factory=list)

    @property
    def score(self) -> float:
        return float(sum(p.score for p in self.parts.values()))


def _failed_result(spec: AssignmentSpec, sub: Submission, status: str, reason: str, started: float) -> Result:
    res = Result(sub.student, status, reason, file=sub.source, timestamp=sub.timestamp, notes=list(sub.notes))
    msg = {
        "missing": "not graded: no notebook was submitted",
        "malformed": "not graded: the notebook could not be read",
        "ambiguous": "not graded: your instructor must decide which of your files to grade",
    }[status]
    for ps in spec.parts:
        res.parts[ps.grade_id] = PartResult(0.0, ps.points, False, msg, reason)
    res.seconds = time.monotonic() - started
    return res


def grade_submission(
    spec: AssignmentSpec,
    sub: Submission,
    isolation: Isolation,
    limits: Limits,
    *,
    slot: int = 0,
    hidden: list | None = None,
    tmp_root: str | None = None,
    prepared=None,
) -> Result:
    """Grade one submission: read, run, check. Every outcome is a :class:`Result` with one status;
    nothing a student can put in a file makes it raise. ``prepared``: the read stage's result
    when the caller has it (:func:`attngrade.reading.read_notebook`)."""
    from .checking import check
    from .running import plan_run, run_parts

    started = time.monotonic()
    spec = student_spec(spec, sub.student)
    plan = None
    try:
        if sub.problem is not None:
            raise SubmissionError(*sub.problem)
        if prepared is None:
            prepared = read_notebook(sub.path, reference=spec.reference, module_names=spec.module_names)
        plan = plan_run(spec, sub, prepared, isolation)
        computed = run_parts(spec, plan, isolation, limits, slot=slot, hidden=hidden, tmp_root=tmp_root)
        res = check(spec, plan, computed, isolation, limits)
    except SubmissionError as exc:
        return _failed_result(spec, sub, exc.status, str(exc), started)
    except Exception as exc:  # noqa: BLE001 - the batch goes on; the failure is recorded, never silent
        res = grader_failure(spec, sub, exc, started)
        if plan is not None:  # the written answers still wait for their grade by hand
            res.notebook, res.written = plan.notebook, plan.written
            res.flags, res.structural = list(plan.flags), list(plan.structural)
        return res
    res.seconds = time.monotonic() - started
    return res


def grader_failure(spec: AssignmentSpec, sub: Submission, exc: BaseException, started: float) -> Result:
    """The result of a submission on which the grader itself failed: ``crashed``, never the
    student's fault, with the error for the instructor."""
    res = _failed_result(spec, sub, "malformed", f"grader error: {type(exc).__name__}: {exc}"[:500], started)
    res.status = "crashed"
    for p in res.parts.values():
        p.message = "not graded: the grader failed on this submission (your instructor will look into it)"
    return res
