"""The run stage: what runs for a submission, and running it in workers.

:func:`plan_run` takes the read stage's notebook (:class:`attngrade.reading.Prepared`), rebuilds
it from the release (:func:`attngrade.submissions.rebuild`), lays out the cells as the student's
notebook ran them (:func:`attngrade.notebooks.run_plan`) and sets the static findings beside
them (evidence; only reaching for the course's files keeps a cell from running).
:func:`run_parts` computes every part in workers; a part that ends its worker costs only itself
and the next worker goes on without the cell that ended it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import tripwire
from .leaderboard import repeats
from .notebooks import ran_notebook, run_plan
from .reading import Prepared, SubmissionError
from .sandbox import Isolation, Limits, WorkerJob, run_worker
from .staticcheck import part_dependencies
from .submissions import Submission, rebuild

__all__ = ["Plan", "Computed", "plan_run", "run_parts", "FLAG_WORDS"]

FLAG_WORDS = {"reference": "calls reference", "forbidden": "forbidden", "course": "reads course files"}


@dataclass
class Plan:
    """A submission ready to run: its cells in order and what was found in them."""

    sub: Submission
    cells: list  # [{"id": label, "kind": kind, "source": python}] in the order they run
    after: dict  # test grade id -> number of cells run before its part is computed
    infos: dict  # label -> CellInfo of each answer and added cell
    zeroed: dict  # grade id -> why the part gets no credit without running (static evidence)
    notebook: object  # what ran, for formgrader and the feedback
    written: dict  # grade id -> the student's written (markdown) answers
    flags: list = field(default_factory=list)
    structural: list = field(default_factory=list)  # the flags that are differences from the release
    notes: list = field(default_factory=list)


@dataclass
class Computed:
    """What the workers returned for a plan (untrusted data; verdicts come in the check stage)."""

    outcomes: dict = field(default_factory=dict)  # grade id -> sandbox.PartData
    failures: dict = field(default_factory=dict)  # grade id -> (kind, detail): the part ended its worker
    memory: dict = field(default_factory=dict)  # (grade id, case) -> the grader's record of the case
    cell_errors: dict = field(default_factory=dict)  # label -> exception name
    log: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def plan_run(spec, sub: Submission, prepared: Prepared, isolation: Isolation) -> Plan:
    """The cells to run for ``sub`` and the static evidence on them (module docstring)."""
    rebuilt = rebuild(spec.release, prepared.notebook)
    if rebuilt.matched == 0:
        raise SubmissionError(
            "malformed",
            f"none of the cells of {spec.notebook}.ipynb were found: not a notebook of this assignment",
        )
    order = run_plan(list(spec.code_cells), prepared.notebook, rebuilt.answers)
    plan = Plan(
        sub, [], dict(order.after), {}, {}, ran_notebook(rebuilt.notebook, order), rebuilt.written,
        list(rebuilt.flags), list(rebuilt.flags), [*prepared.notes, *rebuilt.notes, *order.notes],
    )
    for cell in order.cells:
        info = prepared.cell(cell["source"])
        plan.notes.extend(f"cell {cell['id']!r}: {n}" for n in info.notes)
        plan.cells.append({**cell, "source": info.python})
        if cell["kind"] in ("answer", "added"):
            plan.infos[cell["id"]] = info
    _weigh_findings(spec, plan, isolation)
    return plan


def _weigh_findings(spec, plan: Plan, isolation: Isolation) -> None:
    """Static findings are evidence for the instructor. Inside a private root the references do
    not exist, so they decide no points there; only reaching for the course's files does, and a
    cell that does is not run at all (its side effects never happen)."""
    # An assignment that lets its answers import a reference (17: torch) has it in the worker: its
    # attention calls (cases.py's forbidden names) are kept from credit here, at every level.
    absent = bool(isolation.enforced.get("references_absent")) and not getattr(spec, "allowed", ())
    zeroing = {"course"} if absent else {"course", "reference", "forbidden"}
    for label, info in plan.infos.items():
        for f in info.findings:
            if f.kind == "tampering":
                plan.flags.append(f"cell {label!r} {f.message}")
            elif f.kind == "review":
                plan.notes.append(f"for review: cell {label!r} {f.message}")
    for ps in spec.parts:
        deps = part_dependencies(ps.function, list(plan.infos.items()), spec.trusted_names)
        bad = [(label, f) for label in deps for f in plan.infos[label].findings if f.kind in zeroing]
        if bad:
            label, f = bad[0]
            plan.zeroed[ps.grade_id] = f"{FLAG_WORDS[f.kind]}: cell {label!r} {f.message}"
    for label, info in plan.infos.items():
        for f in info.findings:
            flag = f"{FLAG_WORDS.get(f.kind)}: cell {label!r} {f.message}"
            if f.kind in FLAG_WORDS and flag not in plan.flags:
                plan.flags.append(flag)
    for i, cell in enumerate(plan.cells):
        info = plan.infos.get(cell["id"])
        if info is not None and any(f.kind in zeroing for f in info.findings):
            plan.cells[i] = {**cell, "source": ""}
            plan.notes.append(f"cell {cell['id']!r} not run ({'course files' if absent else 'forbidden'})")


def run_parts(
    spec, plan: Plan, isolation: Isolation, limits: Limits, *, slot: int = 0, hidden: list | None = None,
    tmp_root: str | None = None,
) -> Computed:
    """Compute every part that static evidence did not zero, in as many workers as it takes."""
    todo = [ps for ps in spec.parts if ps.grade_id not in plan.zeroed]
    cells, done = list(plan.cells), Computed()
    owners = _owners(spec, plan)
    boot_failures = 0
    while todo:
        job = WorkerJob(
            cells=cells,
            parts=[{**ps.payload, "after": plan.after[ps.grade_id], "timed": repeats(ps.part),
                    "watch": tripwire.applies(spec.allowed)} for ps in todo],
            inputs=spec.inputs,
            blocked=spec.blocked,
            held={ps.grade_id: spec.held.get(ps.grade_id, {}) for ps in todo},
            allowed={ps.grade_id: _allowances(ps) for ps in todo},
        )
        run = run_worker(job, isolation, limits, slot=slot, hidden=hidden, tmp_root=tmp_root)
        _collect(done, run, todo, isolation)
        if run.end == "done":
            break
        if run.end == "boot_failed" and not run.booted:
            boot_failures += 1
            if boot_failures < 2:
                continue
        cells = _charge(done, run, todo, cells, owners)
        todo = [ps for ps in todo if ps.grade_id not in done.outcomes and ps.grade_id not in done.failures]
    return done


def _allowances(ps) -> dict:
    """Case index -> the bytes a memory-limited case's call may allocate (its hidden test's bound)."""
    return {i: c.max_peak_bytes for i, c in enumerate(ps.cases) if getattr(c, "max_peak_bytes", None) is not None}


def _collect(done: Computed, run, todo: list, isolation: Isolation) -> None:
    """What one worker returned, added to ``done`` (its log, cells' errors, parts, memory)."""
    done.log.append(f"worker: {run.end} {run.detail} ({run.seconds:.2f}s, parts {[p.grade_id for p in todo]})")
    if run.stdout or run.stderr:
        done.log.append("stdout: " + run.stdout[:2000].decode("utf-8", "replace"))
        done.log.append("stderr: " + run.stderr[-2000:].decode("utf-8", "replace"))
    if not done.cell_errors and run.cells:
        done.cell_errors = dict(run.cells)
    done.outcomes.update(run.parts)
    if run.memory and run.baseline is None and isolation.memory != "none":
        done.notes.append("memory-limited cases not measured: the grader could not create a cgroup")
    done.notes.extend(n for n in run.notes if n not in done.notes)
    for (gid, case), rec in run.memory.items():
        done.memory[(gid, case)] = rec
        done.log.append(f"memory {gid} case {case}: {rec}")


def _owners(spec, plan: Plan) -> dict:
    """Label -> the grade ids of the parts an answer or added cell belongs to: an answer cell's
    own part (the next test cell) and the parts whose functions depend on the cell. Setup cells
    are the release's; test cells (visible checks) belong to no part: a fault there is charged
    when the part itself is computed, to the function that has it."""
    owners: dict = {}
    answer = None
    for cell in plan.cells:
        if cell["kind"] == "answer":
            answer = cell["id"]
        elif cell["kind"] == "test" and answer is not None:
            owners.setdefault(answer, set()).add(cell["id"])
            answer = None
    for ps in spec.parts:
        for label in part_dependencies(ps.function, list(plan.infos.items()), spec.trusted_names):
            owners.setdefault(label, set()).add(ps.grade_id)
    return owners


_WHERE = {"answer": "while running the answer cells", "test": "while running the visible checks"}


def _charge(done: Computed, run, todo: list, cells: list, owners: dict) -> list:
    """Charge a worker's early end to the part it was on; the cells the next worker runs."""
    kind, detail = run.end, run.detail
    if run.current is not None:
        done.failures[run.current] = (kind, detail)
        return cells
    pending = [ps.grade_id for ps in todo if ps.grade_id not in done.outcomes]
    culprit = cells[len(run.cells)] if run.booted and len(run.cells) < len(cells) else None
    # The cells before the next part ended the worker. A setup cell's failure is charged to the
    # next part (to every part when the worker never started); another cell's to the first pending
    # part it belongs to, if any: a cell of no part costs no part. The next worker skips it.
    if culprit is None or culprit.get("kind") == "setup":
        charged = pending if kind == "boot_failed" else pending[:1]
        where = "while running the cells" if run.phase == "cells" else "between parts"
    else:
        charged = [gid for gid in pending if gid in owners.get(culprit["id"], ())][:1]
        where = _WHERE.get(culprit.get("kind"), "while running the cells")
    for gid in charged:
        done.failures[gid] = (kind, f"{detail} {where}".strip())
    if culprit is not None:
        done.notes.append(f"cell {culprit['id']!r} ended the worker ({kind}); not run again")
        return [dict(c, source="") if c is culprit else c for c in cells]
    return cells
