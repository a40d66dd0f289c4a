"""Hidden tests of exercise 12 (induction heads). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath.induction`` in float64.
Loss curves for Part 4 are built so that no logged loss lies within 1e-9 of a crossing level,
so every correct way of computing the levels finds the same steps.
"""

import numpy as np

import attnmath.induction as ref
from attngrade.spec import Case, Part


def _causal_patterns(rng, shape, L, sharp=2.0):
    """Random causal attention patterns (..., L, L): softmax rows over the keys j <= i."""
    scores = rng.standard_normal((*shape, L, L)) * sharp
    scores = np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _uniform(L):
    return np.tril(np.ones((L, L))) / np.arange(1, L + 1)[:, None]


def _exact_tokens_check(case, out):
    assert out is not None, "returned None"
    out = np.asarray(out)
    expected = np.asarray(case.expected)
    assert out.dtype.kind in "iu", f"tokens have dtype {out.dtype}, expected integers"
    assert out.shape == expected.shape, f"shape {out.shape} != expected {expected.shape}"
    assert (out == expected).all(), "wrong tokens"


def sequence_cases(rng):
    cases = [Case((np.array([3, 1, 2]), 7), {}, "visible", ref.repeated_sequence([3, 1, 2], 7),
                  kind="a visible self-check"),
             Case((np.array([5, 9]), 5), {}, "visible twice", ref.repeated_sequence([5, 9], 5),
                  kind="a visible self-check")]
    for T, L, kind in [(1, 1, "a sequence of BOS alone"), (1, 6, "a segment of one token"),
                       (4, 3, "a sequence shorter than the segment"), (4, 9, "the segment exactly twice"),
                       (5, 23, "a segment repeated several times, cut inside a copy"),
                       (7, 15, "the segment exactly twice"), (12, 40, "a longer sequence")]:
        segment = rng.permutation(np.arange(1, 60))[:T]
        cases.append(Case((segment, L), {}, f"T={T} L={L}", ref.repeated_sequence(segment, L), kind=kind))
    segment = rng.integers(1, 4, size=6)  # tokens that repeat inside the segment
    cases.append(Case((segment, 20), {}, "repeats inside", ref.repeated_sequence(segment, 20),
                      kind="a segment with repeated tokens"))
    return cases


def previous_cases(rng):
    prev = np.eye(5, k=-1)
    prev[0, 0] = 1.0
    inputs = [("visible previous", prev, "a visible self-check"),
              ("visible uniform", _uniform(4), "a visible self-check"),
              ("two positions", _causal_patterns(rng, (), 2), "two positions")]
    for shape, L in [((), 9), ((3,), 6), ((2, 4), 11), ((2, 2, 3), 5)]:
        inputs.append((f"shape {shape} L={L}", _causal_patterns(rng, shape, L),
                       "leading axes: layers and heads" if shape else "another pattern"))
    inputs.append(("uniform 30", _uniform(30), "uniform attention"))
    inputs.append(("sink", np.tile(np.eye(12)[:, :1], (1, 12)), "a head that attends to the first token"))
    return [Case((A,), {}, label, ref.previous_token_score(A), tol=1e-9, kind=kind) for label, A, kind in inputs]


def induction_cases(rng):
    tokens = ref.repeated_sequence([4, 7, 2])
    perfect = np.zeros((7, 7))
    perfect[:4, 0] = 1.0
    for i in range(4, 7):
        perfect[i, i - 2] = 1.0
    inputs = [("visible perfect", perfect, tokens, "a visible self-check"),
              ("visible uniform", _uniform(7), tokens, "a visible self-check")]
    for T, shape in [(2, ()), (5, (3,)), (9, (2, 4)), (1, ())]:
        t = ref.repeated_sequence(rng.permutation(np.arange(1, 40))[:T])
        inputs.append((f"repeat T={T}", _causal_patterns(rng, shape, len(t)), t,
                       "leading axes: layers and heads" if shape else "another repeated sequence"))
    t = ref.repeated_sequence(rng.permutation(np.arange(1, 40))[:4], 17)  # four copies, cut
    inputs.append(("several copies", _causal_patterns(rng, (2,), 17), t, "a segment repeated several times"))
    t = rng.integers(0, 3, size=14)  # many repeats of few tokens
    t[:2] = [1, 1]
    inputs.append(("few tokens", _causal_patterns(rng, (3,), 14), t, "tokens that occur many times"))
    t = np.array([5, 5])
    inputs.append(("two equal", _causal_patterns(rng, (), 2), t, "two positions"))
    return [Case((A, tok), {}, label, ref.induction_score(A, tok), tol=1e-9, kind=kind)
            for label, A, tok, kind in inputs]


def _curve(rng, N, t0, width, hi, lo, noise=0.0):
    steps = np.arange(N) * 10
    loss = lo + (hi - lo) / (1.0 + np.exp((steps - t0) / width)) + noise * rng.standard_normal(N)
    return steps, loss


def _safe(steps, loss):
    """Reject curves with a logged loss within 1e-9 of a crossing level (ambiguous comparisons)."""
    hi, lo = loss[0], loss.min()
    return all(np.abs(loss - (lo + q * (hi - lo))).min() > 1e-9 for q in (0.9, 0.5, 0.1))


def _phase_check(case, out):
    assert out is not None, "returned None"
    assert isinstance(out, (tuple, list)) and len(out) == 3, "return a tuple (start, mid, end)"
    got = [int(v) for v in out]
    assert all(float(v) == g for v, g in zip(out, got)), "the steps are integers"
    assert got == list(case.expected), "wrong steps"


def phase_cases(rng):
    cases = [Case((np.array([0, 10, 20, 30, 40, 50]), np.array([4.0, 3.9, 3.0, 1.0, 0.2, 0.1])), {},
                  "visible", tuple(ref.phase_change([0, 10, 20, 30, 40, 50], [4.0, 3.9, 3.0, 1.0, 0.2, 0.1])),
                  kind="a visible self-check")]
    specs = [(60, 300, 20.0, 3.9, 0.05, 0.0, "a sharp drop"), (100, 500, 80.0, 2.5, 0.5, 0.0, "a slow drop"),
             (80, 200, 10.0, 4.0, 0.0, 0.01, "a noisy curve"), (50, 50, 30.0, 3.0, 1.0, 0.0, "an early drop"),
             (120, 900, 15.0, 3.5, 0.2, 0.03, "a noisy curve")]
    for N, t0, width, hi, lo, noise, kind in specs:
        while True:
            steps, loss = _curve(rng, N, t0, width, hi, lo, noise)
            if _safe(steps, loss):
                break
        cases.append(Case((steps, loss), {}, f"N={N} t0={t0}", tuple(ref.phase_change(steps, loss)), kind=kind))
    steps = np.array([0, 5, 7, 100, 101, 250])  # uneven logging
    loss = np.array([2.0, 2.1, 1.5, 0.4, 0.3, 0.35])
    cases.append(Case((steps, loss), {}, "uneven", tuple(ref.phase_change(steps, loss)),
                      kind="unevenly spaced steps, a loss that rises again"))
    steps = np.arange(10) * 10  # the loss first rises above its first value
    loss = np.array([3.0, 3.5, 3.8, 3.6, 3.2, 2.0, 0.5, 0.2, 0.1, 0.1])
    cases.append(Case((steps, loss), {}, "rise first", tuple(ref.phase_change(steps, loss)),
                      kind="a loss that rises before it drops"))
    return cases


PARTS = [
    Part("test_repeated_sequence", function="repeated_sequence", cases=sequence_cases,
         check=_exact_tokens_check,
         precision="Exact: integer tokens equal to the expected ones entry by entry."),
    Part("test_previous_token_score", function="previous_token_score", cases=previous_cases),
    Part("test_induction_score", function="induction_score", cases=induction_cases),
    Part("test_phase_change", function="phase_change", cases=phase_cases, check=_phase_check,
         precision="Exact: the three steps equal the expected ones."),
]
