"""Hidden tests and visible self-checks as data: one case generator per part, two seeds.

An assignment's parts live in ``solutions/<assignment>/cases.py``, which nbgrader releases with
the notebook. It defines ``PARTS``, a list of :class:`Part`: which answer function a test cell
grades, how to make its cases, how to check an output, and what else the task states::

    PARTS = [
        Part("test_stable_softmax", function="stable_softmax", cases=softmax_cases,
             check=softmax_check, forbidden=("attnmath", "torch")),
    ]

``cases(rng)`` returns a list of :class:`Case` (inputs as plain data: NumPy arrays, numbers,
strings, tuples and lists of those; the expected output computed from them before any answer
runs; the tolerance, the memory budget and the kind of case). Its structure (kinds, shapes,
dtypes, budgets) is fixed and its values come from ``rng``. ``check(case, output)`` raises
``AssertionError`` when the output is wrong.

``solutions/<assignment>/hidden_tests.py`` (never released) takes the parts from ``cases.py``
(:func:`load_cases`). The same parts are drawn twice:

* **hidden tests** (:func:`make_cases`): with :data:`SEED`, or with the course secret
  (:func:`course_secret`), which the students never see;
* **visible self-checks** (:func:`visible_cases`, run by :mod:`attngrade.visible` in the
  student's kernel): with the public :data:`VISIBLE_SEED`: the same kinds, shapes, tolerances and
  budgets on other values, checked by the same code (:func:`compute_outputs`,
  :func:`check_outputs`), so that passing them predicts the grade.

A part may depend on the student's **variant** (:mod:`attngrade.variants`: parameters such as a
temperature, declared by ``VARIANTS`` in ``cases.py``; ``Part.variants`` and ``Part.params``):
its generator is then ``cases(rng, variant)``. The hidden draw takes the variant of
(course secret, assignment, student id) (:func:`make_cases`), the visible draw the variant in the
student's ``variant.json`` next to ``cases.py`` (read by :func:`load_cases`), and both the
default variant where there is no secret, student or file.

The hidden tests run

* **in the notebook kernel** (:func:`run_hidden_tests`): the hidden section of each test cell is
  one call, so stock ``nbgrader autograde`` and formgrader keep working; and
* **split across processes** by the grading pipeline: the student's process only *computes*
  (:func:`call_case`, whose result is plain data), and the grader's own clean process
  *checks* (:func:`check_outputs`), so nothing the student's code does to its own interpreter can
  turn a wrong output into points.

What the task states besides the values is checked the same way on both sides: every call gets
its own copies of the inputs (an answer that works in place is fine), and :func:`call_case`
notes whether the call changed its inputs or warned; :func:`check_outputs` fails the case where
the part says the task forbids it (``Part.keeps_inputs``, ``Part.no_warnings``).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.util
import os
import tracemalloc
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .variants import Variants, variants_of

__all__ = [
    "allclose_check",
    "Case",
    "Part",
    "Outcome",
    "load_parts",
    "spec_path",
    "make_cases",
    "visible_cases",
    "load_cases",
    "run_case",
    "compute_outputs",
    "check_outputs",
    "run_hidden_tests",
    "precision_contract",
    "SEED",
    "VISIBLE_SEED",
    "course_secret",
]

SEED = 20261122  # the hidden inputs' public seed; a part's cases depend on it and on the part's grade id
#: The visible self-checks' seed, public and different from SEED: the same cases on other values.
VISIBLE_SEED = 31415926
SPEC_FILE = "hidden_tests.py"
CASES_FILE = "cases.py"  # the released case generators, next to the notebook
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
    """One autograded test cell (``grade_id``): its answer function, its cases and its checks.

    Besides the values, the task may state that the inputs must not be modified
    (``keeps_inputs``) or that the answer must not warn (``no_warnings``): both sides fail a call
    that does. The rest is for the visible checks' messages only and never decides anything:
    ``outputs`` names the items of a tuple output, ``hints`` maps a kind of case to a hint shown
    when a case of that kind fails, ``diagnose(case, output)`` may name the likely mistake after
    a failure (from the case's own inputs and expected value, which no answer has touched), and
    ``visible_limit`` caps the visible sample where the whole draw would take over a second
    (:func:`visible_cases`).
    """

    grade_id: str
    function: str
    cases: Callable[[np.random.Generator], list[Case]]
    check: Callable[[Case, Any], None] = allclose_check
    forbidden: tuple[str, ...] = ("attnmath", "torch", "scipy", "jax")
    precision: str = ""  # the precision contract in words, where the cases' tolerances do not say it
    keeps_inputs: bool = False
    no_warnings: bool = False
    outputs: tuple[str, ...] = ()
    hints: dict[str, str] = field(default_factory=dict)
    diagnose: Callable[[Case, Any], str | None] | None = None
    visible_limit: int | None = None
    variants: Variants | None = None  # the assignment's parameters: then ``cases(rng, variant)``
    params: tuple[str, ...] = ()  # the parameters this part's expected values depend on (default: all)
    given: dict | None = field(default=None, repr=False, compare=False)  # the released file's variant

    def __post_init__(self):
        if self.params and self.variants is None:
            raise ValueError(f"part {self.grade_id}: params {self.params} need variants")
        if self.variants is not None:
            self.params = tuple(self.params) or tuple(p.name for p in self.variants.params)
            for name in self.params:
                self.variants.param(name)

    def variant(self, secret: str | None = None, student: str | None = None) -> dict | None:
        """The variant this part's cases are drawn for (None for a part without variants)."""
        return None if self.variants is None else self.variants.draw(secret, student)


@dataclass
class Outcome:
    """What the student's process brings back for one case: plain data only."""

    output: Any = None
    error: str | None = None  # the exception's type name (or the call's notes), never its message
    peak_bytes: int | None = None
    detail: str = ""  # the exception's message or the first warning: the visible checks' only


#: ``Outcome.error`` of a call that returned but changed its inputs or warned (:func:`call_case`):
#: an identifier, as the grader accepts only those, that no exception's name starts with by chance.
NOTES_PREFIX = "CallNotes_"


def call_notes(error: str | None) -> set[str] | None:
    """The notes of a call that returned (``{"inputs", "warnings"}`` or a part of it), or None
    where ``error`` is an exception's name (or None: no error, no notes: an empty set)."""
    if error is None:
        return set()
    if not error.startswith(NOTES_PREFIX):
        return None
    return set(error[len(NOTES_PREFIX):].split("_")) & {"inputs", "warnings"}


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


def _import_by_path(path: Path, prefix: str):
    """Import the Python file ``path`` under a private name (not kept in ``sys.modules``: two
    assignments' files never shadow each other)."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(f"{prefix}_{path.parent.name}_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_parts(path: str | Path) -> dict[str, Part]:
    """Import a ``hidden_tests.py`` (or a ``cases.py``) by path and return its parts by grade id."""
    module = _import_by_path(Path(path), "_hidden_tests")
    parts = {p.grade_id: p for p in module.PARTS}
    if len(parts) != len(module.PARTS):
        raise ValueError(f"{path}: two parts share a grade id")
    return parts


def load_cases(near: str | Path):
    """The module ``cases.py`` of an assignment: the file itself, or the one in the folder
    ``near`` (or in the folder of the file ``near``, as ``hidden_tests.py`` passes its own
    ``__file__``)."""
    path = Path(near)
    if path.name != CASES_FILE:
        path = (path if path.is_dir() else path.parent) / CASES_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {CASES_FILE} in {path.parent}")
    module = _import_by_path(path, "_cases")
    if not isinstance(getattr(module, "PARTS", None), list):
        raise ValueError(f"{path} defines no PARTS list")
    variants = variants_of(module)
    given = variants.read(path.parent) if variants is not None else None
    for part in module.PARTS:
        if part.variants is not None:
            if part.variants is not variants:
                raise ValueError(f"{path}: part {part.grade_id} has variants other than the file's VARIANTS")
            part.given = given
    return module


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


def _seed(part: Part, secret: str | None, base: int) -> int:
    if secret:
        digest = hashlib.sha256(f"{secret}\0{part.grade_id}".encode()).digest()
        return int.from_bytes(digest[:8], "little")
    return base + sum(map(ord, part.grade_id))


def _draw(part: Part, rng: np.random.Generator, variant: dict | None) -> list[Case]:
    if part.variants is None:
        return list(part.cases(rng))
    return list(part.cases(rng, part.variants.check(variant, f"the variant of {part.grade_id}")))


def make_cases(part: Part, secret: str | None = None, student: str | None = None) -> list[Case]:
    """The part's hidden cases, from its generator seeded by :data:`SEED` and the grade id, or by
    the course secret and the grade id (:func:`course_secret`); for a part with variants, drawn
    for ``student``'s variant (:meth:`Part.variant`: the default without a secret or a student)."""
    rng = np.random.default_rng(_seed(part, secret, SEED))
    return _draw(part, rng, part.variant(secret, student))


def visible_cases(part: Part, variant: dict | None = None) -> list[Case]:
    """The part's visible cases: its generator seeded by :data:`VISIBLE_SEED` and the grade id,
    that is the hidden cases' kinds, shapes, dtypes, tolerances and budgets on other values; for
    a part with variants, drawn for ``variant``, else the one of the student's ``variant.json``
    (``Part.given``), else the default.

    Where ``part.visible_limit`` caps the sample, the first case of every kind comes first, then
    the rest in order, and every memory-limited case is kept.
    """
    if part.variants is not None and variant is None:
        variant = part.given if part.given is not None else part.variants.default()
    cases = _draw(part, np.random.default_rng(_seed(part, None, VISIBLE_SEED)), variant)
    limit = part.visible_limit
    if limit is None or len(cases) <= limit:
        return cases
    chosen, kinds = [], set()
    for i, case in enumerate(cases):
        if case.kind not in kinds or case.max_peak_bytes is not None:
            chosen.append(i)
            kinds.add(case.kind)
    chosen += [i for i in range(len(cases)) if i not in chosen][: max(0, limit - len(chosen))]
    return [cases[i] for i in sorted(chosen)]


def _digest(value, h, depth: int = 0) -> None:
    """Feed ``value`` (plain data) into the hash ``h``: arrays by dtype, shape and bytes, read in
    place (a memory-limited call's count must not see a copy)."""
    if isinstance(value, np.ndarray):
        h.update(f"{value.dtype.str}{value.shape}".encode())
        if value.flags.c_contiguous:
            h.update(memoryview(value.reshape(-1).view(np.uint8)))
        elif value.ndim > 1 and depth < 32:
            for row in value:
                _digest(row, h, depth + 1)
        else:
            h.update(memoryview(np.ascontiguousarray(value).reshape(-1).view(np.uint8)))
    elif isinstance(value, (list, tuple)) and depth < 32:
        h.update(f"{type(value).__name__}{len(value)}".encode())
        for v in value:
            _digest(v, h, depth + 1)
    elif isinstance(value, dict) and depth < 32:
        for key in sorted(value, key=repr):
            h.update(repr(key).encode())
            _digest(value[key], h, depth + 1)
    else:
        h.update(repr(value).encode())


def _inputs_digest(args: tuple, kwargs: dict) -> bytes | None:
    try:
        h = hashlib.blake2b(digest_size=16)
        _digest((args, kwargs), h)
        return h.digest()
    except Exception:  # noqa: BLE001 - inputs that cannot be read are not checked
        return None


def call_case(fn: Callable, args: tuple, kwargs: dict, guard=None, detail: bool = False) -> Outcome:
    """One call of an answer: its output as plain data, or the name of what it raised.

    Runs in the student's process. The output is converted to plain data here (arrays, numbers,
    nested tuples/lists; a NumPy scalar becomes a Python number), so an object with a permissive
    ``__eq__`` becomes an error, not a pass. ``guard`` (a context manager) surrounds the call
    itself and not the conversion: the worker passes the student's builtins there (see
    :mod:`attngrade.worker`). A call that returns but changed its inputs or warned gets the
    notes ``NOTES_PREFIX + "inputs"`` / ``"warnings"`` as its error, and its output all the same:
    :func:`check_outputs` decides whether the part allows it. ``detail`` (the visible checks
    only, never the worker: it would run the student's ``__str__``) keeps the exception's message
    or the first warning in ``Outcome.detail``.
    """
    before = _inputs_digest(args, kwargs)
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with guard if guard is not None else contextlib.nullcontext():
                value = fn(*args, **kwargs)
        outcome = Outcome(to_plain(value), None)
    except BaseException as exc:  # noqa: BLE001 - a student's exception is data
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return Outcome(None, type(exc).__name__, detail=_first_line(exc) if detail else "")
    notes = [name for name, yes in (("inputs", before is not None and _inputs_digest(args, kwargs) != before),
                                    ("warnings", bool(caught))) if yes]
    if notes:
        outcome.error = NOTES_PREFIX + "_".join(notes)
    if caught and detail:
        first = caught[0]
        outcome.detail = f"{getattr(first.category, '__name__', 'Warning')}: {_first_line(first.message)}"
    return outcome


def _first_line(value) -> str:
    try:
        text = str(value)
    except Exception:  # noqa: BLE001
        return ""
    return (text.splitlines() or [""])[0][:200]


def run_case(fn: Callable, case: Case, detail: bool = False) -> tuple[Outcome, tuple, dict]:
    """One case in this interpreter: the call gets its own deep copies of the inputs (returned
    with the outcome: an answer may change them, the case stays as made); a memory-limited case
    is measured with ``tracemalloc`` from the call's start. ``detail``: see :func:`call_case`."""
    args, kwargs = copy.deepcopy(tuple(case.args)), copy.deepcopy(dict(case.kwargs))
    if case.max_peak_bytes is None:
        return call_case(fn, args, kwargs, detail=detail), args, kwargs
    running = tracemalloc.is_tracing()
    if not running:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        outcome = call_case(fn, args, kwargs, detail=detail)
        if call_notes(outcome.error) is not None:
            outcome.peak_bytes = max(0, tracemalloc.get_traced_memory()[1] - start)
    finally:
        if not running:
            tracemalloc.stop()
    return outcome, args, kwargs


def compute_outputs(fn: Callable, cases: list[Case]) -> list[Outcome]:
    """Call ``fn`` on every case inside one interpreter (stock ``nbgrader autograde``'s kernel and
    the visible checks), each on its own copies of the inputs (:func:`run_case`).

    Memory-limited cases are measured with ``tracemalloc`` in that same interpreter, which the
    answer could fool: ``attngrade`` never uses this; its verdicts come from the kernel's count
    of the worker's memory, read by the grader (:mod:`attngrade.sandbox`).
    """
    return [run_case(fn, case)[0] for case in cases]


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
        notes = call_notes(outcome.error)
        if notes is None:
            return False, f"{name}: raised {outcome.error}"
        if part.keeps_inputs and "inputs" in notes:
            return False, f"{name}: changed its inputs"
        if part.no_warnings and "warnings" in notes:
            return False, f"{name}: warned"
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
    cases = make_cases(part, course_secret(path.parents[2]), _autograded_student(path.parents[2], assignment))
    passed, reason = check_outputs(part, cases, compute_outputs(fn, cases))
    if not passed:
        raise AssertionError(f"hidden tests of {part.function} failed")


def _autograded_student(root: Path, assignment: str) -> str | None:
    """The student whose notebook stock ``nbgrader autograde`` runs: its working folder is
    ``<course root>/<autograded>/<student>/<assignment>``; None anywhere else (the default variant)."""
    here = Path.cwd().resolve()
    if here.name == assignment and len(here.parents) > 2 and here.parents[2] == Path(root).resolve():
        return here.parent.name
    return None
