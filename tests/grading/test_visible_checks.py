"""The released notebooks' visible self-checks catch the common mistakes, and give no answer away.

Passing the visible checks predicts the grade: every kind of hidden case (``Case.kind`` in
``solutions/*/hidden_tests.py``) has a visible check of the same kind on other inputs. The proof is
a named mistake per kind: it fails at least one hidden case of that kind, and the visible check
that stops it names the same kind (``check.kind`` in the test cell; a check that names no kind
is of the kind "a visible self-check"). The kinds are read from the hidden tests themselves, so a
new kind fails :func:`test_every_hidden_kind_has_a_visible_check` until a mistake covers it.

A student sees only the first failing check of a cell, so the coverage proof also runs each test
cell in a recording mode (here only, never in the notebooks): every ``assert`` inside a
``with self_check(...) as check:`` block, in loops and helpers too, records ``check.kind`` as it
stands at that moment with its message, and carries on. A mistake proves every kind K that a
visible check of K fails in a cell and a hidden case of K of that cell's part fails as well;
:func:`test_a_mistake_fails_the_hidden_kind_its_visible_check_names` still proves the first.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import io
import os
import re
import warnings
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradingkit as gk
from attngrade.notebooks import cell_grade_id
from attngrade.spec import check_outputs, compute_outputs, load_parts, make_cases
from kind_mistakes import collect_kind_mistakes

VISIBLE_KIND = "a visible self-check"  # what a check that sets no check.kind is


def _cells(assignment: str, change: dict[str, tuple[str, str]] | None = None):
    """The release's code cells as (grade id, source) with the solution's answers (``change``:
    grade id -> (old, new) in that answer, or a list of such pairs), hidden tests left out."""
    answers = gk.solution_answers(assignment)
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


def _run(assignment: str, change: dict[str, tuple[str, str]] | None = None) -> tuple[str, dict]:
    """Run the release's code cells as the student does (see :func:`_cells`); return ``"passed"``
    or the first failing check's cell and message, and the namespace the cells left."""
    namespace: dict = {}
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

# Mistakes that each fail one kind of hidden case (the older mistakes above count too), and the
# hidden kinds that no named mistake covers yet, one module per assignment in kind_mistakes/. The
# coverage test fails when a kind is covered (remove it from GAPS) and when a new kind appears.
KIND_MISTAKES, GAPS = collect_kind_mistakes(gk.ASSIGNMENTS)

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


def _fails_hidden(assignment: str, cell: str, kind: str, namespace: dict) -> bool:
    """Whether the function that ``namespace`` holds for part ``cell`` fails a hidden case of ``kind``."""
    if cell not in _hidden_cases(assignment):  # a cell that grades nothing
        return False
    part, cases = _hidden_cases(assignment)[cell]
    cases = [copy.deepcopy(case) for case in cases if case.kind == kind]  # an answer may write to its input
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        outcomes = compute_outputs(namespace[part.function], cases)
    return any(not check_outputs(part, [c], [o])[0] for c, o in zip(cases, outcomes))


@functools.lru_cache(maxsize=None)
def _verdict(index: int) -> tuple[str, str, bool]:
    """For mistake ``index``: its visible message, the kind that message names, and whether the
    mistake fails a hidden case of that kind."""
    assignment, _name, cell, change = ALL_MISTAKES[index]
    message, namespace = _run(assignment, change)
    kind = _named_kind(message)
    return message, kind, _fails_hidden(assignment, cell, kind, namespace)


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


@pytest.mark.slow
@pytest.mark.parametrize("assignment", gk.ASSIGNMENTS)
def test_every_hidden_kind_has_a_visible_check(assignment):
    hidden = _hidden_kinds(assignment)
    everything = {(cell, kind) for cell, kinds in hidden.items() for kind in kinds}
    covered: set[tuple[str, str]] = set()
    for index, mistake in enumerate(ALL_MISTAKES):
        if mistake[0] == assignment and covered != everything:
            failed, namespace = _recorded(index)  # a kind is proved where the hidden cases fail too
            covered |= {key for key in failed - covered if _fails_hidden(assignment, *key, namespace)}
    missing = {}
    for cell, kinds in hidden.items():
        left = {kind for kind in kinds if (cell, kind) not in covered}
        if left:
            missing[(assignment, cell)] = left
    expected = {key: value for key, value in GAPS.items() if key[0] == assignment}
    assert missing == expected
