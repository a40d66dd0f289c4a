"""Grading one submission: validate, rebuild, check statically, compute in a worker, check here.

:func:`load_assignment` prepares what every submission of an assignment shares (the release,
the hidden parts, their cases and expected values, computed once in this process).
:func:`grade_submission` grades one submission and always returns a :class:`Result` with
exactly one status (:data:`STATUSES`); it never raises for anything a student can put in a file.
"""

from __future__ import annotations

import ast
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import plain
from .notebooks import added_source, cell_grade_id, execution_order
from .sandbox import Isolation, Limits, WorkerJob, run_worker
from .spec import Outcome, check_outputs, load_parts, make_cases
from .staticcheck import REFERENCE_MODULES, analyse_cell, part_dependencies, to_python
from .submissions import Submission, SubmissionError, read_submission, rebuild

__all__ = [
    "STATUSES",
    "CourseConfig",
    "AssignmentSpec",
    "PartResult",
    "Result",
    "load_course",
    "load_assignment",
    "grade_submission",
    "ConfigError",
]

#: Every submission ends with exactly one of these, in this order of precedence.
STATUSES = ("missing", "malformed", "ambiguous", "flagged", "resource_limit", "timed_out", "crashed", "graded")
_PRECEDENCE = {s: i for i, s in enumerate(STATUSES)}
_RESOURCE_ERRORS = {"MemoryError", "BlockingIOError", "OutputTooLarge"}
#: What a memory-limited case may add on top of the worker's memory before any student code ran
#: (the answer cells' own definitions, earlier parts' leftovers), besides the case's own budget.
MEMORY_ALLOWANCE = 16 << 20
#: What the kernel counts in a call besides the answer's own arrays (allocator pages, interpreter
#: objects, the worker's copy of the output): forgiven on every memory-limited case.
KERNEL_SLACK = 4 << 20
_EXIT_ERRORS = {"SystemExit", "KeyboardInterrupt"}


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

    parts, code_cells, manual = [], [], {}
    for index, cell in enumerate(release.cells):
        meta = cell.metadata.get("nbgrader", {})
        gid = cell_grade_id(cell)
        grade, solution = bool(meta.get("grade")), bool(meta.get("solution"))
        if cell.cell_type == "code" and grade and not solution:
            if gid not in parts_by_id:
                raise ConfigError(f"{name}: test cell {gid!r} has no part in {spec_file.name}")
            part = parts_by_id[gid]
            parts.append(PartSpec(gid, part.function, float(meta.get("points", 0)), part, [], {}))
            code_cells.append((gid, "test", ""))
        elif grade or meta.get("task"):
            manual[gid] = float(meta.get("points", 0))
        elif cell.cell_type == "code" and solution:
            code_cells.append((gid, "answer", cell.source))
        elif cell.cell_type == "code":
            code_cells.append((gid or f"cell{index}", "setup", cell.source))
    missing = sorted(set(parts_by_id) - {p.grade_id for p in parts})
    if missing:
        raise ConfigError(f"{name}: {spec_file.name} has parts without a test cell: {', '.join(missing)}")

    inputs, held = {}, {}
    for ps in parts:
        try:
            ps.cases = make_cases(ps.part)
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
        blob = plain.pack(inputs)
    except plain.PlainDataError as exc:
        raise ConfigError(f"{name}: the hidden cases' inputs are not plain data: {exc}") from exc

    reference = frozenset(REFERENCE_MODULES | {m for ps in parts for m in ps.part.forbidden})
    trusted, modules, imported = set(), set(), {"numpy"}
    for _, kind, src in code_cells:
        if kind == "setup":
            info = analyse_cell(src)
            trusted |= info.defines
            modules |= {n for n in info.defines}
            imported |= _imports(src) - reference
    blocked = sorted(reference | {"attngrade", "nbgrader"})
    return AssignmentSpec(
        name,
        course,
        nb_path.stem,
        release,
        course.source / name / nb_path.name,
        parts,
        code_cells,
        manual,
        blob,
        blocked,
        reference,
        trusted,
        modules,
        tuple(sorted(imported)),
        held,
    )


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


_FLAG_WORDS = {"reference": "calls reference", "forbidden": "forbidden", "course": "reads course files"}


def _memory_used(measured, isolation: Isolation) -> int | None:
    """The memory a case added, as the kernel counted it for the worker's cgroup (read by the grader).

    The larger of: the peak during the call over the usage just before it (inputs in place), and
    the peak from the moment the inputs were sent over the usage before any student code ran,
    less the inputs (twice: received and unpacked) and :data:`MEMORY_ALLOWANCE` (so memory set
    aside by earlier cells and freed inside the case still counts); both less
    :data:`KERNEL_SLACK`. With no kernel count, 0: the limit is then not enforced (the summary's
    isolation says so).
    """
    if measured is None:
        return None
    baseline, rec = measured
    peak, before, call = rec.get("peak"), rec.get("before"), rec.get("peak_call")
    if None in (peak, before, call, baseline):
        return 0
    overall = max(peak, call) - baseline - 2 * rec["inputs"] - MEMORY_ALLOWANCE
    return max(call - before - KERNEL_SLACK, overall - KERNEL_SLACK, 0)


_KIND = {
    "memory": "resource_limit",
    "timeout": "timed_out",
    "output": "resource_limit",
    "result_size": "resource_limit",
    "died": "crashed",
    "protocol": "crashed",
    "boot_failed": "crashed",
}


def _student_message_for_failure(kind: str, detail: str, limits: Limits) -> str:
    if kind == "timeout":
        return (
            f"failed (timed out: more than {limits.timeout:g} s)"
            if "CPU" not in detail
            else "failed (timed out: CPU time limit)"
        )
    if kind == "output":
        return (
            "failed (printed too much output)" if "printed" in detail else "failed (wrote too large a file)"
        )
    if kind == "result_size":
        return "failed (returned too large a result)"
    if kind == "memory":
        return "failed (ran out of memory: the memory limit was reached)"
    if kind == "protocol":
        return "failed (the answer interfered with the grader)"
    if kind == "boot_failed":
        return "not graded: the grader could not start (your instructor will look into it)"
    if "SIGKILL" in detail:
        return "failed (the Python process was killed)"
    if "signal" in detail or "killed by" in detail:
        return f"failed (the Python process crashed: {detail.replace('killed by ', '')})"
    return "failed (the Python process exited: sys.exit or os._exit)"


def _check_message(reason: str) -> str:
    """A student-safe summary of :func:`attngrade.spec.check_outputs`'s reason."""
    if ": raised " in reason:
        name = reason.rsplit(": raised ", 1)[1].strip()
        name = name if name.isidentifier() else "an exception"
        if name == "MemoryError":
            return "failed (ran out of memory: raised MemoryError)"
        if name == "OutputTooLarge":
            return "failed (returned a result too large or too deeply nested to check)"
        return f"failed (raised {name})"
    if ": allocated " in reason:
        return "failed (allocates too much memory on a large input)"
    if "while checking" in reason or "plain data" in reason:
        return "failed (returned something that is not an array or number)"
    return "failed (wrong result on a hidden test case)"


def grade_submission(
    spec: AssignmentSpec,
    sub: Submission,
    isolation: Isolation,
    limits: Limits,
    *,
    slot: int = 0,
    hidden: list | None = None,
    tmp_root: str | None = None,
) -> Result:
    """Grade one submission; every outcome is a :class:`Result` with one status."""
    started = time.monotonic()
    try:
        return _grade(spec, sub, isolation, limits, slot, hidden, tmp_root, started)
    except SubmissionError as exc:
        return _failed_result(spec, sub, exc.status, str(exc), started)
    except Exception as exc:  # noqa: BLE001 - the batch goes on; the failure is recorded, never silent
        res = _failed_result(spec, sub, "malformed", f"grader error: {type(exc).__name__}: {exc}", started)
        res.status = "crashed"
        for p in res.parts.values():
            p.message = "not graded: the grader failed on this submission (your instructor will look into it)"
        return res


def _grade(spec, sub, isolation, limits, slot, hidden, tmp_root, started) -> Result:
    if sub.problem is not None:
        raise SubmissionError(*sub.problem)
    submitted = read_submission(sub.path)
    rebuilt = rebuild(spec.release, submitted)
    if rebuilt.matched == 0:
        raise SubmissionError(
            "malformed",
            f"none of the cells of {spec.notebook}.ipynb were found: not a notebook of this assignment",
        )
    res = Result(
        sub.student,
        "graded",
        file=sub.source,
        timestamp=sub.timestamp,
        notes=list(sub.notes),
        notebook=rebuilt.notebook,
        written=rebuilt.written,
    )
    res.flags.extend(rebuilt.flags)
    res.structural = list(rebuilt.flags)

    # The cells to run, in the submission's order: the release's setup cells, the answers, the
    # student's own added cells; each part is computed at its test cell's place.
    order = execution_order([(label, kind) for label, kind, _ in spec.code_cells], submitted)
    release_source = {label: source for label, kind, source in spec.code_cells}
    infos, cells, after = {}, [], {}
    for label, kind, index in order:
        if kind == "test":
            after[label] = len(cells)
            continue
        if kind == "answer":
            src = rebuilt.answers.get(label, release_source[label])
        elif kind == "added":
            src = added_source(submitted, index)
        else:
            src = release_source[label]
        python, notes = to_python(src)
        res.notes.extend(f"cell {label!r}: {n}" for n in notes)
        cells.append({"id": label, "source": python})
        if kind in ("answer", "added"):
            infos[label] = analyse_cell(src, reference=spec.reference, module_names=spec.module_names)

    # Static findings are evidence for the instructor. Inside a private root the references do
    # not exist, so they decide no points there; only reaching for the course's files does.
    absent = bool(isolation.enforced.get("references_absent"))
    zeroing = {"course"} if absent else {"course", "reference", "forbidden"}
    for label, info in infos.items():
        for f in info.findings:
            if f.kind == "tampering":
                res.flags.append(f"cell {label!r} {f.message}")
            elif f.kind == "review":
                res.notes.append(f"for review: cell {label!r} {f.message}")
    zeroed: dict[str, str] = {}
    for ps in spec.parts:
        deps = part_dependencies(ps.function, list(infos.items()), spec.trusted_names)
        bad = [(label, f) for label in deps for f in infos[label].findings if f.kind in zeroing]
        if bad:
            label, f = bad[0]
            zeroed[ps.grade_id] = f"{_FLAG_WORDS[f.kind]}: cell {label!r} {f.message}"
    for label, info in infos.items():
        for f in info.findings:
            if f.kind in ("reference", "forbidden", "course"):
                flag = f"{_FLAG_WORDS[f.kind]}: cell {label!r} {f.message}"
                if flag not in res.flags:
                    res.flags.append(flag)
    # A cell that reaches for the course's files (or, without a private root, a reference) is not
    # run at all: every part depending on it scores zero already, and its side effects never happen.
    for cell in cells:
        info = infos.get(cell["id"])
        if info is not None and any(f.kind in zeroing for f in info.findings):
            cell["source"] = ""
            res.notes.append(f"cell {cell['id']!r} not run ({'course files' if absent else 'forbidden'})")

    # Compute in workers; a part that kills its worker costs only that part.
    todo = [ps for ps in spec.parts if ps.grade_id not in zeroed]
    outcomes: dict[str, object] = {}
    failures: dict[str, tuple[str, str]] = {}
    memory: dict = {}
    boot_failures = 0
    while todo:
        job = WorkerJob(
            cells=cells,
            parts=[{**ps.payload, "after": after[ps.grade_id]} for ps in todo],
            inputs=spec.inputs,
            blocked=spec.blocked,
            modules=spec.modules,
            held={ps.grade_id: spec.held.get(ps.grade_id, {}) for ps in todo},
        )
        run = run_worker(job, isolation, limits, slot=slot, hidden=hidden, tmp_root=tmp_root)
        res.log.append(
            f"worker: {run.end} {run.detail} ({run.seconds:.2f}s, parts {[p.grade_id for p in todo]})"
        )
        if run.stdout or run.stderr:
            res.log.append("stdout: " + run.stdout[:2000].decode("utf-8", "replace"))
            res.log.append("stderr: " + run.stderr[-2000:].decode("utf-8", "replace"))
        if not res.cell_errors and run.cells:
            res.cell_errors = dict(run.cells)
        outcomes.update(run.parts)
        if run.memory and run.baseline is None and isolation.memory != "none":
            res.notes.append("memory-limited cases not measured: the grader could not create a cgroup")
        for (gid, case), rec in run.memory.items():
            memory[(gid, case)] = (run.baseline, rec)
            res.log.append(f"memory {gid} case {case}: baseline {run.baseline} {rec}")
        if run.end == "done":
            break
        if run.end == "boot_failed" and not run.booted:
            boot_failures += 1
            if boot_failures < 2:
                continue
        kind, detail = run.end, run.detail
        if run.current is not None:
            failures[run.current] = (kind, detail)
        else:
            where = "while running the answer cells" if run.phase == "cells" else "between parts"
            pending = [ps.grade_id for ps in todo if ps.grade_id not in outcomes]
            # The cells before the next part ended the worker: that part (and, when it was the
            # setup that failed, every part) is charged; later parts get a fresh worker.
            charged = pending if kind == "boot_failed" else pending[:1]
            for gid in charged:
                failures[gid] = (kind, f"{detail} {where}".strip())
            if run.booted and len(run.cells) < len(cells):
                culprit = cells[len(run.cells)]  # the cell that was running: the next worker skips it
                cells = [dict(c, source="") if c is culprit else c for c in cells]
                res.notes.append(f"cell {culprit['id']!r} ended the worker; not run again")
        todo = [ps for ps in todo if ps.grade_id not in outcomes and ps.grade_id not in failures]

    # Check in this process.
    answer_of = {}
    for ps in spec.parts:
        deps = part_dependencies(ps.function, list(infos.items()), spec.trusted_names)
        answer_of[ps.grade_id] = deps[0] if deps else None
    conditions: list[tuple[str, str]] = []
    for ps in spec.parts:
        gid = ps.grade_id
        if gid in zeroed:
            what = zeroed[gid]
            msg = (
                (
                    "no credit: calls a reference implementation ("
                    + ", ".join(sorted(spec.reference & {"attnmath", "torch", "scipy", "jax"}))
                    + "); implement it yourself"
                )
                if what.startswith("calls reference")
                else "no credit: uses a construct that answers may not use"
            )
            res.parts[gid] = PartResult(0.0, ps.points, False, msg, what)
            continue
        if gid in failures:
            kind, detail = failures[gid]
            res.parts[gid] = PartResult(
                0.0, ps.points, False, _student_message_for_failure(kind, detail, limits), f"{kind}: {detail}"
            )
            conditions.append((_KIND[kind], f"{gid}: {detail or kind}"))
            if kind == "protocol":
                conditions.append(("flagged", f"{gid}: wrote into the grader's result channel ({detail})"))
            continue
        data = outcomes[gid]
        if not data.defined:
            cell = answer_of[gid]
            err = res.cell_errors.get(cell) if cell else None
            msg = f"failed (its cell raised {err})" if err else f"failed ({ps.function} is not defined)"
            res.parts[gid] = PartResult(0.0, ps.points, False, msg, msg)
            continue
        outs = [
            Outcome(r["out"], r["error"], _memory_used(memory.get((gid, i)), isolation))
            for i, r in enumerate(data.records)
        ]
        passed, reason = check_outputs(ps.part, ps.cases, outs)
        errors = {r["error"] for r in data.records if r["error"]}
        if errors & _RESOURCE_ERRORS:
            conditions.append(
                ("resource_limit", f"{gid}: raised {', '.join(sorted(errors & _RESOURCE_ERRORS))}")
            )
        res.parts[gid] = PartResult(
            ps.points if passed else 0.0,
            ps.points,
            passed,
            "passed" if passed else _check_message(reason),
            reason,
        )
    for label, err in res.cell_errors.items():
        if err in _EXIT_ERRORS:
            conditions.append(("crashed", f"cell {label!r} raised {err}"))
        elif err in _RESOURCE_ERRORS:
            conditions.append(("resource_limit", f"cell {label!r} raised {err}"))
    if res.flags:
        conditions.append(("flagged", "; ".join(res.flags)))
    if conditions:
        res.status = min((c[0] for c in conditions), key=_PRECEDENCE.__getitem__)
        ordered = sorted(conditions, key=lambda c: _PRECEDENCE[c[0]])
        res.reason = "; ".join(dict.fromkeys(f"{s}: {t}" if s != res.status else t for s, t in ordered))
    res.seconds = time.monotonic() - started
    return res
