"""Hidden tests of exercise 11 (capstone: a Transformer encoder block in NumPy). Not released.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath`` in float64.
"""

import numpy as np

import attnmath.encoder as ref
from attngrade.spec import Case, Part
from attnmath.multihead import MultiHeadParams
from attnmath.softmax import log_softmax

ATTN_KEYS = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")


def _params(rng, C, F, scale=1.0):
    """A params dictionary as the notebook describes it, with every entry non-trivial."""
    p = {n: scale * rng.standard_normal((C, C)) / np.sqrt(C) for n in ("w_q", "w_k", "w_v", "w_o")}
    p.update({n: 0.1 * rng.standard_normal(C) for n in ("b_q", "b_k", "b_v", "b_o", "b_2", "ln1_beta", "ln2_beta")})
    p.update(w_1=rng.standard_normal((C, F)) / np.sqrt(C), b_1=0.1 * rng.standard_normal(F),
             w_2=rng.standard_normal((F, C)) / np.sqrt(F),
             ln1_gamma=1 + 0.1 * rng.standard_normal(C), ln2_gamma=1 + 0.1 * rng.standard_normal(C))
    return p


def _visible_params(rng, C, F):
    """The visible check's ``random_params``, drawn in the same order."""
    p = {n: rng.standard_normal((C, C)) / np.sqrt(C) for n in ("w_q", "w_k", "w_v", "w_o")}
    p.update({n: 0.1 * rng.standard_normal(C) for n in ("b_q", "b_k", "b_v", "b_o", "b_2", "ln1_beta")})
    p.update(w_1=rng.standard_normal((C, F)) / np.sqrt(C), b_1=0.1 * rng.standard_normal(F),
             w_2=rng.standard_normal((F, C)) / np.sqrt(F), ln1_gamma=1 + 0.1 * rng.standard_normal(C),
             ln2_gamma=np.ones(C), ln2_beta=np.zeros(C))
    return p


def _block(x, p, H, mask=None):
    params = ref.EncoderBlockParams(
        MultiHeadParams(*(p[k] for k in ATTN_KEYS)), p["w_1"], p["b_1"], p["w_2"], p["b_2"],
        p["ln1_gamma"], p["ln1_beta"], p["ln2_gamma"], p["ln2_beta"])
    return ref.encoder_block_forward(x, params, H, mask=mask)


# --------------------------------------------------------------------------------------------


def layer_norm_cases(rng):
    vis = np.random.default_rng(0)
    x = 3.0 + 2.0 * vis.standard_normal((2, 3, 8))
    g, b = vis.standard_normal(8), vis.standard_normal(8)
    cases = [Case((x, np.ones(8), np.zeros(8)), {}, "visible", ref.layer_norm(x, np.ones(8), np.zeros(8)),
                  kind="a visible self-check"),
             Case((x, g, b), {}, "visible affine", ref.layer_norm(x, g, b), kind="a visible self-check"),
             Case((np.full((1, 8), 5.0), g, b), {}, "visible constant", ref.layer_norm(np.full((1, 8), 5.0), g, b),
                  kind="a visible self-check")]
    for shape in [(7,), (4, 16), (2, 3, 5), (1, 1, 1, 6), (3, 2)]:
        C = shape[-1]
        x, g, b = rng.normal(1.0, 3.0, size=shape), rng.standard_normal(C), rng.standard_normal(C)
        cases.append(Case((x, g, b), {}, f"shape {shape}", ref.layer_norm(x, g, b), kind="another shape"))
    # eps matters when the variance is small; passed by keyword and by position.
    x, g, b = 1e-2 * rng.standard_normal((3, 8)), rng.standard_normal(8), rng.standard_normal(8)
    cases.append(Case((x, g, b), {"eps": 1e-3}, "eps=1e-3 keyword", ref.layer_norm(x, g, b, eps=1e-3),
                      kind="eps passed by keyword"))
    cases.append(Case((x, g, b, 1e-4), {}, "eps=1e-4 positional", ref.layer_norm(x, g, b, eps=1e-4),
                      kind="eps passed by position"))
    cases.append(Case((x, g, b), {}, "small variance, default eps", ref.layer_norm(x, g, b),
                      kind="small variance"))
    # Tokens far from the origin: the one-pass variance loses its digits.
    x = 1e6 + rng.standard_normal((4, 32))
    g, b = rng.standard_normal(32), rng.standard_normal(32)
    cases.append(Case((x, g, b), {}, "mean 1e6", ref.layer_norm(x, g, b), tol=1e-7,
                      kind="tokens far from the origin"))
    x32 = rng.standard_normal((3, 16)).astype(np.float32)
    cases.append(Case((x32, np.ones(16, np.float32), np.zeros(16, np.float32)), {}, "float32",
                      ref.layer_norm(x32.astype(np.float64), np.ones(16), np.zeros(16)), tol=1e-5,
                      kind="float32 input"))
    return cases


def feed_forward_cases(rng):
    x = np.array([[1.0, -2.0]])
    w_1, b_1 = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]), np.array([0.0, 0.0, 0.5])
    w_2, b_2 = np.ones((3, 2)), np.array([0.0, 1.0])
    cases = [Case((x, w_1, b_1, w_2, b_2), {}, "visible", ref.feed_forward(x, w_1, b_1, w_2, b_2),
                  kind="a visible self-check")]
    for shape, F in [((5,), 3), ((2, 4, 6), 24), ((3, 8), 1), ((1, 1, 1, 4), 9)]:
        C = shape[-1]
        args = (rng.standard_normal(shape), rng.standard_normal((C, F)), rng.standard_normal(F),
                rng.standard_normal((F, C)), rng.standard_normal(C))
        cases.append(Case(args, {}, f"shape {shape} F={F}", ref.feed_forward(*args),
                          kind="another shape and hidden width"))
    return cases


def encoder_block_cases(rng):
    vis = np.random.default_rng(1)
    params, x = _visible_params(vis, 8, 16), vis.standard_normal((2, 5, 8))
    valid = np.array([[True] * 5, [True] * 3 + [False] * 2])
    causal = np.tril(np.ones((5, 5), dtype=bool))
    cases = [Case((x, params, 2), {}, "visible", _block(x, params, 2), kind="a visible self-check"),
             Case((x, params, 2), {"mask": valid[:, None, None, :]}, "visible padding",
                  _block(x, params, 2, valid[:, None, None, :]), kind="a visible self-check"),
             Case((x, params, 2), {"mask": causal}, "visible causal", _block(x, params, 2, causal),
                  kind="a visible self-check")]
    for (B, L, C, H, F) in [(2, 6, 12, 3, 24), (1, 1, 4, 2, 8), (3, 4, 8, 1, 5), (2, 7, 8, 8, 16), (1, 5, 6, 2, 12)]:
        p, x = _params(rng, C, F), rng.standard_normal((B, L, C))
        cases.append(Case((x, p, H), {}, f"B={B} L={L} C={C} H={H}", _block(x, p, H),
                          kind="another shape, no mask"))
        causal = np.tril(np.ones((L, L), dtype=bool))
        cases.append(Case((x, p, H), {"mask": causal}, f"causal B={B} L={L} C={C} H={H}", _block(x, p, H, causal),
                          kind="another shape, causal mask"))
        lengths = rng.integers(1, L + 1, size=B)
        pad = (np.arange(L)[None, :] < lengths[:, None])[:, None, None, :]           # (B, 1, 1, L)
        cases.append(Case((x, p, H), {"mask": pad}, f"padding B={B} L={L} C={C} H={H}", _block(x, p, H, pad),
                          kind="another shape, padding mask"))
    # A per-head mask (B, H, L, L) with the diagonal always allowed, and large scores.
    p, x = _params(rng, 8, 16, scale=30.0), rng.standard_normal((2, 5, 8))
    m = (rng.random((2, 2, 5, 5)) < 0.5) | np.eye(5, dtype=bool)
    cases.append(Case((x, p, 2), {"mask": m}, "per-head mask, large scores", _block(x, p, 2, m), tol=1e-8,
                      kind="a mask per head, large scores"))
    return cases


def _loss_acc(logits, labels):
    logits = np.asarray(logits, dtype=np.float64)
    nll = -log_softmax(logits, axis=-1)[np.arange(len(labels)), labels]
    return float(nll.mean()), float(np.mean(np.argmax(logits, axis=-1) == labels))


def loss_check(case, out):
    assert isinstance(out, (tuple, list)) and len(out) == 2, "return the pair (loss, accuracy)"
    loss, acc = (float(np.asarray(v).reshape(())) for v in out)
    exp_loss, exp_acc = case.expected
    assert np.isfinite(loss), "the loss is not finite"
    assert abs(loss - exp_loss) <= case.tol * (1 + abs(exp_loss)), f"loss {loss} != {exp_loss}"
    assert abs(acc - exp_acc) <= 1e-12, f"accuracy {acc} != {exp_acc}"


def loss_cases(rng):
    cases = []
    for logits, labels, label in [
        (np.array([[2.0, 0.0], [0.0, 0.5], [1.0, 3.0]]), np.array([0, 1, 0]), "visible"),
        (np.array([[1e4, -1e4]]), np.array([1]), "visible extreme"),
    ]:
        cases.append(Case((logits, labels), {}, label, _loss_acc(logits, labels), kind="a visible self-check"))
    for N, K, scale in [(1, 2, 1.0), (10, 3, 2.0), (64, 10, 5.0), (7, 5, 0.1)]:
        logits, labels = scale * rng.standard_normal((N, K)), rng.integers(0, K, size=N)
        cases.append(Case((logits, labels), {}, f"N={N} K={K}", _loss_acc(logits, labels),
                          kind="random logits"))
    logits = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -9990.0], [5000.0, 4990.0, -3.0], [-800.0, 800.0, 0.0]])
    labels = np.array([1, 2, 0, 2])
    cases.append(Case((logits, labels), {}, "extreme logits", _loss_acc(logits, labels),
                      kind="logits of +-1e4"))
    logits32, labels = rng.standard_normal((20, 4)).astype(np.float32), rng.integers(0, 4, size=20)
    cases.append(Case((logits32, labels), {}, "float32", _loss_acc(logits32, labels), tol=1e-5,
                      kind="float32 input"))
    return cases


PARTS = [
    Part("test_layer_norm", function="layer_norm", cases=layer_norm_cases),
    Part("test_feed_forward", function="feed_forward", cases=feed_forward_cases),
    Part("test_encoder_block", function="encoder_block", cases=encoder_block_cases),
    Part("test_loss_and_accuracy", function="loss_and_accuracy", cases=loss_cases, check=loss_check),
]
