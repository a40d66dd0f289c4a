"""The cases of exercise 10 (theory: kernel smoothing, in-context learning, symmetry, rank): one
generator per part, for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code and tolerances
(``attngrade.spec``). Expected values come from ``attnmath.theory`` in float64, computed before
your function runs; your function gets its own copies of the inputs.
"""

import numpy as np

import attnmath.theory as ref
from attngrade.spec import Case, Part, allclose_check
from attngrade.visible import factor_hint, like
from attnmath.attention import scaled_dot_product_attention
from attnmath.masking import causal_mask, padding_mask

# ----------------------------------------------------------------------------- Part 1


def _equidistant(rng):
    """A query far (in bandwidths) from two keys at the same distance, a third key further away:
    small dyadic coordinates, so that both squared distances are exact whatever the formula."""
    c, delta, y0 = rng.integers(-8, 9) / 8, rng.integers(1, 5) / 4, rng.integers(-8, 9) / 8
    keys = np.array([[c - delta, y0], [c + delta, y0], [c + rng.integers(-8, 9) / 8, y0 - 3.0]])
    return np.array([[c, y0 + 80.0]]), keys, rng.standard_normal((3, 1))


def smoother_cases(rng):
    inputs = []
    for L, S, D, D_v, h in [(5, 8, 2, 3, 0.6), (1, 3, 1, 1, 0.5), (1, 1, 3, 1, 1.0), (7, 4, 1, 2, 0.2),
                            (3, 12, 5, 4, 2.5), (6, 6, 3, 1, 50.0)]:
        inputs.append((f"L={L} S={S} D={D}", "another shape", rng.standard_normal((L, D)),
                       rng.standard_normal((S, D)), rng.standard_normal((S, D_v)), h))
    inputs.append(("constant responses", "constant responses", rng.standard_normal((2, 1)),
                   rng.standard_normal((3, 1)), np.full((3, 2), rng.standard_normal()), 1.0))
    x = rng.standard_normal((4, 2))
    inputs.append(("queries on the keys", "queries on the keys", x, x, rng.standard_normal((4, 2)), 0.1))
    far_keys = rng.standard_normal((5, 3))
    inputs.append(("far queries, mixed", "far queries, mixed",
                   np.vstack([200.0 + rng.standard_normal((2, 3)), rng.standard_normal((2, 3))]),
                   far_keys, rng.standard_normal((5, 2)), 0.3))
    inputs.append(("a far query, one dimension", "far queries, mixed", 100.0 + rng.standard_normal((1, 1)),
                   rng.standard_normal((3, 1)), rng.standard_normal((3, 1)), 0.5))
    inputs.append(("two equidistant nearest keys", "two equidistant nearest keys", *_equidistant(rng), 0.5))
    return [Case((xq, xk, yy, h), {}, label, ref.gaussian_kernel_smoother(xq, xk, yy, h), tol=1e-8, kind=kind)
            for label, kind, xq, xk, yy, h in inputs]


def _smooth(x_query, x_keys, y, denominator, coordinates=None, own_key=True):
    """The smoother as a mistake computes it: another denominator of the squared distance, some
    coordinates only, or without the query's own key."""
    diff = x_query[:, None, :] - x_keys[None, :, :]
    if coordinates is not None:
        diff = diff[..., coordinates]
    d2 = np.sum(diff * diff, axis=-1)
    logk = -np.where((d2 == 0) & (not own_key), np.inf, d2) / denominator
    with np.errstate(invalid="ignore", over="ignore"):
        logk = logk - logk.max(axis=1, keepdims=True)
        w = np.exp(logk)
        return (w / w.sum(axis=1, keepdims=True)) @ y


def diagnose_smoother(case, out):
    xq, xk, y, h = (np.asarray(a, dtype=np.float64) for a in case.args)
    variants = [(dict(denominator=2 * h), "the kernel's exponent is divided by 2h, not by 2h^2"),
                (dict(denominator=h**2), "the kernel's exponent lacks the factor 1/2"),
                (dict(denominator=-2 * h**2), "the kernel's exponent has the wrong sign"),
                (dict(denominator=2 * h**2, coordinates=[0]), "the kernel uses the squared distance over every "
                                                             "coordinate, not the first one only"),
                (dict(denominator=2 * h**2, own_key=False), "a query's own key has distance 0 and weight "
                                                            "exp(0) = 1, like any other key")]
    for change, words in variants:
        if like(out, _smooth(xq, xk, y, **change), case.expected):
            return words
    return None


HINTS_SMOOTHER = {
    "another shape": "the kernel uses the squared distance over every coordinate, divided by 2h^2",
    "constant responses": "the weights of a query sum to one, so constant responses are reproduced",
    "queries on the keys": "a query's own key has distance 0 and weight exp(0) = 1, like any other key",
    "far queries, mixed": "a far query gets (almost) its nearest key's value: take the softmax of the log-kernel, "
                          "subtracting each row's maximum",
    "two equidistant nearest keys": "a query far (in bandwidths) from two equally near keys gets the mean of their "
                                    "values: take the softmax of the log-kernel, subtracting each row's maximum",
}

# ----------------------------------------------------------------------------- Part 2


def _lsa(z, w_q, w_k, w_v, p, transposed=False, scale=1.0, causal=False, residual=True, p_transposed=True):
    """Linear self-attention as a mistake computes it."""
    t = (lambda w: w) if transposed else (lambda w: w.T)
    scores = scale * ((z @ t(w_q)) @ (z @ t(w_k)).T)
    if causal:
        scores = np.tril(scores)
    update = (scores @ (z @ t(w_v))) @ (p.T if p_transposed else p)
    return z + update if residual else update


def lsa_cases(rng):
    inputs = []
    for T, C in [(3, 2), (1, 1), (5, 3), (9, 4), (4, 6)]:
        inputs.append((f"T={T} C={C}", "another shape", rng.standard_normal((T, C)),
                       *(rng.standard_normal((C, C)) for _ in range(4))))
    z = rng.standard_normal((3, 2))
    inputs.append(("P = 0", "a zero output projection", z, *(rng.standard_normal((2, 2)) for _ in range(3)),
                   np.zeros((2, 2))))
    d, N = 3, 6
    X, y, xq = rng.standard_normal((N, d)), rng.standard_normal(N), rng.standard_normal((2, d))
    w = ref.gd_linear_attention_weights(d, N, lr=0.4)
    inputs.append(("the gradient-descent construction", "the gradient-descent construction",
                   ref.in_context_tokens(X, y, xq), *w))
    cases = []
    for label, kind, z, w_q, w_k, w_v, p in inputs:
        expected = ref.linear_self_attention(z, ref.LinearAttentionWeights(w_q, w_k, w_v, p))
        cases.append(Case((z, w_q, w_k, w_v, p), {}, label, expected, tol=1e-9, kind=kind))
    return cases


def diagnose_lsa(case, out):
    z, w_q, w_k, w_v, p = case.args
    C = z.shape[1]
    variants = [(dict(transposed=True), "the weights are transposed: W z_i for a row z_i of z is z_i @ W.T"),
                (dict(p_transposed=False), "P is transposed: P u for a row u is u @ P.T"),
                (dict(scale=1 / np.sqrt(C)), "the output is scaled by 1/sqrt(C): linear self-attention does not "
                                             "scale its scores"),
                (dict(causal=True), "every token attends to every token, itself included (no causal mask)"),
                (dict(residual=False), "the residual is missing: z_j' = z_j + ...")]
    for change, words in variants:
        if like(out, _lsa(z, w_q, w_k, w_v, p, **change), case.expected):
            return words
    return None


HINTS_LSA = {
    "another shape": "W z_i for a row z_i of z is z_i @ W.T; the (T, T) scores are one matrix product",
    "a zero output projection": "P = 0 leaves the tokens unchanged: the residual z is added",
    "the gradient-descent construction": "every token attends to every token, itself included, and the scores are "
                                         "not scaled",
}

# ----------------------------------------------------------------------------- Part 3


def icl_cases(rng):
    inputs = []
    for N, d, M, lr, kind in [(3, 2, 2, 0.3, "a few examples and queries"), (10, 3, 4, 0.2, "a few examples and queries"),
                              (4, 6, 3, 0.05, "more features than examples"), (25, 5, 1, 2.0, "one query"),
                              (2, 2, 1, 0.5, "one query"), (1, 1, 1, 1.0, "one example, one feature, one query")]:
        inputs.append((f"N={N} d={d} M={M}", rng.standard_normal((N, d)), rng.standard_normal(N),
                       rng.standard_normal((M, d)), lr, kind))
    return [Case((X, y, xq, lr), {}, label, ref.linear_self_attention_gd_step(X, y, xq, lr=lr), tol=1e-9,
                 kind=kind)
            for label, X, y, xq, lr, kind in inputs]


def diagnose_icl(case, out):
    X = case.args[0]
    N = X.shape[0]
    return factor_hint(out, case.expected, [(N, "the gradient step averages over the N examples: a factor 1/N is "
                                                  "missing"),
                                            (-1.0, "the step goes uphill: check the sign"),
                                            (1 / N, "the factor 1/N is applied twice")])


_ICL = "one prediction per query, shape (M,): the label slot of each query token's output"
HINTS_ICL = {
    "a few examples and queries": _ICL + "; the step averages the N examples' gradient (a factor 1/N)",
    "more features than examples": _ICL + "; sum over the N examples, not over the d features",
    "one query": _ICL + "; with M = 1 it is still an array of shape (1,)",
    "one example, one feature, one query": _ICL + "; keep every axis, even of size 1",
}

# ----------------------------------------------------------------------------- Part 4


def _gap(q, k, v, perm, mask):
    return ref.permutation_equivariance_gap(q, k, v, perm, mask=mask)


def _moving(rng, L):
    """A random permutation of range(L) that is not the identity."""
    perm = rng.permutation(L)
    return np.roll(perm, 1) if (perm == np.arange(L)).all() else perm


def gap_check(case, out):
    """The task asks for a Python float (a NumPy float is one, and a NumPy scalar becomes one)."""
    assert isinstance(out, float), f"return a Python float (float(...)), not {type(out).__name__}"
    allclose_check(case, out)


def gap_cases(rng):
    inputs = []
    for shape, D_v in [((4, 3), 2), ((6, 4), 3), ((2, 5, 3), 2), ((2, 3, 7, 4), 5)]:
        L = shape[-2]
        q, k, v = rng.standard_normal(shape), rng.standard_normal(shape), rng.standard_normal(shape[:-1] + (D_v,))
        perm = _moving(rng, L)
        inputs.append((f"shape {shape}, no mask", "another shape, no mask", q, k, v, perm, None))
        inputs.append((f"shape {shape}, causal", "another shape, causal", q, k, v, perm, causal_mask(L)))
    q, k, v = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
    inputs.append(("identity, causal", "the identity permutation", q, k, v, np.arange(5), causal_mask(5)))
    q, k, v = rng.standard_normal((3, 6, 4)), rng.standard_normal((3, 6, 4)), rng.standard_normal((3, 6, 2))
    pad = padding_mask(np.array([6, 4, 2]), 6)[:, 0]  # (B, 1, S): keys beyond each length masked
    inputs.append(("padding mask", "padding mask", q, k, v, _moving(rng, 6), pad))
    band = np.abs(np.arange(6)[:, None] - np.arange(6)[None, :]) <= 1
    inputs.append(("band mask", "band mask", q, k, v, np.array([1, 0, 3, 2, 5, 4]), band))
    inputs.append(("band mask, reversed", "band mask", q[0], k[0], v[0], np.arange(6)[::-1].copy(), band))
    q = 40.0 * rng.standard_normal((5, 4))
    inputs.append(("large scores, causal", "large scores, causal", q, q.copy(), rng.standard_normal((5, 3)),
                   np.array([4, 3, 2, 1, 0]), causal_mask(5)))
    cases = []
    for label, kind, q, k, v, perm, mask in inputs:
        kwargs = {} if mask is None else {"mask": mask}
        cases.append(Case((q, k, v, perm), kwargs, label, _gap(q, k, v, perm, mask), tol=1e-9, kind=kind))
    return cases


def _permuted(mask, perm, L):
    """A mask permuted with the tokens (its query and key axes where they have length L)."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.shape[-2] == L:
        mask = mask[..., perm, :]
    return mask[..., perm] if mask.shape[-1] == L else mask


def diagnose_gap(case, out):
    q, k, v, perm = case.args
    mask = case.kwargs.get("mask")
    if not isinstance(out, (int, float)):
        return "the task asks for a Python float: return float(...) of the largest violation"
    L = q.shape[-2]
    variants = [(_gap(q, k, v, perm, _permuted(mask, perm, L)), "the mask belongs to the positions: do not "
                                                                  "permute it"),
                (ref.permutation_equivariance_gap(q * np.sqrt(q.shape[-1]), k, v, perm, mask=mask),
                 "the scores are not scaled: divide them by sqrt(D)"),
                (_gap(q, k, v, perm, None), "apply the mask you are given (broadcast to (..., L, L))")]
    if mask is not None and np.shape(mask)[-2:] == (L, L):
        variants.append((_gap(q, k, v, perm, causal_mask(L)), "apply the mask you are given, not a causal one"))
    for variant, words in variants:
        if like(out, variant, case.expected, rtol=1e-6):
            return words
    return None


HINTS_GAP = {
    "another shape, no mask": "unmasked self-attention is equivariant (a gap of about 1e-16): transpose and permute "
                              "the last two axes only (np.swapaxes(k, -1, -2), x[..., perm, :])",
    "another shape, causal": "the mask belongs to the positions and is not permuted; an (L, L) mask broadcasts over "
                             "the leading axes",
    "the identity permutation": "the identity permutation has no gap",
    "padding mask": "a padding mask of shape (B, 1, S) broadcasts over the queries: the masked keys stay where "
                    "they are",
    "band mask": "apply the mask you are given: np.where(mask, scores, -np.inf) broadcasts it",
    "large scores, causal": "NaN or inf for large scores: subtract each row's maximum before exp",
}

# ----------------------------------------------------------------------------- Part 5


def rank_check(case, out):
    """The task asks for a Python int (a NumPy integer becomes one)."""
    assert isinstance(out, int) and not isinstance(out, bool), \
        f"return the rank as a Python int (int(...)), not {type(out).__name__}"
    assert out == case.expected, "wrong rank"


def _probs(H, L, S, rng):
    q, k = rng.standard_normal((H, L, 3)), rng.standard_normal((H, S, 3))
    return scaled_dot_product_attention(q, k, np.zeros((H, S, 1)))[1].probs  # (H, L, S)


def rank_cases(rng):
    inputs = []
    for H, L, S, D_v, C in [(4, 8, 8, 2, 8), (1, 8, 8, 2, 8), (2, 5, 3, 2, 6), (2, 6, 6, 2, 8), (3, 10, 4, 3, 16),
                            (4, 12, 12, 2, 5), (1, 5, 9, 7, 7)]:
        inputs.append((f"H={H} L={L} S={S} D_v={D_v} C={C}", "another shape", _probs(H, L, S, rng),
                       rng.standard_normal((H, S, D_v)), rng.standard_normal((H * D_v, C))))
    # Head 1's rows of W_O are zero: only head 0 counts (tests the concatenation order).
    H, L, S, D_v, C = 2, 8, 8, 3, 8
    w_o = rng.standard_normal((H * D_v, C))
    w_o[D_v:] = 0.0
    inputs.append(("head 1 projected out", "head 1 projected out", _probs(H, L, S, rng),
                   rng.standard_normal((H, S, D_v)), w_o))
    # Rank-one values in every head.
    for H in (3, 2):
        v = rng.standard_normal((H, S, 1)) * rng.standard_normal((H, 1, D_v))
        inputs.append((f"rank-one values, H={H}", "rank-one values", _probs(H, L, S, rng), v,
                       rng.standard_normal((H * D_v, C))))
    return [Case((p, vv, w), {}, label, int(ref.multi_head_output_rank(p, vv, w)), kind=kind)
            for label, kind, p, vv, w in inputs]


def diagnose_rank(case, out):
    probs, v, w_o = case.args
    heads = probs @ v
    H, L, D_v = heads.shape
    if not isinstance(out, int):
        return "the task asks for a Python int: return int(...) of the rank"
    concat = np.transpose(heads, (1, 0, 2)).reshape(L, H * D_v)
    for variant, words in [(min(L, H * min(probs.shape[-1], D_v), w_o.shape[1]), "compute the rank of the output: "
                                                                                  "it can be below every bound"),
                           (np.linalg.matrix_rank(concat), "compute the rank of the output after W_O"),
                           (np.linalg.matrix_rank(heads.reshape(H * L, D_v)), "concatenate the heads along the "
                                                                              "feature axis: (L, H * D_v)")]:
        if out == variant != case.expected:
            return words
    return None


HINTS_RANK = {
    "another shape": "concatenate the heads along the feature axis, head 0 first: (L, H * D_v), then project",
    "head 1 projected out": "rows h*D_v:(h+1)*D_v of W_O act on head h: the rank of the output after W_O",
    "rank-one values": "compute the rank of the output: it can be below every bound",
}

PARTS = [
    Part("test_gaussian_smoother", function="gaussian_smoother", cases=smoother_cases, hints=HINTS_SMOOTHER,
         diagnose=diagnose_smoother),
    Part("test_linear_self_attention", function="linear_self_attention", cases=lsa_cases, hints=HINTS_LSA,
         diagnose=diagnose_lsa),
    Part("test_icl_prediction", function="icl_prediction", cases=icl_cases, hints=HINTS_ICL, diagnose=diagnose_icl),
    Part("test_equivariance_gap", function="equivariance_gap", cases=gap_cases, check=gap_check, hints=HINTS_GAP,
         diagnose=diagnose_gap),
    Part("test_multi_head_rank", function="multi_head_rank", cases=rank_cases, check=rank_check,
         precision="Exact: the rank as a Python int.", hints=HINTS_RANK, diagnose=diagnose_rank),
]
