"""The released notebooks' visible self-checks predict the grade, and give no answer away.

Where an assignment's parts live in ``cases.py`` (issue 38), the visible checks are the hidden
tests' own generators drawn with the public visible seed and checked by the same code
(:mod:`attngrade.visible`). The proofs here are then

* **one generator, two draws** (:func:`test_visible_and_hidden_cases_are_two_draws_of_one_generator`):
  each part's visible cases are its hidden cases kind for kind, with the same tolerances, memory
  budgets, input shapes and dtypes, on other values (the course secret's draw too);
* **prediction** (:func:`test_the_visible_checks_predict_the_hidden_verdict`): for the solution,
  the sample submissions and every named mistake below, each part fails its visible checks
  exactly where it fails its hidden tests (run as stock nbgrader runs them);
* **messages**: a named mistake's message names it, and a visible failure names the kind of
  case and what failed, never the inputs' values.

The assignments not converted yet keep the older proof: every kind of hidden case (``Case.kind``)
has a visible check of the same kind, proved by a named mistake per kind (recording mode: every
``assert`` inside a ``with self_check(...) as check:`` block records ``check.kind`` with its
message and carries on; here only, never in the notebooks).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import io
import os
import re
import time
import warnings
from unittest import mock

import numpy as np

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradingkit as gk
from attngrade.notebooks import cell_grade_id, read_answer_script
from attngrade.spec import (Case, Part, check_outputs, compute_outputs, load_cases, load_parts, make_cases,
                            visible_cases)
from attngrade.visible import check_part, explain, run_visible
from kind_mistakes import collect_kind_mistakes

VISIBLE_KIND = "a visible self-check"  # what a check that sets no check.kind is


def drawn(assignment: str) -> bool:
    """Whether the assignment's visible checks draw from its released ``cases.py`` (issue 38)."""
    return (gk.EXERCISES / assignment / "cases.py").is_file()


def _cells(assignment: str, change: dict | None = None, answers: dict[str, str] | None = None):
    """The release's code cells as (grade id, source) with the solution's answers (or
    ``answers``, by grade id), edited by ``change`` (grade id -> (old, new) in that answer, or a
    list of such pairs), hidden tests left out."""
    answers = {**gk.solution_answers(assignment), **(answers or {})}
    for gid, edits in (change or {}).items():
        for old, new in [edits] if isinstance(edits, tuple) else edits:
            assert answers[gid].count(old) == 1, (gid, old)
            answers[gid] = answers[gid].replace(old, new)
    for cell in gk.release(assignment).cells:
        if cell.cell_type == "code":
            gid = cell_grade_id(cell)
            source = answers.get(gid, cell.source)
            yield gid, re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", source, flags=re.S)


def _exec(code, namespace: dict) -> None:
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a mistake's overflow is expected
        exec(code, namespace)  # noqa: S102 - our own notebooks


def _run(assignment: str, change: dict | None = None) -> tuple[str, dict]:
    """Run the release's code cells as the student does (see :func:`_cells`), in the release's
    folder (where ``cases.py`` is); return ``"passed"`` or the first failing check's cell and
    message, and the namespace the cells left."""
    namespace: dict = {}
    # ungraded demos (11's training run) skip under autograde; the visible checks run either way
    with contextlib.chdir(gk.EXERCISES / assignment), mock.patch.dict(os.environ, {"NBGRADER_EXECUTION": "autograde"}):
        for gid, source in _cells(assignment, change):
            try:
                _exec(compile(source, gid or "cell", "exec"), namespace)
            except AssertionError as exc:
                return f"{gid}: {exc}", namespace
    return "passed", namespace


# ----------------------------------------------------------------------------- recording mode

RECORD = "_record_visible_failure"  # the recorder's name in a recording run's namespace


class _RecordAsserts(ast.NodeTransformer):
    """Turns ``assert cond, msg`` into ``if not cond: RECORD(check, msg)``, where ``check`` is the
    self-check the asserts belong to; asserts in loops, branches and functions defined inside the
    block are turned too, and a function's ``check`` is looked up when it is called."""

    def __init__(self, check: str):
        self.check = check

    def visit_Assert(self, node: ast.Assert) -> ast.If:
        message = node.msg if node.msg is not None else ast.Constant("")
        call = ast.Call(ast.Name(RECORD, ast.Load()), [ast.Name(self.check, ast.Load()), message], [])
        return ast.copy_location(ast.If(ast.UnaryOp(ast.Not(), node.test), [ast.Expr(call)], []), node)


def recording(source: str, filename: str = "cell"):
    """``source`` compiled so that every assert inside a ``with self_check(...) as check:`` block
    records its failure and carries on instead of raising."""
    tree = ast.parse(source)
    blocks = [node for node in ast.walk(tree) if isinstance(node, ast.With)]
    for block in blocks:
        item = block.items[0]
        call = item.context_expr
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "self_check"
                and isinstance(item.optional_vars, ast.Name)):
            _RecordAsserts(item.optional_vars.id).visit(block)
    return compile(ast.fix_missing_locations(tree), filename, "exec")


def _record_cells(cells, namespace: dict) -> list[tuple[str, str, str]]:
    """Run ``cells`` ((grade id, source) pairs) in recording mode; return every failing visible
    check as (grade id, kind, message). An exception other than a failed assert is the last
    failure its cell records, of the kind current when it was raised."""
    failures: list[tuple[str, str, str]] = []
    for gid, source in cells:
        namespace[RECORD] = lambda check, message, gid=gid: failures.append(
            (gid, check.kind or VISIBLE_KIND, str(message)))
        try:
            _exec(recording(source, gid or "cell"), namespace)
        except Exception as exc:  # noqa: BLE001 - the check's own wrapper names the kind
            failures.append((gid, _named_kind(f"{gid}: {exc}"), str(exc)))
    return failures


def _run_visible(assignment: str, change: dict[str, tuple[str, str]] | None = None) -> str:
    return _run(assignment, change)[0]


MISTAKES = [
    ("01_softmax", "softmax without keepdims", "test_stable_softmax",
     {"stable_softmax": ("np.max(work, axis=axis, keepdims=True)", "np.max(work, axis=axis)")}),
    ("01_softmax", "the Jacobian with its sign flipped", "test_softmax_jacobian",
     {"softmax_jacobian": ("np.diag(p) - np.outer(p, p)", "np.outer(p, p) - np.diag(p)")}),
    ("05_multihead", "heads scaled by sqrt(C) instead of sqrt(D)", "test_mha_forward",
     {"mha_forward": ("np.sqrt(q.shape[-1])", "np.sqrt(C)")}),
    ("05_multihead", "a backward missing 1/sqrt(D)", "test_mha_backward",
     {"mha_backward": ("scale = 1.0 / np.sqrt(q.shape[-1])", "scale = 1.0")}),
    ("07_efficiency", "a FLOP count off by a factor", "test_attention_costs",
     {"attention_costs": ("softmax_flops = 2 * n * n * d + 2 * n * n * d", "softmax_flops = 2 * n * n * d")}),
    ("02_attention", "scores divided by D instead of sqrt(D)", "test_attention",
     {"attention": ("/ np.sqrt(D)", "/ D")}),
    ("02_attention", "an inverted mask", "test_attention",
     {"attention": ("np.where(mask, scores, -np.inf)", "np.where(~mask, scores, -np.inf)")}),
    ("03_gradients", "dq missing 1/sqrt(D)", "test_attention_backward",
     {"attention_backward": ("dq = scale * (dZ @ k)", "dq = dZ @ k")}),
    ("03_gradients", "dk with its sign flipped", "test_attention_backward",
     {"attention_backward": ("dk = scale * (dZ.T @ q)", "dk = -scale * (dZ.T @ q)")}),
    ("03_gradients", "a masked backward missing 1/sqrt(D)", "test_masked_attention_backward",
     {"masked_attention_backward": ("return scale * (dZ @ k), scale * (dZ.T @ q), dv", "return dZ @ k, dZ.T @ q, dv")}),
    ("03_gradients", "a dropout dk missing 1/sqrt(D)", "test_dropout_attention_backward",
     {"dropout_attention_backward": ("scale * (dZ.T @ q), dv", "dZ.T @ q, dv")}),
    ("04_masking", "a causal mask without its diagonal", "test_causal_mask",
     {"causal_mask": ("np.arange(S)[None, :] <= query_position", "np.arange(S)[None, :] < query_position")}),
    ("04_masking", "an inverted causal mask", "test_causal_mask",
     {"causal_mask": ("np.arange(S)[None, :] <= query_position", "np.arange(S)[None, :] >= query_position")}),
    ("04_masking", "a bottom-right mask shifted the wrong way", "test_causal_mask",
     {"causal_mask": ('else S - L', 'else L - S')}),
    ("04_masking", "a padding mask off by one", "test_padding_mask",
     {"padding_mask": ("np.arange(S)[None, :] < lengths[:, None]", "np.arange(S)[None, :] <= lengths[:, None]")}),
    ("04_masking", "masked attention without the scale", "test_masked_attention",
     {"masked_attention": ("/ np.sqrt(q.shape[-1])", "")}),
    ("06_positional", "RoPE rotating the wrong way", "test_apply_rope",
     {"apply_rope": ("theta = base ** (", "theta = -base ** (")}),
    ("06_positional", "an ALiBi bias with the wrong sign", "test_alibi_bias",
     {"alibi_bias": ("return -alibi_slopes(H)", "return alibi_slopes(H)")}),
    ("08_flash", "flash forward without the scale", "test_flash_forward",
     {"flash_forward": ("scale = 1.0 / np.sqrt(D)", "scale = 1.0")}),
    ("08_flash", "a causal tile mask off by one", "test_flash_forward",
     {"flash_forward": ("allowed = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]",
                        "allowed = np.arange(j0, j1)[None, :] < np.arange(i0, i1)[:, None]")}),
    ("08_flash", "a flash backward dk missing 1/sqrt(D)", "test_flash_backward",
     {"flash_backward": ("dk[..., j0:j1, :] += (np.swapaxes(ds, -1, -2) @ q_i) * scale",
                         "dk[..., j0:j1, :] += np.swapaxes(ds, -1, -2) @ q_i")}),
    ("09_moe", "experts sorted least probable first", "test_top_k_gating",
     {"top_k_gating": ("np.argsort(-probs, axis=1", "np.argsort(probs, axis=1")}),
    ("09_moe", "a softmax over the tokens", "test_top_k_gating",
     {"top_k_gating": ("probs = e / e.sum(axis=1, keepdims=True)", "probs = e / e.sum(axis=0, keepdims=True)")}),
    ("10_theory", "a kernel divided by 2h instead of 2h^2", "test_gaussian_smoother",
     {"gaussian_smoother": ("(2.0 * bandwidth**2)", "(2.0 * bandwidth)")}),
    ("10_theory", "transposed weights", "test_linear_self_attention",
     {"linear_self_attention": ("z @ w_q.T, z @ w_k.T, z @ w_v.T", "z @ w_q, z @ w_k, z @ w_v")}),
    ("10_theory", "a gradient step missing 1/N", "test_icl_prediction",
     {"icl_prediction": ("lr / N * np.eye", "lr * np.eye")}),
    ("11_capstone", "layer norm with the unbiased variance", "test_layer_norm",
     {"layer_norm": ("((x - mu) ** 2).mean(axis=-1, keepdims=True)", "x.var(axis=-1, ddof=1, keepdims=True)")}),
    ("11_capstone", "a summed instead of averaged loss", "test_loss_and_accuracy",
     {"loss_and_accuracy": ("np.mean(lse - picked)", "np.sum(lse - picked)")}),
    ("13_serving", "blocks flattened across heads", "test_gather_sequence",
     {"gather_sequence": ("np.swapaxes(blocks, 0, 1).reshape(H_kv, len(table) * block_size, D)",
                          "blocks.reshape(H_kv, len(table) * block_size, D)")}),
    ("13_serving", "merged outputs not normalised", "test_merge_states",
     {"merge_states": ("out = acc / np.where(seen, total, 1.0)[..., None]", "out = acc")}),
    ("13_serving", "a merge without the max shift", "test_merge_states",
     {"merge_states": ("shift = np.where(np.isneginf(m), 0.0, m)", "shift = np.zeros_like(m)")}),
    ("13_serving", "latent scores scaled by sqrt(d_c)", "test_mla_absorbed",
     {"mla_absorbed": ("/ np.sqrt(D)", "/ np.sqrt(c_kv.shape[1])")}),
    ("13_serving", "int8 scales per token instead of per channel", "test_quantize_int8",
     {"quantize_int8_per_channel": ("np.abs(x).max(axis=0)", "np.abs(x).max(axis=1)")}),
    ("12_induction", "the previous token taken above the diagonal", "test_previous_token_score",
     {"previous_token_score": ("offset=-1", "offset=1")}),
    ("12_induction", "the earlier occurrence instead of the token after it", "test_induction_score",
     {"induction_score": ("target[i, j + 1] = True", "target[i, j] = True")}),
    ("12_induction", "induction scores averaged over every query", "test_induction_score",
     {"induction_score": ("[..., queries].mean(axis=-1)", ".mean(axis=-1)")}),
    ("12_induction", "crossing indices instead of steps", "test_phase_change",
     {"phase_change": ("crossings.append(int(steps[n]))", "crossings.append(n)")}),
    ("14_long_context", "interpolation multiplying the frequencies by s", "test_interpolated_frequencies",
     {"interpolated_frequencies": ("/ scale", "* scale")}),
    ("14_long_context", "an NTK base raised by s^D", "test_ntk_frequencies",
     {"ntk_frequencies": ("scale ** (D / (D - 2))", "scale ** D")}),
    ("14_long_context", "a YaRN ramp the wrong way round", "test_yarn",
     {"yarn": ("(1.0 - gamma) * theta / scale + gamma * theta",
               "gamma * theta / scale + (1.0 - gamma) * theta")}),
    ("14_long_context", "a YaRN factor with log10", "test_yarn",
     {"yarn": ("math.log(scale)", "math.log10(scale)")}),
    ("14_long_context", "a window one token too wide", "test_sink_cache_kept",
     {"sink_cache_kept": ("S - window)", "S - window - 1)")}),
    ("14_long_context", "a ring mask by local positions", "test_ring_attention",
     {"ring_attention": ("mask = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]",
                         "mask = np.tri(i1 - i0, j1 - j0, dtype=bool)")}),
]


# The words each message must use to name the mistake (the older checks above are not listed).
NAMED = {
    "scores divided by D instead of sqrt(D)": "divided by D instead of sqrt(D)", "an inverted mask": "inverted",
    "dq missing 1/sqrt(D)": "lacks the factor", "dk with its sign flipped": "sign is flipped",
    "a masked backward missing 1/sqrt(D)": "lacks the factor", "a dropout dk missing 1/sqrt(D)": "lacks the factor",
    "a causal mask without its diagonal": "off by one", "an inverted causal mask": "inverted",
    "a bottom-right mask shifted the wrong way": "bottom-right", "a padding mask off by one": "off by one",
    "masked attention without the scale": "not scaled", "RoPE rotating the wrong way": "wrong way",
    "an ALiBi bias with the wrong sign": "sign", "flash forward without the scale": "not scaled",
    "heads scaled by sqrt(C) instead of sqrt(D)": "scaled by sqrt(C)",
    "a backward missing 1/sqrt(D)": "leaves out the scale", "a FLOP count off by a factor": "two products",
    "a causal tile mask off by one": "off by one", "a flash backward dk missing 1/sqrt(D)": "lacks the factor",
    "experts sorted least probable first": "wrong order", "a softmax over the tokens": "not over the tokens",
    "a kernel divided by 2h instead of 2h^2": "not by 2h^2", "transposed weights": "transposed",
    "a gradient step missing 1/N": "1/N is missing", "layer norm with the unbiased variance": "biased variance",
    "a summed instead of averaged loss": "not the sum",
    "blocks flattened across heads": "heads are mixed up", "merged outputs not normalised": "sum to one",
    "a merge without the max shift": "subtract the largest lse", "latent scores scaled by sqrt(d_c)": "1/sqrt(d_c)",
    "int8 scales per token instead of per channel": "one scale per channel",
    "the previous token taken above the diagonal": "below the diagonal",
    "the earlier occurrence instead of the token after it": "not the occurrence itself",
    "induction scores averaged over every query": "queries that have an earlier occurrence",
    "crossing indices instead of steps": "not their indices",
    "interpolation multiplying the frequencies by s": "multiplied by s",
    "an NTK base raised by s^D": "not by s^D", "a YaRN ramp the wrong way round": "keep their frequency",
    "a YaRN factor with log10": "natural log", "a window one token too wide": "exactly `window` tokens",
    "a ring mask by local positions": "global positions",
}


@pytest.mark.parametrize("assignment", sorted({m[0] for m in MISTAKES}))
def test_the_solution_passes_every_visible_check(assignment):
    assert _run_visible(assignment) == "passed"


@pytest.mark.parametrize("assignment, mistake, cell, change", MISTAKES, ids=[m[1] for m in MISTAKES])
def test_a_common_mistake_fails_a_visible_check(assignment, mistake, cell, change):
    message = _run_visible(assignment, change)
    assert message.startswith(f"{cell}: "), (mistake, message)
    assert NAMED.get(mistake, "") in message, (mistake, message)


def test_every_named_mistake_is_tried():
    assert set(NAMED) <= {m[1] for m in MISTAKES}


def test_no_visible_message_gives_the_flop_count_away():
    release = next(c for c in gk.release("07_efficiency").cells if cell_grade_id(c) == "test_attention_costs")
    for number in ("1_280_000", "1280000", "100_000_000", "100000000", "4 n^2 d", "422400", "422_400"):
        assert number not in release.source


# ----------------------------------------------------------------------------- the recording is faithful

TOY_CELL = """
with self_check("Part 1") as check:
    def _positive(x, what):
        assert x > 0, f"{what} is not positive"
    assert a < 100, "a is too large"
    check.kind = "first"
    for x in (a, a + 1):
        _positive(x, "a")
    check.kind = "second"
    if b is not None:
        assert b > 0, "b is not positive"
        _positive(b + 1, "b + 1")
"""


def _toy_namespace(**values) -> dict:
    namespace = dict(values)
    _exec(compile(dict(_cells("01_softmax"))["self_check"], "self_check", "exec"), namespace)
    return namespace


@settings(max_examples=60, deadline=None)
@given(st.integers(-3, 101), st.integers(-3, 3))
def test_recording_keeps_every_failing_check_with_its_kind(a, b):
    expected = [("toy", VISIBLE_KIND, "a is too large")] * (a >= 100)
    expected += [("toy", "first", "a is not positive")] * ((a <= 0) + (a + 1 <= 0))
    expected += [("toy", "second", "b is not positive")] * (b <= 0) + [("toy", "second", "b + 1 is not positive")] * (b <= -1)
    assert _record_cells([("toy", TOY_CELL)], _toy_namespace(a=a, b=b)) == expected
    namespace, message = _toy_namespace(a=a, b=b), "passed"  # the student's run stops at the first
    try:
        _exec(compile(TOY_CELL, "toy", "exec"), namespace)
    except AssertionError as exc:
        message = str(exc)
    if expected:
        _cell, kind, first = expected[0]
        assert message == "Part 1 failed" + (f" [{kind}]" if kind != VISIBLE_KIND else "") + f": {first}"
    else:
        assert message == "passed"


def test_recording_ends_a_cell_at_an_error_other_than_a_failed_check():
    cell = """
with self_check("Part 1") as check:
    check.kind = "first"
    assert a > 0, "a is not positive"
    check.kind = "second"
    b + 1
    check.kind = "third"
    assert False, "after the error"
"""
    failures = _record_cells([("toy", cell), ("next", TOY_CELL)], _toy_namespace(a=0, b=None))
    error = "Part 1 failed [second]: TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'"
    assert failures == [("toy", "first", "a is not positive"), ("toy", "second", error),
                        ("next", "first", "a is not positive")]


# ----------------------------------------------------------------------------- every hidden kind

# Mistakes that each fail one kind of hidden case (the older mistakes above count too), one module
# per assignment in kind_mistakes/. The kind count they once proved is replaced by prediction:
# every assignment's visible checks are its hidden cases drawn again, and test_mistakes.py
# measures on fresh mistakes how often they predict the grade. (Each module's GAPS, the kinds no
# mistake covered when the checks were hand-written, is no longer read.)
KIND_MISTAKES, _ = collect_kind_mistakes(gk.ASSIGNMENTS)

ALL_MISTAKES = [m for m in MISTAKES] + KIND_MISTAKES


@functools.lru_cache(maxsize=None)
def _hidden_cases(assignment: str) -> dict:
    """Test cell -> (its part, the part's hidden cases); made once, as they take a while."""
    parts = load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py")
    return {gid: (part, make_cases(part)) for gid, part in parts.items()}


def _hidden_kinds(assignment: str) -> dict[str, set[str]]:
    return {gid: {case.kind for case in cases} for gid, (_part, cases) in _hidden_cases(assignment).items()}


def _named_kind(message: str) -> str:
    found = re.match(r"\S+: Part \d+ failed \[([^\]]+)\]:", message)
    return found.group(1) if found else VISIBLE_KIND


def _fails_hidden(assignment: str, cell: str, kind: str | None, namespace: dict) -> bool:
    """Whether the function that ``namespace`` holds for part ``cell`` fails a hidden case of
    ``kind`` (of any kind: None), each case called as stock nbgrader's kernel calls it."""
    if cell not in _hidden_cases(assignment):  # a cell that grades nothing
        return False
    part, cases = _hidden_cases(assignment)[cell]
    cases = [case for case in cases if kind is None or case.kind == kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        outcomes = compute_outputs(namespace[part.function], cases)
    return any(not check_outputs(part, [c], [o])[0] for c, o in zip(cases, outcomes))


def _verdict(index: int) -> tuple[str, str, bool]:
    """For mistake ``index``: its visible message, the kind that message names, and whether the
    mistake fails a hidden case of that kind (from its one Run All, :func:`_mistake_run`)."""
    verdict = _mistake_run(index)[2]
    if isinstance(verdict, Exception):
        raise verdict
    return verdict


def _recorded(index: int) -> tuple[set[tuple[str, str]], dict]:
    """The (test cell, hidden kind) pairs whose visible checks mistake ``index`` fails (recording
    mode: every failing check, not only the first), and the namespace its cells left."""
    assignment, _name, _cell, change = ALL_MISTAKES[index]
    namespace: dict = {}
    with mock.patch.dict(os.environ, {"NBGRADER_EXECUTION": "autograde"}):  # ungraded demos skip, as graded
        failures = _record_cells(_cells(assignment, change), namespace)
    hidden = _hidden_kinds(assignment)
    return {(cell, kind) for cell, kind, _message in failures if kind in hidden.get(cell, ())}, namespace


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(MISTAKES), len(ALL_MISTAKES)), ids=[m[1] for m in KIND_MISTAKES])
def test_a_mistake_fails_the_hidden_kind_its_visible_check_names(index):
    assignment, name, cell, _change = ALL_MISTAKES[index]
    message, kind, fails = _verdict(index)
    assert message.startswith(f"{cell}: "), (name, message)
    assert kind in _hidden_kinds(assignment)[cell], f"{name}: the visible check names {kind!r}, not a hidden kind"
    assert fails, f"{name}: caught by the visible check of {kind!r} but passes every hidden case of that kind"


# ----------------------------------------------------------------------------- one generator, two draws

DRAWN = [a for a in gk.ASSIGNMENTS if drawn(a)]


def _layout(value):
    """The structure of a case's inputs or expected value: types, shapes and dtypes, no values."""
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.dtype.str)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_layout(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _layout(v)) for k, v in sorted(value.items())))
    if isinstance(value, (bool, str)) or value is None:
        return value  # flags, names and options are part of the structure
    return type(value).__name__


def _shape_of(case: Case):
    return (case.label, case.kind, case.tol, case.max_peak_bytes, _layout(case.args), _layout(case.kwargs),
            _layout(case.expected))


def _arrays(case: Case) -> list[np.ndarray]:
    return [v for v in (*case.args, *case.kwargs.values()) if isinstance(v, np.ndarray) and v.size > 1]


@pytest.mark.parametrize("assignment", DRAWN)
def test_visible_and_hidden_cases_are_two_draws_of_one_generator(assignment):
    """Each visible case is a hidden case's twin: the same kind, label, tolerance, memory budget,
    input and output shapes and dtypes (one Case, made by one generator), on other values."""
    hidden_parts = load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py")
    released = {p.grade_id: p for p in load_cases(gk.EXERCISES / assignment).PARTS}
    assert sorted(released) == sorted(hidden_parts), "hidden_tests.py grades the parts of cases.py"
    for gid, part in released.items():
        assert hidden_parts[gid].cases.__qualname__ == part.cases.__qualname__, gid
        visible, hidden, secret = visible_cases(part), make_cases(part), make_cases(part, "a course secret")
        assert [_shape_of(c) for c in hidden] == [_shape_of(c) for c in secret], gid
        if part.visible_limit is None:
            assert [_shape_of(c) for c in visible] == [_shape_of(c) for c in hidden], gid
        else:  # a smaller sample: every kind and every memory case, each the twin of a hidden case
            assert {c.kind for c in visible} == {c.kind for c in hidden}, gid
            assert {_shape_of(c) for c in visible} <= {_shape_of(c) for c in hidden}, gid
            assert sum(c.max_peak_bytes is not None for c in visible) == sum(
                c.max_peak_bytes is not None for c in hidden), gid
        drawn_values = [(a, b) for v, h in zip(visible, hidden) for a, b in zip(_arrays(v), _arrays(h))
                        if len(np.unique(b)) > 2]
        assert not drawn_values or any(not np.array_equal(a, b) for a, b in drawn_values), \
            f"{gid}: the visible seed draws the same values as the hidden one"


@pytest.mark.parametrize("assignment", DRAWN)
def test_each_parts_visible_checks_take_under_a_second(assignment):
    """The solution's visible checks of each part, as Run All runs them (CPU time: the machine's
    other work does not count)."""
    namespace = _run(assignment)[1]
    slow = {}
    with contextlib.chdir(gk.EXERCISES / assignment):
        for part in load_cases(gk.EXERCISES / assignment).PARTS:
            check = namespace["self_check"]("timing")
            start = time.process_time()
            check_part(check, part.function, namespace[part.function])
            spent = time.process_time() - start
            if spent >= 1.0:
                slow[part.grade_id] = round(spent, 2)
    assert not slow, f"visible checks over a second: {slow}"


# ----------------------------------------------------------------------------- prediction

def _samples(assignment: str) -> list[tuple[str, dict]]:
    return [(f"sample {p.stem}", {"answers": read_answer_script(p)[0]})
            for p in sorted((gk.SAMPLES / assignment).glob("*.py"))]


PREDICTED = [(a, "the solution", {}) for a in DRAWN]
PREDICTED += [(a, name, {"answers": s["answers"]}) for a in DRAWN for name, s in _samples(a)]
PREDICTED += [(m[0], m[1], {"mistake": i}) for i, m in enumerate(ALL_MISTAKES) if m[0] in DRAWN]


def _student_run(assignment: str, change=None, answers=None) -> tuple[dict[str, bool], dict, tuple | None]:
    """Run All, as a student does (a failing cell does not stop the rest), in the release's
    folder: test cell -> whether its visible checks failed (not attempted counts as failed),
    the namespace the cells left, and the first cell that raised with its error (or None)."""
    namespace: dict = {}
    labels = {}
    first = None
    # ungraded demos (11's training run) skip under autograde; the visible checks run either way
    with contextlib.chdir(gk.EXERCISES / assignment), mock.patch.dict(os.environ, {"NBGRADER_EXECUTION": "autograde"}):
        for gid, source in _cells(assignment, change, answers):
            found = re.search(r'with self_check\("(Part \d+)"\)', source)
            if found:
                labels[gid] = found.group(1)
            try:
                _exec(compile(source, gid or "cell", "exec"), namespace)
            except Exception as exc:  # noqa: BLE001 - Run All goes on
                first = first or (gid, exc)
    results = namespace["self_check"].results
    return {gid: results.get(label) != "passed" for gid, label in labels.items()}, namespace, first


@functools.lru_cache(maxsize=None)
def _mistake_run(index: int) -> tuple[dict[str, bool], dict[str, bool], tuple[str, str, bool] | Exception | None]:
    """Mistake ``index`` run once for both tests that read it (so a mistake costs one Run All):
    each test cell's visible verdict (:func:`_student_run`) and hidden verdict
    (:func:`_hidden_failed`), and for a kind mistake its :func:`_verdict`: the first failed
    check's message (``"passed"`` if none), the kind it names, whether the mistake fails a hidden
    case of that kind; or the error a cell raised before any check failed, which a run that stops
    at the first failure (:func:`_run`) raises."""
    assignment, _name, cell, change = ALL_MISTAKES[index]
    visible, namespace, first = _student_run(assignment, change)
    verdict: tuple[str, str, bool] | Exception | None = None
    if index >= len(MISTAKES):
        if first is not None and not isinstance(first[1], AssertionError):
            verdict = first[1]
        else:
            message = f"{first[0]}: {first[1]}" if first else "passed"
            kind = _named_kind(message)
            verdict = (message, kind, _fails_hidden(assignment, cell, kind, namespace))
    return visible, _hidden_failed(assignment, namespace), verdict


def _hidden_failed(assignment: str, namespace: dict) -> dict[str, bool]:
    """Test cell -> whether its hidden tests fail, as ``run_hidden_tests`` decides in the kernel."""
    from attnmath.testing import uses_reference

    failed = {}
    for gid, (part, _cases) in _hidden_cases(assignment).items():
        fn = namespace.get(part.function)
        failed[gid] = (not callable(fn) or uses_reference(fn, forbidden=part.forbidden)
                       or _fails_hidden(assignment, gid, None, namespace))
    return failed


@pytest.mark.slow
@pytest.mark.parametrize("assignment, name, edit", PREDICTED, ids=[f"{a}: {n}" for a, n, _ in PREDICTED])
def test_the_visible_checks_predict_the_hidden_verdict(assignment, name, edit):
    """Every part fails its visible checks exactly where it fails its hidden tests: no false
    alarm, no miss, for right answers, wrong ones and the sample submissions."""
    if "mistake" in edit:
        visible, hidden, _ = _mistake_run(edit["mistake"])
    else:
        visible, namespace, _first = _student_run(assignment, **edit)
        hidden = _hidden_failed(assignment, namespace)
    assert visible == hidden, {gid: ("visible fails" if v else "visible passes",
                                     "hidden fails" if hidden[gid] else "hidden passes")
                               for gid, v in visible.items() if v != hidden[gid]}
    if name != "the solution" and not name.startswith("sample"):
        assert any(visible.values()), f"{name}: the mistake fails nothing"


# ----------------------------------------------------------------------------- the same comparison


def _toy_part(**options) -> Part:
    def cases(rng):
        x = rng.normal(size=(3, 4))
        return [Case((x,), {"axis": -1}, "toy", np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True), kind="toy rows")]

    return Part("test_toy", function="toy", cases=cases, **options)


def _both_sides(part: Part, fn) -> tuple[bool, bool]:
    """(visible passes, hidden passes) for ``fn`` on ``part``: the runner's verdict, and the
    verdict of the cases made with the hidden seed checked as the grader checks them."""
    hidden = make_cases(part)
    return run_visible(part, fn) is None, check_outputs(part, hidden, compute_outputs(fn, hidden))[0]


def _softmax_in_place(x, axis=-1):
    x -= x.max(axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=axis, keepdims=True)
    return x


def test_an_answer_that_works_in_place_is_right_on_both_sides_unless_the_task_forbids_it():
    assert _both_sides(_toy_part(), _softmax_in_place) == (True, True)
    assert _both_sides(_toy_part(keeps_inputs=True), _softmax_in_place) == (False, False)
    part = _toy_part(keeps_inputs=True)
    failed = run_visible(part, _softmax_in_place)
    message = explain(part, *failed[1:], _softmax_in_place)
    assert message.startswith("changed its input `x` in place: the task says the inputs must not be modified")


def test_a_numpy_scalar_is_a_number_on_both_sides():
    def cases(rng):
        return [Case((rng.normal(size=(4, 4)),), {}, "rank", 4, kind="full rank")]

    def integer_check(case, out):
        assert isinstance(out, int), f"expected an int, got {type(out).__name__}"
        assert out == case.expected

    part = Part("test_rank", function="rank", cases=cases, check=integer_check)
    assert _both_sides(part, lambda a: np.int64(np.linalg.matrix_rank(a))) == (True, True)
    assert _both_sides(part, lambda a: float(np.linalg.matrix_rank(a))) == (False, False)


def test_a_warning_fails_both_sides_only_where_the_task_forbids_it():
    def noisy(x, axis=-1):
        warnings.warn("a warning that changes nothing", RuntimeWarning)
        return np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True)

    assert _both_sides(_toy_part(), noisy) == (True, True)
    part = _toy_part(no_warnings=True)
    assert _both_sides(part, noisy) == (False, False)
    failed = run_visible(part, noisy)
    assert "RuntimeWarning: a warning that changes nothing" in explain(part, *failed[1:], noisy)


def test_a_message_tells_rounding_from_a_wrong_formula_and_shows_no_values():
    part = _toy_part()
    x = part.cases(np.random.default_rng(0))[0].args[0]
    answers = {
        "float32": (lambda x, axis=-1: _softmax_in_place(x.astype(np.float32)), "float32 for float64 inputs"),
        "epsilon": (lambda x, axis=-1: np.exp(x) / (np.exp(x).sum(axis=axis, keepdims=True) + 1e-7),
                    "the size of float32 rounding or of a small constant"),
        "wrong axis": (lambda x, axis=-1: np.exp(x) / np.exp(x).sum(axis=0, keepdims=True), "a wrong formula"),
        "transposed": (lambda x, axis=-1: _softmax_in_place(x.copy()).T, "(transposed?)"),
        "NaN": (lambda x, axis=-1: np.full_like(x, np.nan), "NaN in 12 of 12 entries"),
        "tuple": (lambda x, axis=-1: (x, x), "a tuple of 2"),
    }
    for name, (fn, words) in answers.items():
        failed = run_visible(part, fn)
        assert failed is not None, name
        message = explain(part, *failed[1:], fn)
        assert words in message, (name, message)
        shown = set(re.findall(r"-?\d+\.\d+", message))
        assert not shown & {f"{v:.{n}f}" for v in x.ravel() for n in (1, 2, 3, 4)}, (name, message)


def test_a_notebook_downloaded_alone_finds_its_part_in_the_course(tmp_path, monkeypatch):
    """Without ``cases.py`` next to the notebook (a notebook downloaded from the book on its own),
    the runner takes the part from the course's released ``exercises/*/cases.py``."""
    from attngrade.visible import find_part

    monkeypatch.chdir(tmp_path)
    assert find_part("stable_softmax").grade_id == "test_stable_softmax"
    with pytest.raises(AssertionError, match="no part for 'no_such_function'"):
        find_part("no_such_function")
    (tmp_path / "cases.py").write_text("PARTS = []\n")  # a cases.py of its own is the only one read
    with pytest.raises(AssertionError, match="no part for 'stable_softmax'"):
        find_part("stable_softmax")
