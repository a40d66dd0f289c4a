"""The check stage: verdicts on what the workers returned, decided in this (trusted) process.

:func:`check` turns a :class:`~attngrade.running.Plan` and its
:class:`~attngrade.running.Computed` into a :class:`~attngrade.grader.Result`: per part the
points and a message the student may read (never inputs, expected values or tracebacks; for a
failed hidden case, the visible checks' own words on it: :func:`attngrade.feedback.hidden_message`),
and one status with every condition that led to it in the reason.
"""

from __future__ import annotations

from .feedback import hidden_message
from .grader import _PRECEDENCE, PartResult, Result
from .leaderboard import is_speed_part, verdict
from .running import Computed, Plan
from .sandbox import Isolation, Limits, case_memory
from .spec import Outcome, check_outputs
from .staticcheck import part_dependencies

__all__ = ["check"]

_RESOURCE_ERRORS = {"MemoryError", "BlockingIOError", "OutputTooLarge"}
_EXIT_ERRORS = {"SystemExit", "KeyboardInterrupt"}


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
    if reason.endswith(": changed its inputs"):
        return "failed (changed its inputs: the task says they must not be modified)"
    if reason.endswith(": warned"):
        return "failed (raised a warning: the task says it must not)"
    if "while checking" in reason or "plain data" in reason:
        return "failed (returned something that is not an array or number)"
    return "failed (wrong result on a hidden test case)"


def _failed_message(ps, outs: list, reason: str, stopped: set) -> str:
    """What the student reads of a failed part: the visible checks' words on the hidden case that
    failed (:func:`attngrade.feedback.hidden_message`); the short summary where no case is named
    or the words cannot be made (the verdict is decided already: a message never changes it)."""
    try:
        return hidden_message(ps.part, ps.cases, outs, reason, stopped) or _check_message(reason)
    except Exception:  # noqa: BLE001
        return _check_message(reason)


def check(spec, plan: Plan, computed: Computed, isolation: Isolation, limits: Limits) -> Result:
    """The result of one submission from what ran (module docstring)."""
    sub = plan.sub
    res = Result(
        sub.student, "graded", file=sub.source, timestamp=sub.timestamp, notes=[*sub.notes, *plan.notes,
        *computed.notes], notebook=plan.notebook, written=plan.written, flags=list(plan.flags),
        structural=list(plan.structural), cell_errors=dict(computed.cell_errors), log=list(computed.log),
    )
    conditions: list[tuple[str, str]] = []
    for ps in spec.parts:
        res.parts[ps.grade_id] = _part(spec, ps, plan, computed, isolation, limits, conditions)
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
    return res


def _zeroed_message(spec, what: str) -> str:
    if not what.startswith("calls reference"):
        return "no credit: uses a construct that answers may not use"
    names = ", ".join(sorted(spec.reference & {"attnmath", "torch", "scipy", "jax"}))
    return f"no credit: calls a reference implementation ({names}); implement it yourself"


def _part(spec, ps, plan: Plan, computed: Computed, isolation, limits, conditions: list) -> PartResult:
    """One part's points and message; conditions on the status are added to ``conditions``."""
    gid = ps.grade_id
    if gid in plan.zeroed:
        return PartResult(0.0, ps.points, False, _zeroed_message(spec, plan.zeroed[gid]), plan.zeroed[gid])
    if gid in computed.failures:
        kind, detail = computed.failures[gid]
        conditions.append((_KIND[kind], f"{gid}: {detail or kind}"))
        if kind == "protocol":
            conditions.append(("flagged", f"{gid}: wrote into the grader's result channel ({detail})"))
        message = _student_message_for_failure(kind, detail, limits)
        return PartResult(0.0, ps.points, False, message, f"{kind}: {detail}")
    data = computed.outcomes[gid]
    if not data.defined:
        deps = part_dependencies(ps.function, list(plan.infos.items()), spec.trusted_names)
        err = computed.cell_errors.get(deps[0]) if deps else None
        msg = f"failed (its cell raised {err})" if err else f"failed ({ps.function} is not defined)"
        return PartResult(0.0, ps.points, False, msg, msg)
    outs = [
        Outcome(r["out"], r["error"], case_memory(computed.memory.get((gid, i))))
        for i, r in enumerate(data.records)
    ]
    passed, reason = check_outputs(ps.part, ps.cases, outs)
    errors = {r["error"] for r in data.records if r["error"]} & _RESOURCE_ERRORS
    if errors:
        conditions.append(("resource_limit", f"{gid}: raised {', '.join(sorted(errors))}"))
    stopped = {i for i in range(len(outs)) if (computed.memory.get((gid, i)) or {}).get("stopped")}
    if passed and is_speed_part(ps.part):  # timed where the host has a GPU, else "not timed here"
        score, message, detail = verdict(ps.points, ps.cases, [r.get("seconds") for r in data.records])
        return PartResult(score, ps.points, True, message, detail)
    message = "passed" if passed else _failed_message(ps, outs, reason, stopped)
    return PartResult(ps.points if passed else 0.0, ps.points, passed, message, reason)
