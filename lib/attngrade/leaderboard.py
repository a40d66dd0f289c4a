"""The speed part of an assignment and the class's leaderboard (exercise 17: flash attention in Triton).

A part whose check is wrapped by :func:`timed` is a *speed part*. Where the grading host has a GPU
(:func:`gpu_available`), its cases are the fixed sizes of :data:`SPEED_SIZES` and the worker times
each call (:mod:`attngrade.worker`: the inputs as torch tensors on the GPU, one call to warm up,
then :data:`REPEATS` calls between two synchronisations, on a clock the worker took before any
student code ran); the grader times the course's own kernel (:mod:`attnmath.flash_triton`) the
same way in its own process (:func:`course_seconds`), and a correct answer earns
:func:`speed_points`: all the points at the course kernel's time or faster, none at
:data:`SLOWEST` times it or slower, linear between. Without a GPU nothing is timed: the part's
cases are a correct forward pass at a small size, which earns the points, and its message says
"not timed here" (the task states this rule).

:func:`board` ranks the timed submissions of a class under anonymous ids (:func:`anonymous_id`),
for the summary page (:func:`board_html`).
"""

from __future__ import annotations

import functools
import hashlib
import html
import re
import statistics

__all__ = ["NOT_TIMED", "NOT_TIMED_KIND", "TIMED_KIND", "SPEED_SIZES", "REPEATS", "SLOWEST", "gpu_available",
           "timed", "is_speed_part", "repeats", "speed_points", "course_seconds", "verdict", "anonymous_id",
           "board", "board_html"]

NOT_TIMED = "not timed here"
NOT_TIMED_KIND = "not timed here, no GPU: a correct forward pass earns the speed points"
TIMED_KIND = "float16 at the timed sizes"
#: The timed configurations: (heads, sequence length, head size, causal), float16.
SPEED_SIZES = ((16, 2048, 64, False), (16, 2048, 64, True))
REPEATS = 20
#: A time this many times the course kernel's, or more, earns no speed points.
SLOWEST = 3.0
_DETAIL = re.compile(r"^speed ([0-9.]+)x ")


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """Whether this host has a CUDA GPU that torch can use (False where torch is missing)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def timed(check):
    """``check`` (a part's correctness check) marked as the check of a speed part."""

    def speed_check(case, out):
        return check(case, out)

    speed_check.timed = True
    return speed_check


def is_speed_part(part) -> bool:
    """Whether ``part`` (an :class:`attngrade.spec.Part`) is a speed part (:func:`timed`)."""
    return bool(getattr(getattr(part, "check", None), "timed", False))


def repeats(part) -> int:
    """How many timed calls per case the worker makes for ``part`` here: 0 where nothing is timed."""
    return REPEATS if is_speed_part(part) and gpu_available() else 0


def speed_points(points: float, ratio: float) -> float:
    """The points for a time ``ratio`` times the course kernel's (rounded to a hundredth)."""
    if not ratio > 0:
        raise ValueError(f"ratio must be a positive number, got {ratio!r}")
    share = min(1.0, max(0.0, (SLOWEST - ratio) / (SLOWEST - 1.0)))
    return round(points * share, 2)


def _device_inputs(case):
    import torch

    return tuple(torch.from_numpy(a).cuda() for a in case.args)


@functools.lru_cache(maxsize=16)
def _course_time(H: int, N: int, D: int, causal: bool, dtype: str) -> float:
    import numpy as np
    import torch

    from attnmath.flash_triton import flash_attention_triton

    rng = np.random.default_rng(0)
    q, k, v = (torch.from_numpy(rng.standard_normal((H, N, D)).astype(np.float32)).cuda() for _ in range(3))

    def call():
        args = [x.to(getattr(torch, dtype))[None] for x in (q, k, v)]
        return flash_attention_triton(*args, causal=causal, check_finite=False)[0][0].float()

    call()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start[0].record()
    for _ in range(REPEATS):
        call()
    start[1].record()
    torch.cuda.synchronize()
    return start[0].elapsed_time(start[1]) / 1000.0 / REPEATS


def course_seconds(case) -> float:
    """Seconds per call of the course's kernel on a case of the same size, dtype and mask,
    timed in this (the grader's) process as the worker times an answer: the float32 inputs
    converted on the GPU, the float32 output."""
    H, N, D = case.args[0].shape
    return _course_time(H, N, D, bool(case.kwargs["causal"]), str(case.kwargs["dtype"]))


def verdict(points: float, cases: list, seconds: list) -> tuple[float, str, str]:
    """Points, the student's message and the log's detail of a correct speed part: ``seconds`` per
    case from the worker (None everywhere where nothing was timed)."""
    if not any(s is not None for s in seconds):
        return points, f"passed ({NOT_TIMED}: the grading host has no GPU; a correct forward pass earns "\
                       "the speed points)", NOT_TIMED
    if any(not isinstance(s, float) or not s > 0 for s in seconds):
        return 0.0, "failed (a timed call was not measured)", f"timings {seconds!r}"
    ratio = statistics.median(s / course_seconds(c) for s, c in zip(seconds, cases))
    score = speed_points(points, ratio)
    times = ", ".join(f"{s * 1e3:.3f} ms" for s in seconds)
    return score, f"passed: {ratio:.2f}x the course kernel's time ({score:g} of {points:g} points)", \
        f"speed {ratio:.4f}x the course kernel ({times})"


def speed_ratio(detail: str) -> float | None:
    """The time ratio a speed part's log detail records (:func:`verdict`), or None."""
    m = _DETAIL.match(detail or "")
    return float(m.group(1)) if m else None


def anonymous_id(student: str, salt: str) -> str:
    """A student's id on the leaderboard: the same for the same student and salt, and not the
    student's name (with the course secret as the salt, nobody can compute it from a name)."""
    return "anon-" + hashlib.sha256(f"{salt}\0{student}".encode()).hexdigest()[:8]


def board(spec, results: list, salt: str) -> list[dict]:
    """The timed submissions, fastest first: ``{"id", "ratio", "points"}`` each."""
    rows = []
    for ps in spec.parts:
        if not is_speed_part(getattr(ps, "part", None)):
            continue
        for r in results:
            pr = r.parts.get(ps.grade_id)
            ratio = speed_ratio(pr.detail) if pr is not None and pr.passed else None
            if ratio is not None:
                rows.append({"id": anonymous_id(r.student, salt), "ratio": ratio, "points": pr.score})
    return sorted(rows, key=lambda row: (row["ratio"], row["id"]))


def board_html(spec, results: list, salt: str) -> list[str]:
    """The summary page's leaderboard section (none for an assignment without a speed part)."""
    if not any(is_speed_part(getattr(ps, "part", None)) for ps in spec.parts):
        return []
    rows = board(spec, results, salt)
    out = ["<h2>Leaderboard</h2>"]
    if not rows:
        return out + [f"<p>No times: {NOT_TIMED} (the grading host has no GPU), or no correct answer.</p>"]
    out.append("<table><tr><th>rank</th><th>student (anonymous)</th><th>time / course kernel</th>"
               "<th>speed points</th></tr>")
    out.extend(f"<tr><td>{i}</td><td><code>{html.escape(row['id'])}</code></td><td>{row['ratio']:.2f}x</td>"
               f"<td>{row['points']:g}</td></tr>" for i, row in enumerate(rows, 1))
    out.append("</table>")
    return out
