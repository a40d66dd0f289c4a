"""The visible self-checks: the hidden tests' own cases, drawn with the public visible seed.

A test cell of a released notebook is one line inside the notebook's ``self_check`` helper::

    with self_check("Part 1") as check:
        check.run("stable_softmax", stable_softmax)

``self_check.run`` calls :func:`check_part`, which runs in the student's kernel: it loads the
assignment's ``cases.py`` (released next to the notebook), draws the part's cases with
:data:`attngrade.spec.VISIBLE_SEED` (:func:`attngrade.spec.visible_cases`), calls the answer on
each as the hidden tests do (:func:`attngrade.spec.run_case`: its own copies of the inputs,
memory counted by ``tracemalloc``, the output converted to plain data) and decides with the
hidden tests' own :func:`attngrade.spec.check_outputs`. The expected values come from the case
generator, made before the answer runs.

Only the *message* is this module's own (:func:`explain`): after a failure it names the kind of
case (``check.kind``, the hidden cases' labels), what failed (an exception, the inputs changed,
a warning, memory, a type, a shape, NaN or inf, the size of the error against the tolerance, and
whether that size is rounding or a wrong formula) and a hint (``Part.hints`` by kind,
``Part.diagnose`` from the case's own inputs), never an input's values. The failing case's
inputs are kept in ``self_check.inputs[part]`` for the student to try.
"""

from __future__ import annotations

import copy
import inspect
import re
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

from . import tripwire
from .spec import (
    CASES_FILE,
    Case,
    Outcome,
    Part,
    call_notes,
    check_outputs,
    load_cases,
    run_case,
    visible_cases,
)

__all__ = ["HELPER_CELL", "HINT_MARK", "MESSAGE_WIDTH", "NOT_ATTEMPTED", "NotAttempted", "check_part", "explain",
           "failure_text", "hint_text", "factor_hint", "find_part", "like", "message_lines", "run_visible",
           "visible_source"]

_LOADED: dict = {}  # cases.py path -> (its modification time, the module)


def find_part(function: str, folder: str | Path | None = None) -> Part:
    """The part that grades ``function`` (a function name or a grade id) in the ``cases.py`` of
    ``folder`` (default: the working folder, which Jupyter and nbgrader set to the notebook's).
    Where that folder has none (a notebook downloaded on its own), the course's released
    ``exercises/*/cases.py`` next to this library are searched: one of them must have the part."""
    here = Path(folder if folder is not None else Path.cwd()) / CASES_FILE
    course = Path(__file__).resolve().parents[2] / "exercises"
    paths = [here] if here.is_file() else sorted(course.glob(f"*/{CASES_FILE}")) if course.is_dir() else []
    if not paths:
        raise AssertionError(f"the visible checks need {CASES_FILE}, which comes with this notebook: "
                             f"put it back next to the notebook ({here.parent})")
    found = [p for path in paths for p in _parts_of(path) if function in (p.function, p.grade_id)]
    if len(found) != 1:
        where = here if here.is_file() else f"{course}/*/{CASES_FILE}"
        raise AssertionError(f"{where} has {'no' if not found else 'more than one'} part for {function!r}: "
                             f"put this notebook's {CASES_FILE} next to it")
    return found[0]


def _parts_of(path: Path) -> list[Part]:
    stamp = path.stat().st_mtime_ns
    if _LOADED.get(path, (None,))[0] != stamp:
        _LOADED[path] = (stamp, load_cases(path))
    return list(_LOADED[path][1].PARTS)


def run_visible(part: Part, answer, cases: list[Case] | None = None, on_case=None):
    """Run ``answer`` on the part's visible cases (or ``cases``) and check each as the hidden
    tests do. Returns None when all pass, else ``(index, case, outcome, reason, args, kwargs)``
    of the first that fails (``args``/``kwargs``: the copies the answer got). ``on_case(case)``
    is called before each case. A first call that raises ``NotImplementedError`` raises it."""
    cases = visible_cases(part) if cases is None else cases
    for index, case in enumerate(cases):
        if on_case is not None:
            on_case(case)
        outcome, args, kwargs = _watched_case(part, answer, case)
        if index == 0 and outcome.error == "NotImplementedError":
            raise NotImplementedError(outcome.detail)
        passed, reason = check_outputs(part, [case], [outcome])
        if not passed:
            return index, case, outcome, reason, args, kwargs
    return None


_TRIPWIRE: list = []  # the notebook's one attngrade.tripwire.Tripwire, made at its first use


def _watched_case(part: Part, answer, case: Case):
    """:func:`~attngrade.spec.run_case`, under the tripwire where the part's assignment lets its
    answers use torch only to allocate and launch (:func:`attngrade.tripwire.applies`): a call
    that returned but computed with torch, or launched no Triton kernel, fails as it does in grading."""
    allowed = getattr(part.cases, "__globals__", {}).get("ALLOWED_MODULES", ())
    if not tripwire.applies(allowed):
        return run_case(answer, case, detail=True)
    if not _TRIPWIRE:
        import torch

        _TRIPWIRE.append(tripwire.Tripwire(torch, sys.modules))
    watch = _TRIPWIRE[0].watch()
    with watch:
        outcome, args, kwargs = run_case(answer, case, detail=True)
    verdict = watch.verdict()
    if verdict is not None and call_notes(outcome.error) is not None:
        outcome = Outcome(None, verdict)
    return outcome, args, kwargs


def check_part(check, function: str, answer, folder: str | Path | None = None) -> None:
    """The visible checks of one part, for ``self_check.run``: sets ``check.kind`` to each case's
    kind, raises ``AssertionError`` with :func:`explain`'s message at the first failing case
    (:class:`NotAttempted` for an answer not attempted); ``check.seconds`` is the time taken."""
    from attnmath.testing import uses_reference

    part = find_part(function, folder)
    if not callable(answer):
        raise AssertionError(f"{function} is not a function")
    if uses_reference(answer, forbidden=part.forbidden):
        raise AssertionError(f"{function} calls a reference implementation ({', '.join(part.forbidden)}), "
                             "which earns no credit: implement it yourself")
    start = time.perf_counter()
    cases = visible_cases(part)
    try:
        failed = run_visible(part, answer, cases, on_case=lambda case: setattr(check, "kind", case.kind))
    except NotImplementedError:  # one line, which the helper lets through as it is
        raise NotAttempted(f"{getattr(check, 'part', function)} {NOT_ATTEMPTED}") from None
    check.seconds = time.perf_counter() - start
    if failed is None:
        check.kind = ""
        return
    index, case, outcome, reason, args, kwargs = failed
    store = getattr(type(check), "inputs", None)
    if isinstance(store, dict):
        store[getattr(check, "part", function)] = (copy.deepcopy(case.args), copy.deepcopy(case.kwargs))
    where = f"case {index + 1} of {len(cases)}"
    if isinstance(store, dict):
        where += f"; its inputs: self_check.inputs[{getattr(check, 'part', function)!r}]"
    raise AssertionError(f"{explain(part, case, outcome, reason, args, kwargs, answer)} ({where})")


# ----------------------------------------------------------------------------- the message


#: What separates a message's verdict from its hint (the feedback page shows them apart).
HINT_MARK = " Hint: "


def explain(part: Part, case: Case, outcome: Outcome, reason: str, args=(), kwargs=None, answer=None, *,
            coarse: bool = False, keep=None) -> str:
    """What failed on ``case``, in a sentence or two and without the inputs' values, with the
    kind's hint and the part's diagnosis where there is one. For a hidden case
    (:mod:`attngrade.feedback`): ``coarse`` gives the error's size as a power of ten of the
    tolerance, and ``keep(sentence)`` says whether a sentence the assignment wrote (a
    diagnosis, a check's own message) may be shown."""
    what = failure_text(part, case, outcome, reason, args, kwargs, answer, coarse=coarse, keep=keep)
    hint = hint_text(part, case, outcome, keep)
    return what + (f"{HINT_MARK}{hint}" if hint else "")


def failure_text(part: Part, case: Case, outcome: Outcome, reason: str, args=(), kwargs=None, answer=None, *,
                 coarse: bool = False, keep=None) -> str:
    """The verdict of :func:`explain`: what failed, one sentence ending with a full stop."""
    notes = call_notes(outcome.error)
    budget = case.max_peak_bytes
    if notes is None:
        raised = f"raised {outcome.error}" + (f": {outcome.detail}" if outcome.detail else "")
        what = tripwire.describe(outcome.error) or raised  # a rule of the assignment's, broken at run time
    elif part.keeps_inputs and "inputs" in notes:
        what = (f"changed {_changed(case, args, kwargs or {}, answer)} in place: the task says the "
                "inputs must not be modified (work on a copy)")
    elif part.no_warnings and "warnings" in notes:
        said = f" ({outcome.detail})" if outcome.detail else ""
        what = f"raised a warning{said}: the task says it must not"
    elif budget is not None and (outcome.peak_bytes is None or outcome.peak_bytes > budget):
        what = (f"allocated {_mib(outcome.peak_bytes)} at once where this case allows {_mib(budget)}: "
                "avoid the large intermediate arrays")
    else:
        what = describe_output(part, case, outcome.output, reason, coarse=coarse, keep=keep)
    return what.strip().rstrip(".") + "."


def hint_text(part: Part, case: Case, outcome: Outcome, keep=None) -> str:
    """The hint of :func:`explain`: the part's diagnosis of this output (where ``keep`` accepts
    it), else the hint for the case's kind; "" where there is none."""
    hint = None
    if part.diagnose is not None and call_notes(outcome.error) is not None:
        try:
            hint = part.diagnose(case, outcome.output)
        except Exception:  # noqa: BLE001 - a diagnosis is a hint, never a verdict
            hint = None
        if not isinstance(hint, str) or (keep is not None and not keep(hint)):
            hint = None
    hint = hint or part.hints.get(case.kind)
    hint = hint.strip().rstrip(".") if hint else ""
    return f"{hint}{'' if hint.endswith('?') else '.'}" if hint else ""


def describe_output(part: Part, case: Case, out, reason: str, *, coarse: bool = False, keep=None) -> str:
    """The first difference between ``out`` and the case's expected value, or the check's own
    message where the values agree (a type the check insists on; where ``keep`` refuses that
    message, only that the part's check refused the output)."""
    found = _compare(out, case.expected, case.tol, "the output", part.outputs, _input_dtype(case), coarse)
    if found:
        return found
    message = reason.split(": ", 1)[1] if ": " in reason else reason
    if "entries differ" in message or "NaN mismatch" in message:  # values: say no more than that
        return "wrong values"
    if keep is not None and not keep(message):
        return "the output is not what this part's check accepts"
    return message


def _compare(out, expected, tol: float, name: str, names: tuple, in_dtype,
             coarse: bool = False) -> str | None:
    if isinstance(expected, (tuple, list)):
        if not isinstance(out, (tuple, list)):
            return f"{name} is {_what(out)} where a tuple of {len(expected)} is expected"
        if len(out) != len(expected):
            return f"{name} has {len(out)} items where {len(expected)} are expected"
        for i, (o, e) in enumerate(zip(out, expected)):
            item = names[i] if i < len(names) else f"item {i} of {name}"
            found = _compare(o, e, tol, item, (), in_dtype, coarse)
            if found:
                return found
        return None
    if out is None:
        return f"{name} is None (is a return missing?)"
    if isinstance(out, (tuple, list, str)) or not isinstance(out, (np.ndarray, int, float, bool)):
        return f"{name} is {_what(out)} where {_what_expected(expected)} is expected"
    o, e = np.asarray(out), np.asarray(expected, dtype=np.float64)
    if o.dtype.kind not in "biuf":
        return f"{name} has dtype {o.dtype}, not numbers"
    if o.shape != e.shape:
        return f"{name} has shape {o.shape} where {e.shape} is expected{_shape_hint(o.shape, e.shape)}"
    found = _values(o, e, tol, name, in_dtype, coarse)
    if found and np.asarray(expected).dtype.kind in "biu":  # indices, counts, flags: no rounding
        wrong = int(np.sum(o.astype(np.float64) != e))
        return (f"{name} has {wrong} of {e.size} entries wrong: they are whole numbers or flags, "
                "so no rounding explains a difference")
    return found


def _values(o: np.ndarray, e: np.ndarray, tol: float, name: str, in_dtype,
            coarse: bool = False) -> str | None:
    a = o.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        for test, word in ((np.isnan, "NaN"), (np.isinf, "inf")):
            bad = test(a) & ~test(e)
            if bad.any():
                why = " (a 0/0 or inf - inf: an overflow, or a row with nothing to sum?)" if word == "NaN" else ""
                return f"{name} has {word} in {int(bad.sum())} of {a.size} entries where the reference is finite{why}"
        same = (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e))
        err = np.where(same, 0.0, np.abs(a - e) / (1.0 + np.where(np.isfinite(e), np.abs(e), 0.0)))
    if not err.size or not (err > tol).any():
        return None
    worst, wrong = float(err.max()), int((err > tol).sum())
    size = f"by {_times(worst / tol)} the tolerance" if coarse else f"by up to {worst:.1e}"
    return (f"{name} is off {size} in {wrong} of {a.size} entries where the tolerance is "
            f"{tol:g} "
            f"(|out - ref| <= tol * (1 + |ref|)): {_size_of(worst, o.dtype, in_dtype)}")


def _times(ratio: float) -> str:
    """An error's size against the tolerance, to a power of ten (a hidden case's value stays
    unknown): "up to 10 times", "100 to 1000 times", "1e+04 to 1e+05 times"."""
    if not np.isfinite(ratio):
        return "infinitely more than"
    if ratio <= 10:
        return "up to 10 times"
    k = int(np.floor(np.log10(ratio)))
    lo, hi = (f"{10**k}", f"{10**(k + 1)}") if k < 3 else (f"{10.0**k:.0e}", f"{10.0**(k + 1):.0e}")
    return f"{lo} to {hi} times"


def _size_of(worst: float, out_dtype, in_dtype) -> str:
    """Whether an error of ``worst`` (relative) looks like rounding or like a wrong formula."""
    order = {"float16": 0, "float32": 1, "float64": 2}
    out_name = np.dtype(out_dtype).name
    if in_dtype in order and out_name in order and order[out_name] < order[in_dtype]:
        return (f"the output is {out_name} for {in_dtype} inputs: compute in at least the input's precision "
                "(float16 may be computed in float32)")
    if worst <= 1e-5:
        return ("a small error, the size of float32 rounding or of a small constant (an epsilon) in the "
                "formula: "
                "compute in at least the input's precision (float64 inputs: float64) and add no constant")
    if worst <= 3e-2 and in_dtype in ("float16", "float32"):
        return ("a moderate error, the size of float16 rounding: compute in at least the input's precision "
                "(float16 may be computed in float32)")
    if worst <= 3e-2:
        return ("a moderate error: rather a small change in the formula (a constant, a missing or extra "
                "term, n "
                "instead of n - 1) than rounding, unless something is computed in float16")
    return "far off: not rounding but a wrong formula, axis or case"


def _shape_hint(got: tuple, want: tuple) -> str:
    if got == want[::-1] and len(got) > 1:
        return " (transposed?)"
    if tuple(d for d in want if d != 1) == got:
        return " (a size-1 axis was dropped: np.squeeze, or an index instead of a slice?)"
    if len(got) < len(want) and want[len(want) - len(got):] == got:
        return " (the leading batch axes are missing: index with ... and swap only the last axes)"
    if int(np.prod(got)) == int(np.prod(want)):
        return " (the same number of entries: the axes are in another order)"
    if len(got) == len(want) - 1:
        return " (one axis too few: a sum or max over the wrong axis, or without keepdims?)"
    return ""


def _what(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return "None" if value is None else f"a {type(value).__name__}"


def _what_expected(expected) -> str:
    return "a number" if np.ndim(expected) == 0 else "an array"


def _input_dtype(case: Case) -> str:
    from .spec import _input_precision

    return _input_precision(case)


def _mib(n: int | None) -> str:
    return "an unmeasured amount" if n is None else f"{n / 2**20:.1f} MiB"


def _changed(case: Case, args: tuple, kwargs: dict, answer) -> str:
    """The names of the inputs that differ from the case's own (``q``, or ``argument 2``)."""
    from .spec import _inputs_digest

    try:
        names = list(inspect.signature(answer).parameters) if answer is not None else []
    except (TypeError, ValueError):
        names = []
    def differ(a, b) -> bool:
        return _inputs_digest((a,), {}) != _inputs_digest((b,), {})

    changed = [f"`{names[i]}`" if i < len(names) else f"argument {i + 1}"
               for i, (a, b) in enumerate(zip(args, case.args)) if differ(a, b)]
    changed += [f"`{k}`" for k in kwargs if differ(kwargs[k], case.kwargs.get(k))]
    if not changed:
        return "one of its inputs"
    return f"its input{'s' if len(changed) > 1 else ''} " + ", ".join(changed)


# ----------------------------------------------------------------------------- the notebook's side

#: The width of a message's lines: ``nbgrader validate`` cuts each line of an error at 87
#: characters (its ``Validator.width`` of 90, less an ellipsis), behind an indent of 4.
MESSAGE_WIDTH = 80


_WHERE = re.compile(r" (\(case \d+ of \d+[^()]*\))$")  # check_part's "(case 3 of 12; its inputs: ...)"


def message_lines(text: str) -> list[str]:
    """``text`` as it is shown in the cell, in Validate's dialog and by ``nbgrader validate``:
    lines of at most :data:`MESSAGE_WIDTH` characters, the hint and the failing case's number on
    lines of their own."""
    verdict, _, hint = text.partition(HINT_MARK)
    paragraphs = [verdict] + ([HINT_MARK.strip() + " " + hint] if hint else [])
    where = _WHERE.search(paragraphs[-1])
    if where:
        paragraphs[-1:] = [paragraphs[-1][:where.start()], where.group(1)]
    return [line for paragraph in paragraphs
            for line in textwrap.wrap(paragraph, MESSAGE_WIDTH, break_long_words=False, break_on_hyphens=False)]


#: What a part not attempted reads as (in its cell, in Validate and in the summary).
NOT_ATTEMPTED = "not attempted (it still raises NotImplementedError)"


class NotAttempted(NotImplementedError):
    """A part's answer still raises ``NotImplementedError``: ``"Part 2 not attempted (...)"``,
    which IPython shows alone (one line, no traceback), in the cell and so in Validate."""

    def _render_traceback_(self) -> list[str]:
        return message_lines(str(self))


#: The ``self_check`` helper cell of every released notebook (a test checks that each carries it).
#: It defines its runner itself: the grader's worker runs the notebook without the course library,
#: where each check then fails at once and ``check`` is bound all the same. A failed check raises
#: ``SelfCheckFailed``, shown as :func:`message_lines`; a part not attempted lets
#: :class:`NotAttempted` (from :func:`check_part`) through.
HELPER_CELL = """\
# The self-check helper. Each test cell below runs its part's visible checks inside
# `with self_check("Part N") as check:` and prints one line; the last cell prints the summary.
# `check.run(name, function)` draws the hidden tests' own cases (cases.py, next to this notebook)
# with a public seed of their own, and checks them as the grader does: the same tolerances,
# memory budgets and rules. A failing check names the kind of case, stops its own cell (so
# Validate and the grader see it, with the message the cell shows) but not Run All, and keeps
# that case's inputs in `self_check.inputs["Part N"]` (a pair: positional arguments, keyword
# arguments).


def _course():
    import attngrade.visible  # the course's library, installed with attnmath

    return attngrade.visible


class SelfCheckFailed(AssertionError):
    def _render_traceback_(self):  # IPython shows these short lines instead of a traceback
        return _course().message_lines(str(self))


class self_check:
    results = {}
    inputs = {}

    def __init__(self, part):
        self.part, self.kind = part, ""

    def __enter__(self):
        return self

    def run(self, name, function):
        _course().check_part(self, name, function)

    def __exit__(self, kind, error, traceback):
        where = f" [{self.kind}]" if self.kind else ""
        if kind is None:
            status = "passed"
        elif issubclass(kind, NotImplementedError):
            status = "not attempted (it still raises NotImplementedError)"
        elif issubclass(kind, AssertionError):
            status = f"failed{where}: {error}"
        else:
            status = f"failed{where}: {kind.__name__}: {error}"
        self.results[self.part] = status
        if kind is None:
            print(f"{self.part}: visible checks passed")
        elif not issubclass(kind, NotImplementedError):
            raise SelfCheckFailed(f"{self.part} {status}") from None
        return False

    @classmethod
    def summary(cls, parts):
        for part in parts:
            print(f"{part}: {cls.results.get(part, 'not run: run the test cell under its task')}")"""


def visible_source(part_label: str, function: str) -> str:
    """The visible section of a part's test cell (the hidden section follows it in the source)."""
    return ("# Visible self-checks: the hidden tests' own cases, drawn with another seed (cases.py)\n"
            f'with self_check("{part_label}") as check:\n    check.run("{function}", {function})\n')


# ----------------------------------------------------------------------------- for diagnosers


def factor_hint(out, expected, factors: list[tuple[float, str]], rtol: float = 1e-4) -> str | None:
    """For a ``Part.diagnose``: the words of the first ``(factor, words)`` with
    ``out ≈ factor * expected`` (arrays of the same shape; an all-zero expectation says nothing)."""
    try:
        e = np.asarray(expected, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    for factor, words in factors:
        if like(out, factor * e, e, rtol):
            return words
    return None


def like(out, variant, expected, rtol: float = 1e-6) -> bool:
    """For a ``Part.diagnose``: whether ``out`` matches ``variant`` (what a mistake computes from
    the case's inputs) where the variant is told apart from the ``expected`` value."""
    try:
        o, v, e = (np.asarray(x, dtype=np.float64) for x in (out, variant, expected))
    except (TypeError, ValueError):
        return False
    if not (o.shape == v.shape == e.shape) or not np.isfinite(o).all() or not np.isfinite(v).all():
        return False
    atol = 1e-9 * max(float(np.abs(e).max(initial=0.0)), 1e-300)
    apart = not np.allclose(v, e, rtol=10 * rtol, atol=10 * atol)
    return bool(apart and np.allclose(o, v, rtol=rtol, atol=atol))
