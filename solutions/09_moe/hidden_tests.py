"""Hidden tests of exercise 09 (mixture-of-experts routing). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath.moe`` in float64.
Tied probabilities come from small-integer inputs, whose logits are exact whatever the order of
summation, so that every valid way of computing them ties exactly. Capacity factors and shapes
are chosen so that ``capacity_factor * N * K / E`` has no rounding ambiguity.
"""

import numpy as np

import attnmath.moe as ref
from attngrade.spec import Case, Part

VISIBLE_X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
VISIBLE_W = np.array([[2.0, 0.0, 1.0], [0.0, 1.0, 3.0]])


def _kind(label):
    """The kind of a case named ``label``, for the student's feedback: no sizes, no values."""
    if label.startswith("visible"):
        return "a visible self-check"
    for start, kind in [("integer ties", "experts with exactly tied probabilities"), ("uniform", "uniform rows"),
                        ("logits near", "very large or very negative logits"), ("unused", "unused experts")]:
        if label.startswith(start):
            return kind
    return "another router and k"


def _routing_inputs(rng):
    """(label, x, w_g, k) for the two routing parts."""
    inputs = [("visible", VISIBLE_X, VISIBLE_W, 2), ("visible k=1", VISIBLE_X, VISIBLE_W, 1),
              ("visible ties", np.ones((1, 1)), np.ones((1, 4)), 2)]
    for N, C, E in [(1, 3, 2), (7, 4, 5), (12, 6, 8), (5, 2, 9), (16, 5, 3)]:
        x, w_g = rng.standard_normal((N, C)), rng.standard_normal((C, E))
        for k in sorted({1, 2, E // 2 + 1, E}):
            if k <= E:
                inputs.append((f"N={N} E={E} k={k}", x, w_g, k))
    # Exact ties: small integers make the logits exact, several experts per row share a value.
    x = rng.integers(-2, 3, size=(10, 3)).astype(np.float64)
    w_g = rng.integers(-1, 2, size=(3, 6)).astype(np.float64)
    w_g[:, 3] = w_g[:, 1]  # experts 1 and 3 always tie
    w_g[:, 5] = w_g[:, 0]  # experts 0 and 5 always tie
    for k in (1, 2, 3, 5):
        inputs.append((f"integer ties k={k}", x, w_g, k))
    inputs.append(("uniform rows", np.zeros((3, 2)), np.zeros((2, 7)), 4))
    # Large logits (a constant feature times a large weight): exp overflows, or underflows to
    # 0/0, without the max shift. The spread between experts stays moderate, so no probability
    # underflows to an exact (artificial) tie.
    x = np.concatenate([np.ones((6, 1)), rng.standard_normal((6, 3))], axis=1)
    for offset, k in ((800.0, 2), (-800.0, 3)):
        w_g = np.concatenate([np.full((1, 5), offset), rng.standard_normal((3, 5))], axis=0)
        inputs.append((f"logits near {offset:g}", x, w_g, k))
    return inputs


def _routing_check(case, out):
    assert isinstance(out, (tuple, list)) and len(out) == 2, "return a tuple (expert_index, gate)"
    idx_expected, gate_expected = case.expected
    idx = np.asarray(out[0])
    assert idx.dtype.kind in "iu", f"expert_index has dtype {idx.dtype}, expected integers"
    assert idx.shape == idx_expected.shape, f"expert_index shape {idx.shape} != {idx_expected.shape}"
    assert (idx == idx_expected).all(), "wrong experts or order"
    gate = np.asarray(out[1])
    assert gate.dtype.kind == "f", f"gate has dtype {gate.dtype}, expected floats"
    assert gate.shape == gate_expected.shape, f"gate shape {gate.shape} != {gate_expected.shape}"
    assert np.isfinite(gate).all(), "NaN or inf in the gates"
    assert np.all(np.abs(gate - gate_expected) <= case.tol * (1 + np.abs(gate_expected))), "wrong gates"


def top_k_cases(rng):
    cases = []
    for label, x, w_g, k in _routing_inputs(rng):
        r = ref.top_k_route(ref.softmax_gating(x, w_g), k)
        cases.append(Case((x, w_g, k), {}, label, (r.expert_index, r.gate), tol=1e-6, kind=_kind(label)))
    return cases


def renormalized_cases(rng):
    cases = []
    for label, x, w_g, k in _routing_inputs(rng):
        r = ref.top_k_route_renormalized(ref.softmax_gating(x, w_g), k)
        cases.append(Case((x, w_g, k), {}, label, (r.expert_index, r.gate), tol=1e-6, kind=_kind(label)))
    return cases


def _kept(expert_index, E, factor):
    N, K = expert_index.shape
    dispatch = np.zeros((N, E), dtype=bool)
    np.put_along_axis(dispatch, expert_index, True, axis=1)
    routing = ref.Routing(expert_index.astype(np.int64), np.ones((N, K)), dispatch)
    return ref.apply_capacity(routing, factor).kept


def _exact_check(case, out):
    assert out is not None, "returned None"
    out = np.asarray(out)
    expected = np.asarray(case.expected)
    assert out.dtype.kind in "biu", f"kept has dtype {out.dtype}, expected booleans"
    assert out.shape == expected.shape, f"shape {out.shape} != expected {expected.shape}"
    assert (out.astype(bool) == expected).all(), "wrong assignments kept"


def capacity_cases(rng):
    cases = []
    visible = [(np.array([[0], [0], [1], [0]]), 2, 1.0),
               (np.array([[0, 1], [0, 1], [0, 2], [1, 0]]), 3, 0.75),
               (np.array([[0, 1], [0, 1], [0, 2], [1, 0]]), 3, 2.0)]
    for idx, E, cf in visible:
        cases.append(Case((idx, E, cf), {}, "visible", _kept(idx, E, cf), kind="a visible self-check"))
    # Uneven routers; E a power of two or N K a multiple of E, dyadic factors: no rounding ambiguity.
    for N, E, K in [(16, 4, 1), (16, 4, 2), (24, 8, 3), (12, 6, 2), (9, 3, 1), (32, 8, 2), (10, 2, 2)]:
        x = rng.standard_normal((N, 3))
        w_g = rng.standard_normal((3, E)) + np.linspace(1.5, -1.5, E)[None, :]
        idx = ref.top_k_route(ref.softmax_gating(x, w_g), K).expert_index
        for cf in (0.25, 0.5, 1.0, 1.25, 2.0):
            cases.append(Case((idx, E, cf), {}, f"N={N} E={E} K={K} factor {cf}", _kept(idx, E, cf),
                              kind="another router and capacity factor"))
    cases.append(Case((np.zeros((5, 1), dtype=np.int64), 1, 1.0), {}, "one expert", np.ones((5, 1), dtype=bool),
                      kind="a single expert"))
    collapsed = np.tile(np.array([[2, 0]]), (8, 1))
    cases.append(Case((collapsed, 4, 1.0), {}, "collapsed router", _kept(collapsed, 4, 1.0),
                      kind="every token sent to the same experts"))
    return cases


def loss_cases(rng):
    E, N = 4, 8
    collapsed = np.zeros((N, E))
    collapsed[:, 2] = 1.0
    inputs = [("visible uniform", np.full((N, E), 1 / E), (np.arange(N) % E)[:, None]),
              ("visible collapsed", collapsed, np.full((N, 1), 2)),
              ("visible 0.9", np.array([[0.4, 0.3, 0.3], [0.0, 0.5, 0.5]]), np.array([[0], [1]]))]
    for N, E in [(11, 5), (6, 3), (20, 8), (1, 2)]:
        probs = ref.softmax_gating(rng.standard_normal((N, 3)), 2.0 * rng.standard_normal((3, E)))
        for K in sorted({1, 2, E}):
            inputs.append((f"N={N} E={E} K={K}", probs, ref.top_k_route(probs, K).expert_index))
    probs = ref.softmax_gating(rng.standard_normal((9, 3)), rng.standard_normal((3, 4)))
    inputs.append(("unused experts", probs, np.array([[1, 3]] * 9)))
    return [Case((p, idx), {}, label, ref.load_balancing_loss(p, idx), tol=1e-9, kind=_kind(label))
            for label, p, idx in inputs]


PARTS = [
    Part("test_top_k_gating", function="top_k_gating", cases=top_k_cases, check=_routing_check),
    Part("test_renormalized_gates", function="renormalized_gates", cases=renormalized_cases, check=_routing_check),
    Part("test_capacity_keep", function="capacity_keep", cases=capacity_cases, check=_exact_check,
         precision="Exact: booleans (or 0/1 integers) equal to the expected ones entry by entry."),
    Part("test_load_balancing_loss", function="load_balancing_loss", cases=loss_cases),
]
