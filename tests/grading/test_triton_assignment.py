"""Exercise 17 (the flash-attention forward pass in Triton): the one assignment whose answers may
import torch and triton. Its correctness is graded on the CPU under ``TRITON_INTERPRET=1``; its
speed part is timed only where the grading host has a GPU (``attngrade.leaderboard``), and says
"not timed here" elsewhere; a call of PyTorch's attention or of the course's kernels earns
nothing; every other assignment still blocks torch.

The rest of 17's checks are the course's own: ``test_every_assignment`` (solution, release and
samples, the SDPA-calling ``delegating`` among them, through the grader), ``test_visible_checks``
(its kind mistakes: no rescaling, a causal mask off by one, float16 accumulation),
``test_mistakes`` and ``tests/exercises`` (stock nbgrader, the release in sync).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

import gradingkit as gk
from attngrade import leaderboard
from attngrade.grader import PartResult, Result, _allowed_modules, grade_submission, load_assignment, load_course
from attngrade.sandbox import Limits, site_view
from attngrade.spec import load_cases, make_cases
from attngrade.staticcheck import REFERENCE_MODULES, analyse_cell
from attngrade.submissions import Submission

A = "17_triton_flash"


def _speed_spec():
    parts = load_cases(gk.SOLUTIONS / A).PARTS
    return SimpleNamespace(name=A, parts=[SimpleNamespace(grade_id=p.grade_id, part=p) for p in parts])


# ---- the speed part and the leaderboard ---------------------------------------------------------


def test_the_speed_points_run_from_the_course_kernels_time_to_three_times_it():
    assert leaderboard.speed_points(2.0, 0.5) == leaderboard.speed_points(2.0, 1.0) == 2.0
    assert leaderboard.speed_points(2.0, 2.0) == 1.0
    assert leaderboard.speed_points(2.0, 3.0) == leaderboard.speed_points(2.0, 7.0) == 0.0
    with pytest.raises(ValueError, match="ratio"):
        leaderboard.speed_points(2.0, 0.0)


def test_without_a_gpu_the_speed_part_is_not_timed_and_a_correct_answer_earns_its_points():
    assert not leaderboard.gpu_available()  # this machine: no CUDA
    speed = next(p for p in load_cases(gk.SOLUTIONS / A).PARTS if leaderboard.is_speed_part(p))
    assert leaderboard.repeats(speed) == 0  # the worker times nothing
    cases = make_cases(speed)
    assert leaderboard.NOT_TIMED_KIND in {c.kind for c in cases}
    assert all(c.kind.startswith(leaderboard.NOT_TIMED) for c in cases)
    score, message, detail = leaderboard.verdict(2.0, cases, [None] * len(cases))
    assert score == 2.0 and "not timed here" in message and detail == leaderboard.NOT_TIMED


def test_timed_calls_are_scored_against_the_course_kernel_and_ranked_anonymously(monkeypatch):
    monkeypatch.setattr(leaderboard, "course_seconds", lambda case: 1e-3)
    cases = [SimpleNamespace(), SimpleNamespace()]
    score, message, detail = leaderboard.verdict(2.0, cases, [2e-3, 2e-3])
    assert score == 1.0 and "2.00x the course kernel" in message and leaderboard.speed_ratio(detail) == 2.0
    assert leaderboard.verdict(2.0, cases, [2e-3, None])[0] == 0.0  # a call not measured earns nothing
    spec = _speed_spec()
    results = []
    for student, seconds in (("ada", 1.5e-3), ("bob", 0.8e-3), ("cy", None)):
        detail = leaderboard.verdict(2.0, cases, [seconds, seconds])[2] if seconds else leaderboard.NOT_TIMED
        res = Result(student, "graded")
        res.parts["test_triton_speed"] = PartResult(1.0, 2.0, True, "", detail)
        results.append(res)
    rows = leaderboard.board(spec, results, "course secret")
    assert [r["ratio"] for r in rows] == [0.8, 1.5]  # fastest first; the untimed one is not ranked
    assert rows[0]["id"] == leaderboard.anonymous_id("bob", "course secret") != leaderboard.anonymous_id("bob", "x")
    page = "\n".join(leaderboard.board_html(spec, results, "course secret"))
    assert "Leaderboard" in page and rows[0]["id"] in page
    assert not re.search(r"\b(ada|bob|cy)\b", page)
    assert "not timed here" in "\n".join(leaderboard.board_html(spec, results[2:], "s"))


# ---- what the answers may import --------------------------------------------------------------


def test_only_the_triton_assignment_lets_its_answers_import_torch():
    assert _allowed_modules(gk.SOLUTIONS / A / "hidden_tests.py") == {"torch", "triton"}
    others = [a for a in gk.ASSIGNMENTS if a != A]
    assert all(_allowed_modules(gk.SOLUTIONS / a / "hidden_tests.py") == frozenset() for a in others)
    spec = load_assignment(load_course(gk.ROOT), "01_softmax")
    assert {"torch", "attnmath"} <= set(spec.blocked) and spec.allowed == ()


def test_the_worker_shows_torch_only_to_a_job_that_does_not_block_it():
    import torch

    folder = str(Path(torch.__file__).resolve().parents[1])
    plain, allowing = set(site_view(folder)), set(site_view(folder, ("torch",)))
    assert "torch" not in plain and {"torch", "torchgen"} <= allowing
    assert allowing - plain <= {e for e in allowing if e.lower().startswith(("torch", "functorch"))}
    assert not {e for e in allowing if e.startswith(("attnmath", "attngrade", "scipy", "nbgrader"))}
    with pytest.raises(ValueError, match="allow"):
        site_view(folder, ("attnmath",))


@pytest.mark.parametrize("source", [
    "out = torch.nn.functional.scaled_dot_product_attention(q, k, v)",
    "import torch.nn.functional as F\nout = F.scaled_dot_product_attention(q, k, v)",
    "from torch.nn.functional import scaled_dot_product_attention as sdpa\nout = sdpa(q, k, v)",
    "out = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)[0]",
    "out = getattr(torch.nn.functional, 'scaled_dot_product_attention')(q, k, v)",
    "from flash_attn import flash_attn_func",
    "from attnmath.flash_triton import flash_attention_triton",
])
def test_a_call_of_pytorchs_attention_or_the_course_kernels_is_a_reference_finding(source):
    reference = frozenset((REFERENCE_MODULES - {"torch", "triton"}) | set(load_cases(gk.SOLUTIONS / A).FORBIDDEN))
    assert "reference" in {f.kind for f in analyse_cell(source, reference=reference).findings}
    assert not analyse_cell("x = torch.empty(3).to(torch.float16)", reference=reference).findings


# ---- the run-time tripwire (attngrade.tripwire): torch only to allocate and launch -----------------

def _tripwire():
    import torch

    from attngrade.tripwire import Tripwire

    return torch, Tripwire(torch, sys.modules)


def _watched(call):
    """``call(torch, q, k, v)`` on tiny tensors under a fresh watch: (its verdict, the watch)."""
    torch, tripwire = _tripwire()
    q, k, v = (torch.randn(1, 3, 4) for _ in range(3))
    watch = tripwire.watch()
    with watch:
        call(torch, q, k, v)
    return watch.verdict(), watch


def _identity_mha(torch, q, k, v):
    eye = torch.eye(4)
    return torch.nn.functional.multi_head_attention_forward(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), 4, 1, torch.cat([eye] * 3), torch.zeros(12),
        None, None, False, 0.0, eye, torch.zeros(4), training=False)


EVASIONS = {  # the red team's ways to reach PyTorch's attention at run time (issue 43), on tiny tensors
    "sdpa_by_built_name": (lambda t, q, k, v: getattr(t.nn.functional, "scaled_dot" + "_product_attention")(q, k, v),
                           None),  # its math or its flash path, as torch picks
    "aten_by_char_codes": (lambda t, q, k, v: getattr(t.ops.aten, "".join(map(chr, [
        95, 115, 99, 97, 108, 101, 100, 95, 100, 111, 116, 95, 112, 114, 111, 100, 117, 99, 116, 95, 102, 108,
        97, 115, 104, 95, 97, 116, 116, 101, 110, 116, 105, 111, 110, 95, 102, 111, 114, 95, 99, 112, 117])))(q[None], k[None], v[None]),
                           "_scaled_dot_product_flash_attention_for_cpu"),
    "mha_forward_by_vars": (lambda t, q, k, v: vars(t.nn.functional)["".join(reversed(
        "drawrof_noitnetta_daeh_itlum"))] and _identity_mha(t, q, k, v), None),
    "native_mha": (lambda t, q, k, v: t._native_multi_head_attention(
        q, k, v, 4, 1, t.cat([t.eye(4)] * 3), t.zeros(12), t.eye(4), t.zeros(4)), "_native_multi_head_attention"),
    "plain_matmul": (lambda t, q, k, v: t.softmax(q @ k.transpose(1, 2), -1) @ v, "bmm"),
}


@pytest.mark.parametrize("name", sorted(EVASIONS))
def test_the_tripwire_fails_a_call_that_computes_attention_with_torch_however_it_is_reached(name):
    from attngrade.tripwire import TORCH, describe, forbidden

    call, op = EVASIONS[name]
    verdict, watch = _watched(call)
    assert verdict is not None and verdict.startswith(TORCH), (verdict, sorted(watch.ops))
    assert op is None or op in watch.ops, sorted(watch.ops)
    assert verdict.isidentifier() and len(verdict) <= 60 and forbidden(verdict[len(TORCH):])
    assert describe(verdict).startswith(f"computed with torch (aten::{verdict[len(TORCH):]})")


DOUBLE_KERNEL = """
def double_kernel(X, Y, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Y + offs, tl.load(X + offs) * 2.0)
"""


def _double_kernel():
    """The kernel, its ``tl`` the triton.language loaded now: the interpreter wants its own module
    there, and a notebook run in this process earlier may have imported Triton again."""
    import importlib

    namespace = {"tl": importlib.import_module("triton.language")}
    exec(DOUBLE_KERNEL, namespace)  # noqa: S102 - the test's own kernel
    return namespace["double_kernel"]


def test_the_tripwire_passes_a_triton_launch_and_fails_a_call_without_one_or_without_its_mode():
    from triton.runtime.interpreter import InterpretedFunction

    from attngrade.tripwire import NO_KERNEL, POPPED

    kernel = InterpretedFunction(_double_kernel())  # what @triton.jit gives under TRITON_INTERPRET=1

    def honest(torch, q, k, v):
        x = torch.from_numpy(q.numpy().ravel()[:8].copy()).to(torch.float16).float()
        y = torch.empty_like(x)
        kernel[(1,)](x, y, N=8)
        assert torch.equal(y, 2 * x)

    verdict, watch = _watched(honest)
    assert verdict is None and watch.launches == 1, (verdict, sorted(watch.ops))
    assert _watched(lambda torch, q, k, v: torch.empty(3).copy_(q[0, 0, :3]))[0] == NO_KERNEL
    torch, _ = _tripwire()
    depth = torch._C._len_torch_dispatch_stack()
    popped = _watched(lambda torch, q, k, v: (torch.utils._python_dispatch._pop_mode(), honest(torch, q, k, v)))
    assert popped[0] == POPPED and torch._C._len_torch_dispatch_stack() == depth


def test_the_visible_check_tells_the_student_that_torch_computed_the_attention(monkeypatch):
    from attngrade.visible import check_part

    def plain_torch(q, k, v, causal=False, dtype="float32"):
        import torch

        q, k, v = (torch.as_tensor(x) for x in (q, k, v))
        s = (q @ k.transpose(1, 2)) / q.shape[2] ** 0.5
        if causal:
            s = s.masked_fill(torch.ones(s.shape[1:], dtype=torch.bool).triu(1), float("-inf"))
        return (torch.softmax(s, -1) @ v).numpy()

    monkeypatch.chdir(gk.EXERCISES / A)
    with pytest.raises(AssertionError, match=r"computed with torch \(aten::_softmax\): the attention must be"):
        check_part(SimpleNamespace(part="Part 1"), "triton_flash_forward", plain_torch)


def test_the_worker_watches_only_an_assignment_that_lets_its_answers_use_torch():
    from attngrade.tripwire import applies

    assert applies(load_cases(gk.SOLUTIONS / A).ALLOWED_MODULES)
    assert not any(applies(getattr(load_cases(gk.SOLUTIONS / a), "ALLOWED_MODULES", ())) for a in gk.ASSIGNMENTS
                   if a != A)


# ---- end to end: one grading, in the grader's sandbox -------------------------------------------

CHEATS = {
    "aten_op": "def triton_flash_forward(q, k, v, causal=False, dtype='float32'):\n"
               "    q, k, v = (torch.as_tensor(x) for x in (q, k, v))\n"
               "    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=causal)"
               "[0].numpy()\n",
    "course_kernel": "from attnmath.flash_triton import flash_attention_triton\n\n"
                     "def triton_flash_forward(q, k, v, causal=False, dtype='float32'):\n"
                     "    q, k, v = (torch.as_tensor(x)[None].to(getattr(torch, dtype)) for x in (q, k, v))\n"
                     "    return flash_attention_triton(q, k, v, causal=causal)[0][0].float().numpy()\n",
}
LSE = "def triton_flash_lse(q, k, v, causal=False, dtype='float32'):\n    return triton_flash_forward(q, k, v, causal, dtype)[:, :, 0]\n"
#: One answer that reaches PyTorch's attention only at run time (names built from pieces, which no
#: source check finds) behind a Triton kernel launched for show, and one NumPy-only part (issue 43).
RUNTIME_CHEAT = {
    "flash_kernel": "@triton.jit\ndef show_kernel(X):\n    tl.store(X, tl.load(X))\n",
    "triton_flash_forward": "def triton_flash_forward(q, k, v, causal=False, dtype='float32'):\n"
                            "    show_kernel[(1,)](torch.zeros(1))\n"
                            "    attend = getattr(torch.nn.functional, 'scaled_dot' + '_product_attention')\n"
                            "    q, k, v = (torch.as_tensor(x)[None] for x in (q, k, v))\n"
                            "    return attend(q, k, v, is_causal=causal)[0].numpy()\n",
    "triton_flash_lse": "def triton_flash_lse(q, k, v, causal=False, dtype='float32'):\n"
                        "    show_kernel[(1,)](torch.zeros(1))\n"
                        "    op = getattr(torch.ops.aten, ''.join(reversed('upc_rof_noitnetta_hsalf_tcudorp_tod_delacs_')))\n"
                        "    q, k, v = (torch.as_tensor(x)[None] for x in (q, k, v))\n"
                        "    return op(q, k, v, is_causal=causal)[1][0].numpy()\n",
    "fast_flash_forward": "def fast_flash_forward(q, k, v, causal=False, dtype='float16'):\n"
                          "    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[2])\n"
                          "    if causal:\n"
                          "        s = np.where(np.tril(np.ones(s.shape[1:], dtype=bool)), s, -np.inf)\n"
                          "    p = np.exp(s - s.max(axis=2, keepdims=True))\n"
                          "    return (p / p.sum(axis=2, keepdims=True)) @ v\n",
}
FAST = "def fast_flash_forward(q, k, v, causal=False, dtype='float16'):\n    return triton_flash_forward(q, k, v, causal, dtype)\n"


@pytest.fixture(scope="module")
def graded(isolation, tmp_path_factory):
    """The solution and two answers that call someone else's attention, graded once."""
    folder = tmp_path_factory.mktemp("triton17")
    spec = load_assignment(load_course(gk.ROOT), A)
    notebooks = {"solution": gk.fill_any(gk.release(A), gk.solution_answers(A))}
    for name, source in CHEATS.items():
        notebooks[name] = gk.fill_any(gk.release(A), {"triton_flash_forward": source, "triton_flash_lse": LSE,
                                                       "fast_flash_forward": FAST})
    notebooks["runtime_cheat"] = gk.fill_any(gk.release(A), RUNTIME_CHEAT)
    results = {}
    for student, nb in notebooks.items():
        path = folder / f"{student}.ipynb"
        nbformat.write(nb, path)
        results[student] = grade_submission(spec, Submission(student, path, "flat", source=path.name), isolation,
                                            Limits(timeout=60), tmp_root=str(folder))
    return results


def test_the_solution_gets_full_marks_on_the_cpu_and_its_speed_part_says_not_timed_here(graded):
    res = graded["solution"]
    assert res.status == "graded", res.reason
    assert {g: p.score for g, p in res.parts.items()} == {"test_triton_forward": 5.0, "test_triton_lse": 2.0,
                                                          "test_triton_speed": 2.0}
    assert "not timed here" in res.parts["test_triton_speed"].message
    assert res.parts["test_triton_forward"].message == "passed"


@pytest.mark.parametrize("student", sorted(CHEATS))
def test_an_answer_that_calls_pytorchs_attention_or_the_course_kernel_scores_nothing(graded, student):
    res = graded[student]
    assert {g: p.score for g, p in res.parts.items()} == {"test_triton_forward": 0.0, "test_triton_lse": 0.0,
                                                          "test_triton_speed": 0.0}
    assert res.status == "flagged" and "calls reference" in res.reason, res.reason
    assert all(p.message.startswith("no credit") for p in res.parts.values())


def test_an_answer_that_reaches_pytorchs_attention_at_run_time_or_launches_no_kernel_scores_nothing(graded):
    """Names no source check finds, caught by the worker's tripwire (attngrade.tripwire), with
    the student's sentence; the solution in the same grading keeps its marks (above)."""
    parts = graded["runtime_cheat"].parts
    assert {g: p.score for g, p in parts.items()} == {"test_triton_forward": 0.0, "test_triton_lse": 0.0,
                                                      "test_triton_speed": 0.0}, {g: p.message for g, p in parts.items()}
    assert "computed with torch (aten::" in parts["test_triton_forward"].message
    assert "computed with torch (aten::_scaled_dot_product_flash_attention_for_cpu)" in parts["test_triton_lse"].message
    assert "launched no Triton kernel" in parts["test_triton_speed"].message


def test_a_timed_speed_part_is_measured_by_the_worker_and_scored_by_the_grader(isolation, tmp_path, monkeypatch):
    """The GPU path on this CPU host: the worker times the calls (its tensors stay on the CPU
    without CUDA), the grader checks the outputs and scores the time against a stand-in for the
    course kernel's; the leaderboard ranks it."""
    import attngrade.running as running

    monkeypatch.setattr(running, "repeats", lambda part: 2 if leaderboard.is_speed_part(part) else 0)
    monkeypatch.setattr(leaderboard, "course_seconds", lambda case: 1e-3)
    spec = load_assignment(load_course(gk.ROOT), A)
    path = tmp_path / "timed.ipynb"
    nbformat.write(gk.fill_any(gk.release(A), gk.solution_answers(A)), path)
    res = grade_submission(spec, Submission("timed", path, "flat", source=path.name), isolation,
                           Limits(timeout=60), tmp_root=str(tmp_path))
    speed = res.parts["test_triton_speed"]
    ratio = leaderboard.speed_ratio(speed.detail)
    assert speed.passed and ratio is not None and ratio > 0, (res.status, res.reason, speed.detail)
    assert speed.score == leaderboard.speed_points(2.0, ratio) and "the course kernel's time" in speed.message
    assert res.parts["test_triton_forward"].score == 5.0
    assert [row["ratio"] for row in leaderboard.board(spec, [res], "s")] == [ratio]


@pytest.mark.skipif(not leaderboard.gpu_available(), reason="no GPU here: the speed part is not timed")
def test_on_a_gpu_the_solution_is_timed_against_the_course_kernel(graded):
    speed = graded["solution"].parts["test_triton_speed"]
    assert speed.passed and leaderboard.speed_ratio(speed.detail) is not None, speed.detail
