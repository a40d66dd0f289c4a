"""The cases of exercise 12 (induction heads): one generator per part, for the visible checks and the
grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code and tolerances
(``attngrade.spec``). Expected values come from ``attnmath.induction`` in float64, computed before
your function runs; your function gets its own copies of the inputs.

Loss curves for Part 4 are built so that no logged loss lies within 1e-9 of a crossing level, so
every correct way of computing the levels finds the same steps.
"""

import numpy as np

import attnmath.induction as ref
from attngrade.spec import Case, Part
from attngrade.visible import like

# ----------------------------------------------------------------------------- Part 1


def _exact_tokens_check(case, out):
    assert out is not None, "returned None"
    out = np.asarray(out)
    expected = np.asarray(case.expected)
    assert out.dtype.kind in "iu", f"tokens have dtype {out.dtype}, expected integers"
    assert out.shape == expected.shape, f"shape {out.shape} != expected {expected.shape}"
    assert (out == expected).all(), "wrong tokens"


def sequence_cases(rng):
    cases = []
    for T, L, kind in [(3, 7, "the segment exactly twice"), (2, 5, "the segment exactly twice"),
                       (4, 9, "the segment exactly twice"), (7, 15, "the segment exactly twice"),
                       (1, 1, "a sequence of BOS alone"), (2, 1, "a sequence of BOS alone"),
                       (1, 4, "a segment of one token"), (1, 6, "a segment of one token"),
                       (4, 3, "a sequence shorter than the segment"), (3, 3, "a sequence shorter than the segment"),
                       (3, 9, "a segment repeated several times, cut inside a copy"),
                       (5, 23, "a segment repeated several times, cut inside a copy"),
                       (10, 33, "a longer sequence"), (12, 40, "a longer sequence")]:
        segment = rng.permutation(np.arange(1, 60))[:T]
        cases.append(Case((segment, L), {}, f"T={T} L={L}", ref.repeated_sequence(segment, L), kind=kind))
    for T, L in [(3, 8), (6, 20)]:
        segment = rng.integers(1, T // 2 + 2, size=T)  # fewer values than tokens: some token repeats
        cases.append(Case((segment, L), {}, f"repeats inside, T={T} L={L}", ref.repeated_sequence(segment, L),
                          kind="a segment with repeated tokens"))
    return cases


def diagnose_sequence(case, out):
    segment, L = case.args
    T = len(segment)
    body = np.arange(L - 1)
    out = np.asarray(out)
    variants = [(np.concatenate([[0], segment[(body + 1) % T]]), "the segment starts right after BOS: x_1 = s_1"),
                (segment[np.arange(L) % T], "the sequence starts with BOS = 0, then the segment"),
                (np.concatenate([[0], segment[body % len(np.unique(segment))]]),
                 "the period is T, the segment's length, even where a token occurs twice in it")]
    for variant, words in variants:
        if out.shape == variant.shape and (out == variant).all() and not (variant == case.expected).all():
            return words
    return None


HINTS_SEQUENCE = {
    "the segment exactly twice": "L = 2 T + 1 gives BOS and the segment exactly twice",
    "a sequence of BOS alone": "L = 1: the sequence is BOS alone, an integer array of shape (1,)",
    "a segment of one token": "a segment of one token (T = 1) repeats that token",
    "a sequence shorter than the segment": "the sequence may end inside the first copy of the segment: L tokens, "
                                           "BOS included",
    "a segment repeated several times, cut inside a copy": "after BOS the segment repeats with period T and the last "
                                                           "copy is cut after L tokens in all",
    "a longer sequence": "after BOS the segment repeats with period T, the last copy cut where the L tokens end",
    "a segment with repeated tokens": "a token may occur twice in the segment: the period is T, the segment's length",
}

# ----------------------------------------------------------------------------- Part 2


def _causal_patterns(rng, shape, L, sharp=2.0):
    """Random causal attention patterns (..., L, L): softmax rows over the keys j <= i."""
    scores = rng.standard_normal((*shape, L, L)) * sharp
    scores = np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _uniform(L):
    return np.tril(np.ones((L, L))) / np.arange(1, L + 1)[:, None]


def previous_cases(rng):
    prev = np.eye(5, k=-1)
    prev[0, 0] = 1.0  # query 0 can only attend to itself
    inputs = [("a perfect previous-token head", prev, "a perfect previous-token head"),
              ("two positions", _causal_patterns(rng, (), 2), "two positions")]
    for shape, L in [((), 4), ((), 9), ((3,), 6), ((2, 4), 11), ((2, 2, 3), 5)]:
        inputs.append((f"shape {shape} L={L}", _causal_patterns(rng, shape, L),
                       "leading axes: layers and heads" if shape else "another pattern"))
    inputs.append(("uniform 4", _uniform(4), "uniform attention"))
    inputs.append(("uniform 30", _uniform(30), "uniform attention"))
    inputs.append(("sink", np.tile(np.eye(12)[:, :1], (1, 12)), "a head that attends to the first token"))
    return [Case((A,), {}, label, ref.previous_token_score(A), tol=1e-9, kind=kind) for label, A, kind in inputs]


def diagnose_previous(case, out):
    (A,) = case.args
    L = A.shape[-1]
    below = np.diagonal(A, offset=-1, axis1=-2, axis2=-1)
    for variant, words in [(np.diagonal(A, offset=1, axis1=-2, axis2=-1).mean(axis=-1),
                            "the previous key of query i is j = i - 1, below the diagonal (offset -1, not +1)"),
                           (below.sum(axis=-1) / L, "average over the queries i = 1 .. L-1 only: query 0 has no "
                                                    "previous token"),
                           (np.diagonal(A, axis1=-2, axis2=-1)[..., 1:].mean(axis=-1),
                            "the previous key of query i is j = i - 1, not the query itself")]:
        if like(out, variant, case.expected):
            return words
    return None


HINTS_PREVIOUS = {
    "a perfect previous-token head": "a perfect previous-token head scores 1: average A[i, i-1] over i = 1 .. L-1",
    "two positions": "L = 2: only query 1 has a previous token (key 0), so the score is its weight there",
    "another pattern": "score the weight on the key just before each query, even where another key has more weight",
    "leading axes: layers and heads": "keep the leading axes (one score per (L, L) pattern): "
                                      "np.diagonal(probs, offset=-1, axis1=-2, axis2=-1)",
    "uniform attention": "uniform causal attention gives the mean of 1/(i+1) over i = 1 .. L-1",
    "a head that attends to the first token": "every query looks at key 0: only query 1, whose previous token is key "
                                              "0, scores 1",
}

# ----------------------------------------------------------------------------- Part 3


def _perfect(tokens):
    """The pattern of a perfect induction head on ``tokens``: each query with an earlier occurrence
    puts its weight on the target of the latest one, the others on BOS."""
    L = len(tokens)
    A = np.zeros((L, L))
    for i in range(L):
        earlier = [j for j in range(i) if tokens[j] == tokens[i]]
        A[i, earlier[-1] + 1 if earlier else 0] = 1.0
    return A


def induction_cases(rng):
    t = ref.repeated_sequence(rng.permutation(np.arange(1, 40))[:3])
    inputs = [("a perfect head, T=3", _perfect(t), t, "a perfect induction head"),
              ("uniform, T=3", _uniform(7), t, "uniform attention")]
    for T, shape in [(2, ()), (4, ()), (5, (3,)), (9, (2, 4)), (1, ())]:
        t = ref.repeated_sequence(rng.permutation(np.arange(1, 40))[:T])
        inputs.append((f"repeat T={T}", _causal_patterns(rng, shape, len(t)), t,
                       "leading axes: layers and heads" if shape else "another repeated sequence"))
    t = ref.repeated_sequence(rng.permutation(np.arange(1, 40))[:4], 17)  # four copies, cut
    inputs.append(("several copies", _causal_patterns(rng, (2,), 17), t, "a segment repeated several times"))
    t = ref.repeated_sequence(rng.permutation(np.arange(1, 40))[:2], 7)  # three copies
    inputs.append(("three copies, uniform", _uniform(7), t, "a segment repeated several times"))
    t = rng.integers(0, 3, size=14)  # many repeats of few tokens
    t[:2] = [1, 1]
    inputs.append(("few tokens", _causal_patterns(rng, (3,), 14), t, "tokens that occur many times"))
    t = rng.integers(0, 2, size=6)
    t[:2] = [2, 2]  # position 0 has a later occurrence
    inputs.append(("few tokens, uniform", _uniform(6), t, "tokens that occur many times"))
    t = np.full(2, rng.integers(0, 9))
    inputs.append(("two equal", _causal_patterns(rng, (), 2), t, "two positions"))
    return [Case((A, tok), {}, label, ref.induction_score(A, tok), tol=1e-9, kind=kind)
            for label, A, tok, kind in inputs]


def _targets(tokens, shift=1, latest=False, first=0):
    """The (L, L) targets as a mistake computes them."""
    L = len(tokens)
    target = np.zeros((L, L), dtype=bool)
    for i in range(L):
        earlier = [j for j in range(first, i) if tokens[j] == tokens[i]]
        for j in earlier[-1:] if latest else earlier:
            target[i, j + shift] = True
    return target


def diagnose_induction(case, out):
    A, tokens = case.args
    right = _targets(tokens)
    queries = right.any(axis=1)

    def score(target, over=queries):
        return (A * target).sum(axis=-1)[..., over].mean(axis=-1)

    for variant, words in [
        (score(_targets(tokens, shift=0)), "the target is the position AFTER the earlier occurrence, not the "
                                           "occurrence itself"),
        (score(right, np.ones(len(tokens), dtype=bool)), "average over the queries that have an earlier occurrence "
                                                         "only"),
        (score(_targets(tokens, latest=True)), "with several earlier copies, each earlier occurrence has a target: "
                                               "sum the weights on all of them"),
        (score(_targets(tokens, first=1), _targets(tokens, first=1).any(axis=1)),
         "every earlier position j < i counts, position 0 included"),
    ]:
        if like(out, variant, case.expected):
            return words
    return None


HINTS_INDUCTION = {
    "a perfect induction head": "a perfect induction head scores 1: the target is the position after an earlier "
                                "occurrence, averaged over the queries that have one",
    "uniform attention": "average over the queries that have an earlier occurrence only",
    "another repeated sequence": "the targets of query i are j' + 1 for every earlier j' with the same token",
    "leading axes: layers and heads": "keep the leading axes: one score per (L, L) pattern",
    "a segment repeated several times": "with several earlier copies, each earlier occurrence has a target: sum the "
                                        "weights on all of them",
    "tokens that occur many times": "every earlier position j < i counts, position 0 included",
    "two positions": "two equal tokens: query 1 has an earlier occurrence (position 0), so its target is position 1",
}

# ----------------------------------------------------------------------------- Part 4


def _curve(rng, N, t0, width, hi, lo, noise=0.0):
    steps = np.arange(N) * 10
    loss = lo + (hi - lo) / (1.0 + np.exp((steps - t0) / width)) + noise * rng.standard_normal(N)
    return steps, loss


def _safe(steps, loss):
    """Reject curves with a logged loss within 1e-9 of a crossing level (ambiguous comparisons)."""
    hi, lo = loss[0], loss.min()
    return all(np.abs(loss - (lo + q * (hi - lo))).min() > 1e-9 for q in (0.9, 0.5, 0.1))


def _uneven(rng):
    """Unevenly logged steps and a drop that rises again after its minimum."""
    while True:
        steps = np.concatenate([[0], np.cumsum(rng.integers(1, 60, size=9))])
        loss = 0.3 + 2.5 / (1.0 + np.exp((steps - steps[4]) / 20.0)) + 0.02 * rng.standard_normal(10)
        loss[-2:] += rng.uniform(0.3, 1.0)
        if _safe(steps, loss):
            return steps, loss


def _rising(rng):
    """A loss that first rises above its first value, then drops."""
    while True:
        steps = np.arange(12) * 10
        loss = 0.1 + 2.0 / (1.0 + np.exp((steps - 70) / 8.0)) + 0.05 * rng.standard_normal(12)
        loss[1:4] += rng.uniform(0.5, 1.5)
        if _safe(steps, loss):
            return steps, loss


def phase_check(case, out):
    """A tuple of three integer steps, as the task asks (NumPy integers become ints)."""
    assert out is not None, "returned None"
    assert isinstance(out, (tuple, list)) and len(out) == 3, "return a tuple (start, mid, end)"
    assert all(isinstance(v, int) and not isinstance(v, bool) for v in out), \
        "the steps must be integers (int(...)), not " + ", ".join(sorted({type(v).__name__ for v in out}))
    assert tuple(out) == tuple(case.expected), "wrong steps"


def phase_cases(rng):
    cases = []
    specs = [(60, 300, 20.0, 3.9, 0.05, 0.0, "a sharp drop"), (100, 500, 80.0, 2.5, 0.5, 0.0, "a slow drop"),
             (80, 200, 10.0, 4.0, 0.0, 0.01, "a noisy curve"), (50, 50, 30.0, 3.0, 1.0, 0.0, "an early drop"),
             (120, 900, 15.0, 3.5, 0.2, 0.03, "a noisy curve"), (10, 40, 2.0, 3.9, 0.05, 0.0, "a sharp drop"),
             (8, 30, 8.0, 3.0, 0.1, 0.3, "a noisy curve")]
    for N, t0, width, hi, lo, noise, kind in specs:
        while True:
            steps, loss = _curve(rng, N, t0, width, hi, lo, noise)
            if _safe(steps, loss):
                break
        cases.append(Case((steps, loss), {}, f"N={N} t0={t0} width={width}", tuple(ref.phase_change(steps, loss)),
                          kind=kind))
    steps = np.array([0, 5, 7, 100, 101, 250])  # uneven logging
    loss = np.array([2.0, 2.1, 1.5, 0.4, 0.3, 0.35])
    for label, (steps, loss) in [("uneven", (steps, loss)), ("uneven, drawn", _uneven(rng))]:
        cases.append(Case((steps, loss), {}, label, tuple(ref.phase_change(steps, loss)),
                          kind="unevenly spaced steps, a loss that rises again"))
    steps = np.arange(10) * 10  # the loss first rises above its first value
    loss = np.array([3.0, 3.5, 3.8, 3.6, 3.2, 2.0, 0.5, 0.2, 0.1, 0.1])
    for label, (steps, loss) in [("rise first", (steps, loss)), ("rise first, drawn", _rising(rng))]:
        cases.append(Case((steps, loss), {}, label, tuple(ref.phase_change(steps, loss)),
                          kind="a loss that rises before it drops"))
    return cases


def _crossings(steps, loss, hi=None, lo=None, levels=None, indices=False, last=False):
    """The three crossings as a mistake computes them."""
    hi = loss[0] if hi is None else hi
    lo = loss.min() if lo is None else lo
    found = []
    for q in (0.9, 0.5, 0.1):
        below = loss <= (lo + q * (hi - lo) if levels is None else levels(q))
        n = len(loss) - 1 - int(np.argmax(below[::-1])) if last else int(np.argmax(below))
        found.append(n if indices else int(steps[n]))
    return tuple(found)


def diagnose_phase(case, out):
    steps, loss = (np.asarray(a) for a in case.args)
    if not (isinstance(out, (tuple, list)) and len(out) == 3):
        return None
    if not all(isinstance(v, int) for v in out):
        return "the task asks for integer steps: return int(steps[n])"
    variants = [(dict(indices=True), "return the logged steps, not their indices"),
                (dict(hi=loss.max()), "hi is the first logged loss, loss[0], even when a later loss is higher"),
                (dict(lo=loss[-1]), "lo is the smallest logged loss, min(loss), not the last one"),
                (dict(levels=lambda q: q * loss[0]), "the levels are lo + q (hi - lo), measured from the lowest loss"),
                (dict(last=True), "take the FIRST step at or below each level")]
    for change, words in variants:
        variant = _crossings(steps, loss, **change)
        if variant != tuple(case.expected) and tuple(out) == variant:
            return words
    even = tuple(int(np.argmax(loss <= loss.min() + q * (loss[0] - loss.min()))) * int(steps[1] - steps[0])
                 for q in (0.9, 0.5, 0.1))
    if even != tuple(case.expected) and tuple(out) == even:
        return "the steps are not evenly spaced: return steps[n], the logged step"
    return None


HINTS_PHASE = {
    "a sharp drop": "the loss may drop within one logged step: all three levels are crossed at that step",
    "a slow drop": "each level is lo + q (hi - lo), measured from the lowest loss",
    "a noisy curve": "a noisy loss: lo is the smallest logged loss (not the last one), and each step is the first at "
                     "or below its level",
    "an early drop": "return logged steps (not indices), the first at or below each level",
    "unevenly spaced steps, a loss that rises again": "lo is min(loss), even when the loss rises again; return the "
                                                      "logged steps, which are not evenly spaced",
    "a loss that rises before it drops": "hi is the first logged loss, loss[0], even when a later loss is higher",
}

PARTS = [
    Part("test_repeated_sequence", function="repeated_sequence", cases=sequence_cases, check=_exact_tokens_check,
         precision="Exact: integer tokens equal to the expected ones entry by entry.", hints=HINTS_SEQUENCE,
         diagnose=diagnose_sequence),
    Part("test_previous_token_score", function="previous_token_score", cases=previous_cases, hints=HINTS_PREVIOUS,
         diagnose=diagnose_previous),
    Part("test_induction_score", function="induction_score", cases=induction_cases, hints=HINTS_INDUCTION,
         diagnose=diagnose_induction),
    Part("test_phase_change", function="phase_change", cases=phase_cases, check=phase_check,
         precision="Exact: the three steps, as integers, equal the expected ones.", hints=HINTS_PHASE,
         diagnose=diagnose_phase),
]
