"""Hidden tests as data: one specification per assignment, two ways to run it.

Each assignment's hidden tests live in ``solutions/<assignment>/hidden_tests.py`` (nbgrader does
not release that file). It defines ``PARTS``, a list of :class:`Part`: which answer function a
test cell grades, how to make its inputs, and how to check an output::

    PARTS = [
        Part("test_stable_softmax", function="stable_softmax", cases=softmax_cases,
             check=softmax_check, forbidden=("attnmath", "torch")),
    ]

``cases(rng)`` returns a list of :class:`Case` (inputs as plain data: NumPy arrays, numbers,
strings, tuples and lists of those); ``check(case, output)`` raises ``AssertionError`` when the
output is wrong. The same specification runs

* **in the notebook kernel** (:func:`run_hidden_tests`): the hidden section of each test cell is
  one call, so stock ``nbgrader autograde`` and formgrader keep working; and
* **split across processes** by the grading pipeline: the student's process only *computes*
  (:func:`compute_outputs`, whose result is plain data), and the grader's own clean process
  *checks* (:func:`check_outputs`), so nothing the student's code does to its own interpreter can
  turn a wrong output into points.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = [
    "allclose_check",
    "Case",
    "Part",
    "Outcome",
    "load_parts",
    "spec_path",
    "make_cases",
    "compute_outputs",
    "check_outputs",
    "run_hidden_tests",
    "precision_contract",
    "SEED",
    "course_secret",
]

SEED = 20261122  # the hidden inputs' public seed; a part's cases depend on it and on the part's grade id
SPEC_FILE = "hidden_tests.py"
#: The course secret: the environment variable, else this file in the course root (git ignores it).
SECRET_ENV, SECRET_FILE = "ATTNGRADE_COURSE_SECRET", ".attngrade-secret"


def course_secret(root: str | Path | None = None) -> str | None:
    """The course's secret, or None: ``$ATTNGRADE_COURSE_SECRET``, else the first line of
    ``<root>/.attngrade-secret``. With a secret, every hidden case's inputs come from a seed
    drawn from it, so the public hidden tests show the kinds of cases but not their inputs."""
    secret = os.environ.get(SECRET_ENV, "").strip()
    if not secret and root is not None and (Path(root) / SECRET_FILE).is_file():
        lines = (Path(root) / SECRET_FILE).read_text(encoding="utf-8").strip().splitlines()
        secret = lines[0].strip() if lines else ""
    return secret or None


@dataclass
class Case:
    """One call of the answer function with plain-data inputs.

    ``expected`` and ``tol`` are for the check and stay in the grader's process;
    ``max_peak_bytes`` bounds the memory the call may add (measured by the kernel, see
    :mod:`attngrade.sandbox`; by ``tracemalloc`` only in stock nbgrader's kernel);
    ``label`` names the case in the grader's log (never in student feedback); ``kind`` says what
    kind of case it is in a few words that give nothing away ("float16 input", "another axis"),
    and is what the student's feedback names when the case fails.
    """

    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    label: str = ""
    expected: Any = None
    tol: float = 1e-9
    max_peak_bytes: int | None = None
    kind: str = ""


def allclose_check(case: Case, out) -> None:
    """The common check: a finite array of the expected shape, close to ``case.expected``.

    ``|out - expected| <= tol * (1 + |expected|)`` elementwise; any floating dtype is accepted.
    """
    from attnmath.testing import assert_close

    assert out is not None, "returned None"
    expected = np.asarray(case.expected)
    out = np.asarray(out)
    assert out.dtype.kind in "biuf", f"output dtype {out.dtype} is not numeric"
    out = out.astype(np.float64)
    assert out.shape == expected.shape, f"shape {out.shape} != expected {expected.shape}"
    assert np.isfinite(out).all() or not np.isfinite(expected).all(), "NaN or inf in the output"
    assert_close(out, expected.astype(np.float64), rtol=case.tol, atol=case.tol)


@dataclass
class Part:
    """The hidden tests of one autograded test cell (``grade_id``)."""

    grade_id: str
    function: str
    cases: Callable[[np.random.Generator], list[Case]]
    check: Callable[[Case, Any], None] = allclose_check
    forbidden: tuple[str, ...] = ("attnmath", "torch", "scipy", "jax")
    precision: str = ""  # the precision contract in words, where the cases' tolerances do not say it


@dataclass
class Outcome:
    """What the student's process brings back for one case: plain data only."""

    output: Any = None
    error: str | None = None  # the exception's type name, never its message or traceback
    peak_bytes: int | None = None


def spec_path(assignment: str, start: str | Path | None = None) -> Path:
    """Find ``<source>/<assignment>/hidden_tests.py`` for a course.

    ``ATTNGRADE_SPEC_DIR`` (a folder holding ``<assignment>/hidden_tests.py``) wins; otherwise the
    search walks up from ``start`` (default: the working directory, which nbgrader sets to the
    notebook's folder) to the course root that holds ``nbgrader_config.py`` and looks in its
    ``solutions/`` and ``source/`` folders.
    """
    env = os.environ.get("ATTNGRADE_SPEC_DIR")
    if env:
        candidate = Path(env) / assignment / SPEC_FILE
        if candidate.is_file():
            return candidate
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "nbgrader_config.py").is_file():
            for source in ("solutions", "source"):
                candidate = folder / source / assignment / SPEC_FILE
                if candidate.is_file():
                    return candidate
    raise FileNotFoundError(f"no {SPEC_FILE} for assignment {assignment!r} above {here}")


def load_parts(path: str | Path) -> dict[str, Part]:
    """Import a ``hidden_tests.py`` by path and return its parts by grade id."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"_hidden_tests_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parts = {p.grade_id: p for p in module.PARTS}
    if len(parts) != len(module.PARTS):
        raise ValueError(f"{path}: two parts share a grade id")
    return parts


def _input_precision(case: Case) -> str:
    """The narrowest floating dtype among a case's array inputs, or "other"."""
    found = []

    def walk(value, depth=0):
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            found.append(value.dtype)
        elif isinstance(value, (list, tuple)) and depth < 4:
            for v in value:
                walk(v, depth + 1)

    walk(list(case.args) + list(case.kwargs.values()))
    return min(found, key=lambda d: d.itemsize).name if found else "other"


def precision_contract(part: Part, cases: list[Case] | None = None) -> str:
    """The task's precision contract, one Markdown sentence, from the part's own cases.

    Stated in each task's text (``solutions/*/*.ipynb``; a test checks that it matches), so the
    hidden tests follow what the student was told: the tolerance for each input dtype.
    """
    if part.precision:
        return f"**Precision contract.** {part.precision}"
    cases = make_cases(part) if cases is None else cases
    tols: dict[str, list[float]] = {}
    for case in cases:
        tols.setdefault(_input_precision(case), []).append(float(case.tol))
    terms = []
    for key in sorted(tols, key=lambda k: ("float64", "float32", "float16", "other").index(k)
                      if k in ("float64", "float32", "float16", "other") else 9):
        lo, hi = min(tols[key]), max(tols[key])
        value = f"{hi:g}" if lo == hi else f"{lo:g} to {hi:g}"
        terms.append(f"{value} for {key} inputs" if key != "other" else f"{value} for other inputs")
    return (
        "**Precision contract.** Each output is compared with a float64 reference entry by entry, "
        "`|out - ref| <= tol * (1 + |ref|)`, with tol = " + "; ".join(terms) + ". Compute in at least "
        "the input's precision (float16 may be computed in float32); any floating dtype may be returned."
    )


def make_cases(part: Part, secret: str | None = None) -> list[Case]:
    """The part's cases, from a generator seeded by :data:`SEED` and the grade id, or by the
    course secret and the grade id (:func:`course_secret`)."""
    if secret:
        digest = hashlib.sha256(f"{secret}\0{part.grade_id}".encode()).digest()
        seed = int.from_bytes(digest[:8], "little")
    else:
        seed = SEED + sum(map(ord, part.grade_id))
    return list(part.cases(np.random.default_rng(seed)))


def call_case(fn: Callable, args: tuple, kwargs: dict, guard=None) -> Outcome:
    """One call of an answer: its output as plain data, or the name of what it raised.

    Runs in the student's process. The output is converted to plain data here (arrays, numbers,
    nested tuples/lists), so an object with a permissive ``__eq__`` becomes an error, not a pass.
    ``guard`` (a context manager) surrounds the call itself and not the conversion: the worker
    passes the student's builtins there (see :mod:`attngrade.worker`).
    """
    try:
        with guard if guard is not None else contextlib.nullcontext():
            value = fn(*args, **kwargs)
        return Outcome(to_plain(value), None)
    except BaseException as exc:  # noqa: BLE001 - a student's exception is data
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return Outcome(None, type(exc).__name__)


def compute_outputs(fn: Callable, cases: list[Case]) -> list[Outcome]:
    """Call ``fn`` on every case inside one interpreter (stock ``nbgrader autograde``'s kernel).

    Memory-limited cases are measured with ``tracemalloc`` in that same interpreter, which the
    answer could fool: ``attngrade`` never uses this; its verdicts come from the kernel's count
    of the worker's memory, read by the grader (:mod:`attngrade.sandbox`).
    """
    outcomes = []
    for case in cases:
        traced = case.max_peak_bytes is not None
        if traced:
            tracemalloc.start()
        try:
            outcome = call_case(fn, case.args, case.kwargs)
            if traced and outcome.error is None:
                outcome.peak_bytes = tracemalloc.get_traced_memory()[1]
        finally:
            if traced:
                tracemalloc.stop()
        outcomes.append(outcome)
    return outcomes


def to_plain(value):
    """Convert an answer's output to plain data, or raise ``TypeError``."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise TypeError(f"output array has dtype {value.dtype}")
        return np.array(value, copy=True)
    if isinstance(value, (bool, int, float, complex, str)) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_plain(v) for v in value)
    if type(value).__module__.startswith("torch"):
        raise TypeError("output is a torch tensor; return a NumPy array")
    raise TypeError(f"output of type {type(value).__name__} is not plain data")


def check_outputs(part: Part, cases: list[Case], outcomes: list[Outcome]) -> tuple[bool, str]:
    """Check a part's outcomes in the grader's process: ``(passed, reason)``.

    The reason is for the grader's log; student feedback shows only pass/fail per part.
    """
    if len(outcomes) != len(cases):
        return False, f"expected {len(cases)} outcomes, got {len(outcomes)}"
    for i, (case, outcome) in enumerate(zip(cases, outcomes)):
        name = case.label or f"case {i}"
        if outcome.error is not None:
            return False, f"{name}: raised {outcome.error}"
        if case.max_peak_bytes is not None:
            if outcome.peak_bytes is None or outcome.peak_bytes > case.max_peak_bytes:
                return False, f"{name}: allocated {outcome.peak_bytes} bytes, limit {case.max_peak_bytes}"
        try:
            part.check(case, outcome.output)
        except AssertionError as exc:
            return False, f"{name}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a malformed output is a failure, not a crash
            return False, f"{name}: {type(exc).__name__} while checking: {exc}"
    return True, "passed"


def run_hidden_tests(assignment: str, grade_id: str, namespace: dict) -> None:
    """The hidden section of a test cell: run one part inside the notebook's kernel.

    Raises ``AssertionError`` with a short message (no inputs) when the part fails. Used by
    stock ``nbgrader autograde``; the grading pipeline runs the same part split across processes.
    """
    from attnmath.testing import uses_reference

    path = spec_path(assignment)
    part = load_parts(path)[grade_id]
    fn = namespace.get(part.function)
    if not callable(fn):
        raise AssertionError(f"{part.function} is not defined")
    if uses_reference(fn, forbidden=part.forbidden):
        raise AssertionError(f"{part.function} calls a reference implementation; implement it yourself")
    cases = make_cases(part, course_secret(path.parents[2]))
    passed, reason = check_outputs(part, cases, compute_outputs(fn, cases))
    if not passed:
        raise AssertionError(f"hidden tests of {part.function} failed")
