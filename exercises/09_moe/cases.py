"""The cases of exercise 09 (mixture-of-experts routing): one generator per part, for the visible
checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code and tolerances
(``attngrade.spec``). Expected values come from ``attnmath.moe`` in float64, computed before your
function runs; your function gets its own copies of the inputs.

Tied probabilities come from small-integer inputs, whose logits are exact whatever the order of
summation, so that every valid way of computing them ties exactly. Capacity factors and shapes
are chosen so that ``capacity_factor * N * K / E`` has no rounding ambiguity.
"""

import math

import numpy as np

import attnmath.moe as ref
from attngrade.spec import Case, Part, allclose_check
from attngrade.visible import factor_hint, like

# ----------------------------------------------------------------------------- Parts 1 and 2


def _routing_inputs(rng):
    """(label, kind, x, w_g, k) for the two routing parts: plain kinds first, edge cases after."""
    inputs = []
    for N, C, E in [(3, 2, 3), (1, 3, 2), (7, 4, 5), (12, 6, 8), (5, 2, 9), (16, 5, 3)]:
        x, w_g = rng.standard_normal((N, C)), rng.standard_normal((C, E))
        for k in sorted({1, 2, E // 2 + 1, E}):
            inputs.append((f"N={N} E={E} k={k}", "another router and k", x, w_g, k))
    # Exact ties: small integers make the logits exact, several experts per row share a value.
    x = rng.integers(-2, 3, size=(10, 3)).astype(np.float64)
    w_g = rng.integers(-1, 2, size=(3, 6)).astype(np.float64)
    w_g[:, 3] = w_g[:, 1]  # experts 1 and 3 always tie
    w_g[:, 5] = w_g[:, 0]  # experts 0 and 5 always tie
    for k in (1, 2, 3, 5):
        inputs.append((f"integer ties k={k}", "experts with exactly tied probabilities", x, w_g, k))
    # Uniform rows: every expert ties (zero weights, or the same integer weight for every expert).
    inputs.append(("uniform rows, zero weights", "uniform rows", rng.standard_normal((3, 2)), np.zeros((2, 7)), 4))
    x = rng.integers(-3, 4, size=(2, 1)).astype(np.float64)
    inputs.append(("uniform rows, equal weights", "uniform rows", x, np.full((1, 4), float(rng.integers(1, 4))), 2))
    # Large logits (a constant feature times a large weight): exp overflows, or underflows to
    # 0/0, without the max shift. The spread between experts stays moderate, so no probability
    # underflows to an exact (artificial) tie.
    x = np.concatenate([np.ones((6, 1)), rng.standard_normal((6, 3))], axis=1)
    for offset, k in ((800.0, 2), (-800.0, 3)):
        w_g = np.concatenate([np.full((1, 5), offset), rng.standard_normal((3, 5))], axis=0)
        inputs.append((f"logits near {offset:g}", "very large or very negative logits", x, w_g, k))
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
    for label, kind, x, w_g, k in _routing_inputs(rng):
        r = ref.top_k_route(ref.softmax_gating(x, w_g), k)
        cases.append(Case((x, w_g, k), {}, label, (r.expert_index, r.gate), tol=1e-6, kind=kind))
    return cases


def renormalized_cases(rng):
    cases = []
    for label, kind, x, w_g, k in _routing_inputs(rng):
        r = ref.top_k_route_renormalized(ref.softmax_gating(x, w_g), k)
        cases.append(Case((x, w_g, k), {}, label, (r.expert_index, r.gate), tol=1e-6, kind=kind))
    return cases


def _softmax(z, axis, shift_axis=None):
    """A softmax over ``axis`` whose exponent is shifted by the maximum over ``shift_axis``."""
    shift_axis = axis if shift_axis is None else shift_axis
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        e = np.exp(z - z.max(axis=shift_axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)


def _route_like(out, variant, expected) -> bool:
    """Whether ``out`` is the routing ``variant`` (experts and gates) and that differs from the
    expected routing."""
    try:
        idx, gate = (np.asarray(o) for o in out)
    except (TypeError, ValueError):
        return False
    (v_idx, v_gate), (e_idx, e_gate) = variant, expected
    if idx.shape != v_idx.shape or gate.shape != v_gate.shape or not np.isfinite(gate).all():
        return False
    same = v_idx.shape == e_idx.shape and (v_idx == e_idx).all() and np.allclose(v_gate, e_gate, atol=1e-9)
    return bool(not same and (idx == v_idx).all() and np.allclose(gate, v_gate, rtol=1e-6, atol=1e-9))


def _routing_variants(x, w_g, k, renormalized):
    """(routing as a mistake computes it, what the mistake is)."""
    z = np.asarray(x, dtype=np.float64) @ np.asarray(w_g, dtype=np.float64)
    probs = _softmax(z, 1)
    best = np.argsort(-probs, axis=1, kind="stable")[:, :k]

    def gates(p, idx):
        g = np.take_along_axis(p, idx, axis=1)
        return g / g.sum(axis=1, keepdims=True) if renormalized else g

    found = []
    for p in (_softmax(z, 0), _softmax(z, 0, shift_axis=1)):
        idx = np.argsort(-p, axis=1, kind="stable")[:, :k]
        found.append(((idx, gates(p, idx)), "the softmax runs over the experts of each token, not over the tokens"))
    ascending = np.argsort(probs, axis=1, kind="stable")
    found += [((ascending[:, :k], gates(probs, ascending[:, :k])),
               "the experts are in the wrong order: the most probable expert comes first"),
              ((ascending[:, ::-1][:, :k], gates(probs, ascending[:, ::-1][:, :k])),
               "tied experts go to the lowest expert index first: sort -p with kind='stable' (not p reversed)"),
              ((best, np.take_along_axis(z, best, axis=1)),
               "the gates are probabilities (a softmax of the logits), not the logits")]
    if renormalized:
        plain = np.take_along_axis(probs, best, axis=1)
        found += [((best, plain), "the gates are not renormalised: divide the chosen probabilities by their sum"),
                  ((best, plain * plain.sum(axis=1, keepdims=True)),
                   "divide the chosen probabilities by their sum (here they are multiplied by it)")]
    return found


def _diagnose_routing(renormalized):
    def diagnose(case, out):
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            return None
        for variant, words in _routing_variants(*case.args, renormalized):
            if _route_like(out, variant, case.expected):
                return words
        return None

    return diagnose


HINTS_TOP_K = {
    "another router and k": "both outputs have shape (N, k), k = 1 included; the softmax runs over the experts of "
                            "each token (axis 1), and the most probable expert comes first",
    "experts with exactly tied probabilities": "two experts tie: the lower index comes first "
                                               "(np.argsort(-p, axis=1, kind='stable'))",
    "uniform rows": "a uniform row ties every expert: the k lowest indices, in increasing order",
    "very large or very negative logits": "NaN or inf for logits in the hundreds: subtract each token's maximum "
                                          "before exp",
}

HINTS_RENORMALIZED = {
    **HINTS_TOP_K,
    "another router and k": "the same experts in the same order as Part 1, both outputs of shape (N, k), "
                            "and each row of gates sums to one (k = 1: every gate is 1)",
    "uniform rows": "a uniform row ties every expert: the k lowest indices, in increasing order, each with gate 1/k",
    "very large or very negative logits": "NaN or inf for logits in the hundreds: subtract the largest (chosen) "
                                          "logit before exp",
}

# ----------------------------------------------------------------------------- Part 3


def _serve(expert_index, E, capacity, by_column=True):
    """Which assignments an expert with ``capacity`` slots serves, all first choices first
    (``by_column``) or token by token."""
    N, K = expert_index.shape
    used, kept = np.zeros(E, dtype=np.int64), np.zeros((N, K), dtype=bool)
    order = [(n, s) for s in range(K) for n in range(N)] if by_column else [(n, s) for n in range(N) for s in range(K)]
    for n, s in order:
        e = expert_index[n, s]
        if used[e] < capacity:
            used[e] += 1
            kept[n, s] = True
    return kept


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
    # Uneven routers; E a power of two or N K a multiple of E, dyadic factors: no rounding ambiguity.
    for N, E, K in [(4, 3, 2), (16, 4, 1), (16, 4, 2), (24, 8, 3), (12, 6, 2), (9, 3, 1), (32, 8, 2), (10, 2, 2)]:
        x = rng.standard_normal((N, 3))
        w_g = rng.standard_normal((3, E)) + np.linspace(1.5, -1.5, E)[None, :]
        idx = ref.top_k_route(ref.softmax_gating(x, w_g), K).expert_index
        for cf in (0.25, 0.5, 0.75, 1.0, 1.25, 2.0):
            cases.append(Case((idx, E, cf), {}, f"N={N} E={E} K={K} factor {cf}", _kept(idx, E, cf),
                              kind="another router and capacity factor"))
    # 2.5 slots per expert: three of five tokens on expert 0 are all kept, as the capacity rounds up.
    idx = rng.permutation(np.array([0, 0, 0, 1, 1]))[:, None]
    cases.append(Case((idx, 2, 1.0), {}, "N=5 E=2 K=1 factor 1.0, 2.5 slots", _kept(idx, 2, 1.0),
                      kind="a capacity that is not a whole number"))
    cases.append(Case((np.zeros((5, 1), dtype=np.int64), 1, 1.0), {}, "one expert", np.ones((5, 1), dtype=bool),
                      kind="a single expert"))
    cases.append(Case((np.zeros((4, 1), dtype=np.int64), 1, 0.5), {}, "one expert, factor 0.5",
                      np.array([[True], [True], [False], [False]]), kind="a single expert"))
    for E in (4, 3):
        collapsed = np.tile(rng.permutation(E)[:2][None, :], (8 if E == 4 else 4, 1))
        cases.append(Case((collapsed, E, 1.0), {}, f"collapsed router, E={E}", _kept(collapsed, E, 1.0),
                          kind="every token sent to the same experts"))
    return cases


def diagnose_capacity(case, out):
    idx, E, cf = case.args
    N, K = idx.shape
    capacity = math.ceil(cf * N * K / E)
    try:
        kept = np.asarray(out).astype(bool)
    except (TypeError, ValueError):
        return None
    used = len(np.unique(idx))
    variants = [
        (_serve(idx, E, capacity, by_column=False), "serve all first choices (column 0) before any second choice, "
                                                    "tokens in index order within a column"),
        (_serve(idx, E, math.floor(cf * N * K / E)), "the capacity rounds up: math.ceil(capacity_factor * N * K / E)"),
        (_serve(idx, E, math.ceil(cf * N * K / used)), "the capacity divides by num_experts, all the experts, used "
                                                       "or not"),
        (_serve(idx, E, capacity + 1), "an expert serves at most `capacity` assignments (one slot too many: "
                                       "< capacity, not <=)"),
    ]
    for variant, words in variants:
        if like(kept, variant, case.expected):
            return words
    return None


HINTS_CAPACITY = {
    "another router and capacity factor": "serve all first choices before any second choice, tokens in index order; "
                                          "capacity = math.ceil(capacity_factor * N * K / E)",
    "a capacity that is not a whole number": "capacity = math.ceil(capacity_factor * N * K / E): round up",
    "a single expert": "kept has the shape (N, k) of expert_index, and one expert has a capacity too",
    "every token sent to the same experts": "the capacity counts all num_experts experts, used or not",
}

# ----------------------------------------------------------------------------- Part 4


def loss_check(case, out):
    """The task asks for a Python float (a NumPy float is one, and a NumPy scalar becomes one)."""
    assert isinstance(out, float), f"return a Python float (float(...)), not {type(out).__name__}"
    allclose_check(case, out)


def _loss_inputs(rng):
    """(label, kind, probs, expert_index) for Part 4: plain kinds first, edge cases after."""
    inputs = []
    for N, E in [(11, 5), (6, 3), (20, 8), (1, 2), (2, 3)]:
        probs = ref.softmax_gating(rng.standard_normal((N, 3)), 2.0 * rng.standard_normal((3, E)))
        for K in sorted({1, 2, E}):
            inputs.append((f"N={N} E={E} K={K}", "another router and k", probs, ref.top_k_route(probs, K).expert_index))
    E, N = 4, 8
    inputs.append(("uniform", "uniform or collapsed routing", np.full((N, E), 1 / E),
                   rng.permutation(np.arange(N) % E)[:, None]))
    collapsed, expert = np.zeros((N, E)), int(rng.integers(0, E))
    collapsed[:, expert] = 1.0
    inputs.append(("collapsed", "uniform or collapsed routing", collapsed, np.full((N, 1), expert)))
    probs = ref.softmax_gating(rng.standard_normal((9, 3)), rng.standard_normal((3, 4)))
    inputs.append(("unused experts 0 and 2", "unused experts", probs, np.array([[1, 3]] * 9)))
    probs = ref.softmax_gating(rng.standard_normal((2, 2)), rng.standard_normal((2, 3)))
    probs[1] = [0.0, 0.5, 0.5]
    inputs.append(("the last expert unused", "unused experts", probs, np.array([[0], [1]])))
    return inputs


def loss_cases(rng):
    return [Case((p, idx), {}, label, ref.load_balancing_loss(p, idx), tol=1e-9, kind=kind)
            for label, kind, p, idx in _loss_inputs(rng)]


def diagnose_loss(case, out):
    probs, idx = case.args
    N, E = probs.shape
    if not isinstance(out, (int, float)):
        return "the task asks for a Python float: return float(...) of the loss"
    f = np.bincount(idx.ravel(), minlength=E) / idx.size
    P = probs.mean(axis=0)
    for variant, words in [(E * (f * idx.shape[1]) @ P, "f_e is the fraction of the N * k choices that go to "
                                                        "expert e: divide the counts by N * k"),
                           (E * f @ probs.sum(axis=0), "P_e is the mean probability over the tokens, not the sum")]:
        if np.ndim(out) == 0 and like(out, variant, case.expected):
            return words
    return factor_hint(out, case.expected, [(1 / E, "multiply by E, the number of experts")])


HINTS_LOSS = {
    "another router and k": "f_e is the fraction of the N * k choices that go to expert e, and P_e the mean "
                            "probability of expert e over the tokens",
    "uniform or collapsed routing": "uniform routing gives 1 and collapse on one expert gives E",
    "unused experts": "an expert no token chose has f_e = 0: count with np.bincount(..., minlength=E)",
}

PARTS = [
    Part("test_top_k_gating", function="top_k_gating", cases=top_k_cases, check=_routing_check,
         outputs=("expert_index", "gate"), hints=HINTS_TOP_K, diagnose=_diagnose_routing(False)),
    Part("test_renormalized_gates", function="renormalized_gates", cases=renormalized_cases, check=_routing_check,
         outputs=("expert_index", "gate"), hints=HINTS_RENORMALIZED, diagnose=_diagnose_routing(True)),
    Part("test_capacity_keep", function="capacity_keep", cases=capacity_cases, check=_exact_check,
         precision="Exact: booleans (or 0/1 integers) equal to the expected ones entry by entry.",
         hints=HINTS_CAPACITY, diagnose=diagnose_capacity),
    Part("test_load_balancing_loss", function="load_balancing_loss", cases=loss_cases, check=loss_check,
         hints=HINTS_LOSS, diagnose=diagnose_loss),
]
