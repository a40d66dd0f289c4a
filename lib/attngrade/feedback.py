"""What a student reads about a failed part: the hidden case, what failed, the visible check to run.

**Points: all or nothing per part** (:data:`POINTS_RULE`). A part earns its points when every
one of its hidden cases passes and 0 otherwise, as a test cell of nbgrader does: the hidden tests
run in order and stop at the first case that fails, and the visible checks, which are the same
cases drawn with another seed (:mod:`attngrade.visible`), stop there too. Credit per kind of
case would need every case run after the first failure, and the visible checks would have to
say the same; the page states the rule and where the run stopped instead.

**A failed hidden case** (:func:`hidden_message`, called by the check stage in the grader's own
process): the part's message is the visible checks' own words (:func:`attngrade.visible.explain`)
for that case, so the feedback and the self-check say the same thing: what failed (an exception
by its name, the inputs changed, a warning, memory against the case's budget, a type, a shape,
NaN or inf, the error against the tolerance) and the hint the visible check of that kind gives.
It never reads the case's values: the error's size is a power of ten of the tolerance, nothing
the student's code says about itself (an exception's message) is sent by the worker, and a
sentence the assignment writes from the case (a diagnosis, a check's own message) is shown only
where every number in it is one that ``cases.py`` itself spells out or a dimension of the case's
arrays (:func:`safe_sentence`); otherwise the hint of the case's kind stands in.

**The page** (:func:`part_html`): the hidden case (its number and kind), what failed, the hint,
the visible check to run (the part's test cell, whose draw has a case of that kind), how the
part's points are given, and the failing inputs only where the assignment reveals them
(:mod:`attngrade.reveal`).
"""

from __future__ import annotations

import builtins
import functools
import html
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import tripwire
from .names import shown
from .notebooks import cell_grade_id
from .spec import Outcome, call_notes, visible_cases
from .visible import HINT_MARK, failure_text, hint_text

__all__ = ["POINTS_RULE", "FAILED", "CaseFeedback", "hidden_message", "safe_sentence", "case_feedback",
           "short_text", "points_text", "try_text", "part_html"]

#: How a part's points are given, as the page and the README say it.
POINTS_RULE = "all or nothing"
#: The start of the message of a part that failed at a hidden case (:func:`hidden_message`).
FAILED = "failed on a hidden case: "
#: The longest sentence of an assignment's own (a diagnosis, a check's message) that is shown.
MAX_SENTENCE = 300

_SPECIAL = {  # names the grader gives an outcome, not exceptions of the answer's
    "OutputTooLarge": "returned a result too large or too deeply nested to check",
    "NotMeasured": "its memory on this case could not be measured, so the case earns nothing "
                   "(your instructor is told)",
}
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def hidden_message(part, cases: list, outcomes: list, reason: str, stopped=frozenset()) -> str | None:
    """The student's message for a part whose hidden case failed (module docstring), or None
    where ``reason`` names no case (:func:`attngrade.statistics.failed_case`); ``stopped``: the
    memory cases whose call the grader stopped at the case's ceiling (its peak is a lower bound)."""
    from .statistics import failed_case

    index = failed_case(cases, reason)
    if index is None or index >= len(outcomes):
        return None
    case, got = cases[index], outcomes[index]
    error = got.error
    if call_notes(error) is None and not shown_error_name(error):
        error = "an exception"
    outcome = Outcome(got.output, error, got.peak_bytes)  # no detail: never the student's own text
    keep = functools.partial(safe_sentence, part=part, case=case)
    what = _SPECIAL.get(error) or failure_text(part, case, outcome, reason, coarse=True, keep=keep)
    if index in stopped and what.startswith("allocated "):
        what = (f"allocated more than the {case.max_peak_bytes / 2**20:.1f} MiB this case allows, and the "
                "grader stopped it there: avoid the large intermediate arrays")
    hint = hint_text(part, case, outcome, keep)
    return FAILED + what.rstrip(".") + "." + (f"{HINT_MARK}{hint}" if hint else "")


#: Exceptions of libraries an answer uses, whose names the feedback may repeat besides Python's own.
LIBRARY_ERRORS = frozenset({"AxisError", "LinAlgError", "ComplexWarning", "TooHardError", "OutOfMemoryError"})


def shown_error_name(error) -> bool:
    """Whether the feedback may name the exception ``error`` a hidden case raised: one of Python's
    own, a library's (:data:`LIBRARY_ERRORS`), or an outcome the grader names itself. A name the
    answer made at run time could carry what it read of the hidden inputs (a class named
    ``LEAK_<hex of the inputs>``, clean-room red team): it is "an exception"."""
    if not isinstance(error, str):
        return False
    own = isinstance(getattr(builtins, error, None), type) and issubclass(getattr(builtins, error), BaseException)
    return own or error in LIBRARY_ERRORS or error in _SPECIAL or tripwire.describe(error) is not None


def safe_sentence(text, part, case) -> bool:
    """Whether a sentence that the assignment's code wrote about a hidden ``case`` may be shown:
    one line of at most :data:`MAX_SENTENCE` characters whose numbers all appear in the part's
    ``cases.py`` or among the dimensions of the case's arrays (a value drawn for the case does not)."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_SENTENCE or "\n" in text.strip():
        return False
    allowed = _source_numbers(_source_of(part)) | {str(d) for d in _dimensions(case)}
    return set(_NUMBER.findall(text)) <= allowed


def _source_of(part) -> str:
    try:
        return inspect.getsourcefile(part.cases) or ""
    except (TypeError, OSError):
        return ""


@functools.lru_cache(maxsize=64)
def _numbers_in(path: str, stamp: int) -> frozenset:
    return frozenset(_NUMBER.findall(Path(path).read_text(encoding="utf-8", errors="replace")))


def _source_numbers(path: str) -> frozenset:
    try:
        return _numbers_in(path, Path(path).stat().st_mtime_ns) if path else frozenset()
    except OSError:
        return frozenset()


def _dimensions(case) -> set:
    found: set = set()

    def walk(value, depth=0):
        if isinstance(value, np.ndarray):
            found.update(value.shape)
        elif isinstance(value, (list, tuple)) and depth < 4:
            for v in value:
                walk(v, depth + 1)

    walk([list(case.args), list(case.kwargs.values()), case.expected])
    return found


# ----------------------------------------------------------------------------- read back for the page


@dataclass
class CaseFeedback:
    """A failed part as the page shows it."""

    index: int | None  # the failing hidden case (0-based); None: no case was checked
    total: int  # the part's hidden cases
    kind: str
    what: str  # what failed, one sentence
    hint: str  # the visible check's hint for it ("" where none)


def case_feedback(ps, pr) -> CaseFeedback:
    """The failed part ``pr`` (a :class:`~attngrade.grader.PartResult`) of ``ps`` (a
    :class:`~attngrade.grader.PartSpec`), from its message and the case its detail names."""
    from .statistics import failed_case

    cases = ps.cases
    index = failed_case(cases, pr.detail)
    kind = cases[index].kind if index is not None else ""
    message = pr.message or ""
    if message.startswith(FAILED):
        what, _, hint = message[len(FAILED):].partition(HINT_MARK)
    else:
        what, hint = message, (ps.part.hints.get(kind, "") if index is not None else "")
    return CaseFeedback(index, len(cases), kind, what.strip(), hint.strip())


def short_text(cf: CaseFeedback, message: str) -> str:
    """The part's line in the page's table."""
    if cf.index is None:
        return message
    kind = f" ({cf.kind})" if cf.kind else ""
    return f"failed at hidden case {cf.index + 1} of {cf.total}{kind}"


def points_text(points: float, cf: CaseFeedback) -> str:
    """How the part's points are given, and where its hidden run stopped."""
    rule = (f"All or nothing: this part gives its {points:g} points when all {cf.total} of its hidden "
            "cases pass, and 0 otherwise (as the test cell of a notebook passes or fails as a whole).")
    if cf.index is None:
        return rule + " No hidden case was checked, so none counts."
    before = ("it was the first" if cf.index == 0
              else f"the {cf.index} before it passed" if cf.index > 1 else "the one before it passed")
    after = cf.total - cf.index - 1
    rest = ("it was the last" if after == 0
            else f"the {after} after it were not run" if after > 1 else "the one after it was not run")
    return rule + f" The cases run in order and stop at the first that fails: {before}, and {rest}."


def _visible_cell(spec, gid: str) -> tuple[str, str] | None:
    """``(label, function)`` of the part's visible check in the release (``self_check("Part 1")``
    with ``check.run("stable_softmax", ...)``), or None where its test cell has none."""
    source = next((c.source for c in spec.release.cells if cell_grade_id(c) == gid), "")
    label = re.search(r"self_check\(\s*[\"']([^\"']+)[\"']\s*\)", source)
    run = re.search(r"\.run\(\s*[\"']([^\"']+)[\"']", source)
    return (label.group(1), run.group(1)) if label and run else None


_VISIBLE_KINDS: dict = {}  # id(part) -> (part, the kinds of its visible draw in order)


def _visible_kinds(ps) -> list[str]:
    """The kinds of the part's visible cases in order: the hidden cases' own (one structure),
    unless ``visible_limit`` keeps a sample (then drawn once per process)."""
    part = ps.part
    if part.visible_limit is None or len(ps.cases) <= part.visible_limit:
        return [c.kind for c in ps.cases]
    held = _VISIBLE_KINDS.get(id(part))
    if held is None or held[0] is not part:
        held = (part, [c.kind for c in visible_cases(part)])
        _VISIBLE_KINDS[id(part)] = held
    return held[1]


def try_text(spec, ps, cf: CaseFeedback, timed_out: bool = False) -> str:
    """Which visible check to run for the failed case, and what it gives; ``timed_out``: the
    part ran past its time limit before any case was checked."""
    cell = _visible_cell(spec, ps.grade_id)
    if cell is None:
        return "Run this part's test cell in your notebook: its checks run in your kernel."
    label, function = cell
    head = (f"Run the test cell of {label} in your notebook (`check.run(\"{function}\", ...)`): its visible "
            "check draws the hidden tests' own cases, kind for kind and size for size, on other values, "
            "and checks them with the same tolerances and memory budgets.")
    if cf.index is None:
        more = " Its cases have the hidden cases' sizes: time it, what is slow there is slow here."
        return f"{head} It stops at the first case that fails and names its kind.{more if timed_out else ''}"
    kinds = _visible_kinds(ps)
    same = (cf.index if ps.part.visible_limit is None and cf.index < len(kinds) and kinds[cf.index] == cf.kind
            else next((i for i, k in enumerate(kinds) if k == cf.kind), None))
    where = (f" Its case {same + 1} of {len(kinds)} is of this kind." if same is not None
             else "")
    return (head + where + " Where a case fails, it says so in these words, and its inputs are in "
            f"`self_check.inputs[\"{label}\"]` for you to try.")


def _e(text) -> str:
    """Escaped text, with `code` spans (as the hints write them) set as code."""
    return re.sub(r"`([^`<>]+)`", r"<code>\1</code>", html.escape(shown(str(text))))


def part_html(spec, ps, pr, reveal_html: str = "") -> list[str]:
    """The block under a failed part's result on the page (module docstring); ``reveal_html``:
    the failing case's inputs where the assignment reveals them (:mod:`attngrade.reveal`)."""
    if (pr.message or "").startswith("not graded"):  # the grader's own failure: nothing to try
        return []
    cf = case_feedback(ps, pr)
    out = ["<div class='case'>"]
    if cf.index is not None:
        out.append(f"<p><b>What failed.</b> Hidden case {cf.index + 1} of {cf.total}, a case of the kind "
                   f"<b class='kind'>{_e(cf.kind)}</b>: {_e(cf.what)}</p>")
    else:
        out.append(f"<p><b>What failed.</b> {_e(cf.what)}</p>")
    if cf.hint:
        out.append(f"<p><b>Hint</b> (the visible check of this kind gives the same): {_e(cf.hint)}</p>")
    out.append(f"<p><b>Try it.</b> {_e(try_text(spec, ps, cf, (pr.detail or '').startswith('timeout')))}</p>")
    out.append(f"<p><b>Points.</b> {_e(points_text(ps.points, cf))}</p>")
    if reveal_html and cf.index is not None:
        out.append(reveal_html)
    out.append("</div>")
    return out
