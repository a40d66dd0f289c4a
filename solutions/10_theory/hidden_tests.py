"""Hidden tests of exercise 10 (theory: kernel smoothing, in-context learning, symmetry, rank).

Not released to students. Each part's cases include the visible self-checks' inputs, so the
notebook runner and the grading pipeline agree on every submission. Expected values come from
``attnmath.theory`` in float64.
"""

import numpy as np

import attnmath.theory as ref
from attngrade.spec import Case, Part, allclose_check
from attnmath.attention import scaled_dot_product_attention
from attnmath.masking import causal_mask, padding_mask


def _kind(label):
    """The kind of a case named ``label``, for the student's feedback: no sizes, no values."""
    if label.startswith("visible"):
        return "a visible self-check"
    if "=" in label:
        return "another shape"
    if label.startswith("shape"):
        return "another shape, " + label.rsplit(", ", 1)[1]
    return label


def smoother_cases(rng):
    keys = np.array([[0.0], [1.0], [2.0]])
    y = np.array([[1.0], [3.0], [5.0]])
    inputs = [("visible centre", np.array([[1.0]]), keys, y, 0.7),
              ("visible weights", np.array([[0.3]]), keys, y, 0.5),
              ("visible constants", np.zeros((2, 1)), keys, np.full((3, 2), 4.0), 1.0),
              ("visible far", np.array([[100.0]]), keys, y, 0.5)]
    for L, S, D, D_v, h in [(5, 8, 2, 3, 0.6), (1, 1, 3, 1, 1.0), (7, 4, 1, 2, 0.2), (3, 12, 5, 4, 2.5),
                            (6, 6, 3, 1, 50.0)]:
        inputs.append((f"L={L} S={S} D={D}", rng.standard_normal((L, D)), rng.standard_normal((S, D)),
                       rng.standard_normal((S, D_v)), h))
    x = rng.standard_normal((4, 2))
    inputs.append(("queries on the keys", x, x, rng.standard_normal((4, 2)), 0.1))
    far_keys = rng.standard_normal((5, 3))
    inputs.append(("far queries, mixed", np.vstack([200.0 + rng.standard_normal((2, 3)), rng.standard_normal((2, 3))]),
                   far_keys, rng.standard_normal((5, 2)), 0.3))
    inputs.append(("two equidistant nearest keys", np.array([[0.5, 80.0]]),
                   np.array([[0.0, 0.0], [1.0, 0.0], [0.5, -3.0]]), np.array([[2.0], [4.0], [100.0]]), 0.5))
    return [Case((xq, xk, yy, h), {}, label, ref.gaussian_kernel_smoother(xq, xk, yy, h), tol=1e-8,
                 kind=_kind(label))
            for label, xq, xk, yy, h in inputs]


def lsa_cases(rng):
    vis = np.random.default_rng(0)
    z = vis.standard_normal((3, 2))
    ws = [vis.standard_normal((2, 2)) for _ in range(4)]
    inputs = [("visible", z, *ws), ("visible P = 0", z, *ws[:3], np.zeros((2, 2)))]
    for T, C in [(1, 1), (5, 3), (9, 4), (4, 6)]:
        inputs.append((f"T={T} C={C}", rng.standard_normal((T, C)), *(rng.standard_normal((C, C)) for _ in range(4))))
    d, N = 3, 6
    X, y, xq = rng.standard_normal((N, d)), rng.standard_normal(N), rng.standard_normal((2, d))
    w = ref.gd_linear_attention_weights(d, N, lr=0.4)
    inputs.append(("the gradient-descent construction", ref.in_context_tokens(X, y, xq), *w))
    cases = []
    for label, z, w_q, w_k, w_v, p in inputs:
        expected = ref.linear_self_attention(z, ref.LinearAttentionWeights(w_q, w_k, w_v, p))
        cases.append(Case((z, w_q, w_k, w_v, p), {}, label, expected, tol=1e-9, kind=_kind(label)))
    return cases


def icl_cases(rng):
    X = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    y = np.array([1.0, -1.0, 2.0])
    inputs = [("visible", X, y, np.array([[1.0, 1.0], [0.5, -1.0]]), 0.3)]
    for N, d, M, lr in [(1, 1, 1, 1.0), (10, 3, 4, 0.2), (25, 5, 1, 2.0), (4, 6, 3, 0.05)]:
        inputs.append((f"N={N} d={d} M={M}", rng.standard_normal((N, d)), rng.standard_normal(N),
                       rng.standard_normal((M, d)), lr))
    return [Case((X, y, xq, lr), {}, label, ref.linear_self_attention_gd_step(X, y, xq, lr=lr), tol=1e-9,
                 kind=_kind(label))
            for label, X, y, xq, lr in inputs]


def _gap(q, k, v, perm, mask):
    return ref.permutation_equivariance_gap(q, k, v, perm, mask=mask)


def gap_cases(rng):
    vis = np.random.default_rng(1)
    q, k, v = vis.standard_normal((4, 3)), vis.standard_normal((4, 3)), vis.standard_normal((4, 2))
    perm = np.array([2, 0, 3, 1])
    causal = np.tril(np.ones((4, 4), dtype=bool))
    inputs = [("visible", q, k, v, perm, None), ("visible causal", q, k, v, perm, causal),
              ("visible identity", q, k, v, np.arange(4), causal)]
    for shape, D_v in [((6, 4), 3), ((2, 5, 3), 2), ((2, 3, 7, 4), 5)]:
        L = shape[-2]
        q, k, v = rng.standard_normal(shape), rng.standard_normal(shape), rng.standard_normal(shape[:-1] + (D_v,))
        perm = rng.permutation(L)
        inputs.append((f"shape {shape}, no mask", q, k, v, perm, None))
        inputs.append((f"shape {shape}, causal", q, k, v, perm, causal_mask(L)))
    q, k, v = rng.standard_normal((3, 6, 4)), rng.standard_normal((3, 6, 4)), rng.standard_normal((3, 6, 2))
    pad = padding_mask(np.array([6, 4, 2]), 6)[:, 0]  # (B, 1, S): keys beyond each length masked
    inputs.append(("padding mask", q, k, v, np.array([5, 4, 3, 2, 1, 0]), pad))
    band = np.abs(np.arange(6)[:, None] - np.arange(6)[None, :]) <= 1
    inputs.append(("band mask", q, k, v, np.array([1, 0, 3, 2, 5, 4]), band))
    q = 30.0 * rng.standard_normal((5, 4))
    inputs.append(("large scores, causal", q, q.copy(), rng.standard_normal((5, 3)), np.array([4, 3, 2, 1, 0]),
                   causal_mask(5)))
    cases = []
    for label, q, k, v, perm, mask in inputs:
        kwargs = {} if mask is None else {"mask": mask}
        cases.append(Case((q, k, v, perm), kwargs, label, _gap(q, k, v, perm, mask), tol=1e-9,
                          kind=_kind(label)))
    return cases


def _rank_check(case, out):
    assert isinstance(out, (int, float)) and float(out) == int(out), f"expected an integer rank, got {out!r}"
    assert int(out) == case.expected, "wrong rank"


def _probs(H, L, S, rng):
    q, k = rng.standard_normal((H, L, 3)), rng.standard_normal((H, S, 3))
    return scaled_dot_product_attention(q, k, np.zeros((H, S, 1)))[1].probs  # (H, L, S)


def rank_cases(rng):
    vis = np.random.default_rng(2)
    H, L, S, D_v, C = 4, 8, 8, 2, 8
    scores = vis.standard_normal((H, L, S))
    probs = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    v = vis.standard_normal((H, S, D_v))
    inputs = [("visible", probs, v, vis.standard_normal((H * D_v, C))),
              ("visible one head", probs[:1], v[:1], vis.standard_normal((D_v, C)))]
    for H, L, S, D_v, C in [(2, 6, 6, 2, 8), (3, 10, 4, 3, 16), (4, 12, 12, 2, 5), (1, 5, 9, 7, 7)]:
        inputs.append((f"H={H} L={L} S={S} D_v={D_v} C={C}", _probs(H, L, S, rng), rng.standard_normal((H, S, D_v)),
                       rng.standard_normal((H * D_v, C))))
    # Head 1's rows of W_O are zero: only head 0 counts (tests the concatenation order).
    H, L, S, D_v, C = 2, 8, 8, 3, 8
    w_o = rng.standard_normal((H * D_v, C))
    w_o[D_v:] = 0.0
    inputs.append(("head 1 projected out", _probs(H, L, S, rng), rng.standard_normal((H, S, D_v)), w_o))
    # Rank-one values in every head.
    H = 3
    v = rng.standard_normal((H, S, 1)) * rng.standard_normal((H, 1, D_v))
    inputs.append(("rank-one values", _probs(H, L, S, rng), v, rng.standard_normal((H * D_v, C))))
    return [Case((p, vv, w), {}, label, int(ref.multi_head_output_rank(p, vv, w)), kind=_kind(label))
            for label, p, vv, w in inputs]


PARTS = [
    Part("test_gaussian_smoother", function="gaussian_smoother", cases=smoother_cases),
    Part("test_linear_self_attention", function="linear_self_attention", cases=lsa_cases),
    Part("test_icl_prediction", function="icl_prediction", cases=icl_cases),
    Part("test_equivariance_gap", function="equivariance_gap", cases=gap_cases, check=allclose_check),
    Part("test_multi_head_rank", function="multi_head_rank", cases=rank_cases, check=_rank_check,
         precision="Exact: the rank as an integer."),
]
