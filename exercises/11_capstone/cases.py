"""The cases of exercise 11 (capstone: a Transformer encoder block in NumPy): one generator per part,
for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code and tolerances
(``attngrade.spec``). Expected values come from ``attnmath`` in float64, computed before your
function runs; your function gets its own copies of the inputs.
"""

import numpy as np

import attnmath.encoder as ref
from attngrade.spec import Case, Part
from attngrade.visible import like
from attnmath.multihead import MultiHeadParams
from attnmath.softmax import log_softmax

ATTN_KEYS = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")

# ----------------------------------------------------------------------------- Part 1


def _ln(x, gamma, beta, eps=1e-5, ddof=0, eps_outside=False, one_pass=False):
    """Layer norm as a mistake computes it."""
    x = np.asarray(x, dtype=np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    if one_pass:
        var = (x**2).mean(axis=-1, keepdims=True) - mu**2
    else:
        var = ((x - mu) ** 2).sum(axis=-1, keepdims=True) / (x.shape[-1] - ddof)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.sqrt(var) + eps if eps_outside else np.sqrt(var + eps)
        return gamma * (x - mu) / scale + beta


def layer_norm_cases(rng):
    cases = []
    for shape in [(2, 3, 8), (7,), (4, 16), (2, 3, 5), (1, 1, 1, 6), (3, 2)]:
        C = shape[-1]
        x, g, b = rng.normal(1.0, 3.0, size=shape), rng.standard_normal(C), rng.standard_normal(C)
        cases.append(Case((x, g, b), {}, f"shape {shape}", ref.layer_norm(x, g, b), kind="another shape"))
    x, g, b = np.full((1, 8), rng.normal(0.0, 5.0)), rng.standard_normal(8), rng.standard_normal(8)
    cases.append(Case((x, g, b), {}, "constant token", ref.layer_norm(x, g, b), kind="a constant token"))
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


def diagnose_layer_norm(case, out):
    x, g, b = case.args[:3]
    eps = case.args[3] if len(case.args) > 3 else case.kwargs.get("eps", 1e-5)
    variants = [(dict(ddof=1), "use the biased variance: divide by C, not C - 1"),
                (dict(eps=0.0), "eps matters for tokens of small variance: divide by sqrt(var + eps)"),
                (dict(eps_outside=True), "eps goes inside the square root: sqrt(var + eps)"),
                (dict(one_pass=True), "E[x^2] - E[x]^2 loses every digit for tokens far from the origin: average "
                                      "(x - mu)^2 instead")]
    if case.kwargs or len(case.args) > 3:
        variants.append((dict(eps=1e-5), "use the eps you are given (the fourth argument, also by keyword)"))
    for change, words in variants:
        if like(out, _ln(x, g, b, **{"eps": eps, **change}), case.expected):
            return words
    if like(out, _ln(x, b, g, eps), case.expected):
        return "gamma scales and beta shifts: gamma * (x - mu) / sqrt(var + eps) + beta"
    return None


HINTS_LAYER_NORM = {
    "another shape": "normalise over the last axis (the features of one token), whatever the number of axes; the "
                     "output has the shape of x",
    "a constant token": "a constant token normalises to beta (no NaN: eps keeps the division finite)",
    "eps passed by keyword": "layer_norm(x, gamma, beta, eps=1e-3) must use that eps",
    "eps passed by position": "layer_norm(x, gamma, beta, 1e-4) must use that eps",
    "small variance": "tokens of variance 1e-4: eps matters here (divide by sqrt(var + eps))",
    "tokens far from the origin": "tokens of mean 1e6: E[x^2] - E[x]^2 loses every digit; average (x - mu)^2 instead",
    "float32 input": "float32 input: compute in at least float32 (never drop to float16)",
}

# ----------------------------------------------------------------------------- Part 2


def feed_forward_cases(rng):
    cases = []
    for shape, F, kind in [((2, 4, 6), 24, "a batch of tokens"), ((1, 2), 3, "a batch of tokens"),
                           ((5,), 3, "a single token"), ((3, 8), 1, "a hidden width of one"),
                           ((1, 1, 1, 4), 9, "leading axes of size one")]:
        C = shape[-1]
        args = (rng.standard_normal(shape), rng.standard_normal((C, F)), rng.standard_normal(F),
                rng.standard_normal((F, C)), rng.standard_normal(C))
        cases.append(Case(args, {}, f"shape {shape} F={F}", ref.feed_forward(*args), kind=kind))
    return cases


def diagnose_feed_forward(case, out):
    x, w_1, b_1, w_2, b_2 = case.args
    h = x @ w_1 + b_1
    for variant, words in [(np.abs(h) @ w_2 + b_2, "ReLU is max(0, h), not |h|"),
                           (h @ w_2 + b_2, "the ReLU is missing: max(0, x W_1 + b_1)"),
                           (np.maximum(h @ w_2 + b_2, 0.0), "the ReLU acts on the hidden layer, not on the output"),
                           (np.maximum(x @ w_1, 0.0) @ w_2 + b_2, "b_1 is added before the ReLU"),
                           (np.maximum(h, 0.0) @ w_2, "b_2 is missing")]:
        if like(out, variant, case.expected):
            return words
    return None


_FFN = "the biases are (F,) and (C,) vectors that broadcast"
HINTS_FEED_FORWARD = {
    "a batch of tokens": "keep the leading axes: the output has the input's shape; " + _FFN,
    "a single token": "a single token (C,) stays (C,); " + _FFN,
    "a hidden width of one": "with F = 1, W_1 is (C, 1) and W_2 is (1, C): no axis disappears; " + _FFN,
    "leading axes of size one": "keep every axis, even of size 1; " + _FFN,
}

# ----------------------------------------------------------------------------- Part 3


def _params(rng, C, F, scale=1.0):
    """A params dictionary as the notebook describes it, with every entry non-trivial."""
    p = {n: scale * rng.standard_normal((C, C)) / np.sqrt(C) for n in ("w_q", "w_k", "w_v", "w_o")}
    p.update({n: 0.1 * rng.standard_normal(C) for n in ("b_q", "b_k", "b_v", "b_o", "b_2", "ln1_beta", "ln2_beta")})
    p.update(w_1=rng.standard_normal((C, F)) / np.sqrt(C), b_1=0.1 * rng.standard_normal(F),
             w_2=rng.standard_normal((F, C)) / np.sqrt(F),
             ln1_gamma=1 + 0.1 * rng.standard_normal(C), ln2_gamma=1 + 0.1 * rng.standard_normal(C))
    return p


def _block(x, p, H, mask=None):
    params = ref.EncoderBlockParams(
        MultiHeadParams(*(p[k] for k in ATTN_KEYS)), p["w_1"], p["b_1"], p["w_2"], p["b_2"],
        p["ln1_gamma"], p["ln1_beta"], p["ln2_gamma"], p["ln2_beta"])
    return ref.encoder_block_forward(x, params, H, mask=mask)


def _padding(rng, B, L):
    """A (B, 1, 1, L) padding mask with lengths in [1, L], one sequence padded where L > 1."""
    lengths = rng.integers(1, L + 1, size=B)
    if L > 1:
        lengths[rng.integers(0, B)] = rng.integers(1, L)
    return (np.arange(L)[None, :] < lengths[:, None])[:, None, None, :]


def encoder_block_cases(rng):
    cases = []
    for (B, L, C, H, F) in [(2, 5, 8, 2, 16), (2, 3, 8, 4, 12), (2, 6, 12, 3, 24), (1, 1, 4, 2, 8), (3, 4, 8, 1, 5),
                            (2, 7, 8, 8, 16), (1, 5, 6, 2, 12)]:
        p, x = _params(rng, C, F), rng.standard_normal((B, L, C))
        cases.append(Case((x, p, H), {}, f"B={B} L={L} C={C} H={H}", _block(x, p, H),
                          kind="another shape, no mask"))
        causal = np.tril(np.ones((L, L), dtype=bool))
        cases.append(Case((x, p, H), {"mask": causal}, f"causal B={B} L={L} C={C} H={H}", _block(x, p, H, causal),
                          kind="another shape, causal mask"))
        pad = _padding(rng, B, L)
        cases.append(Case((x, p, H), {"mask": pad}, f"padding B={B} L={L} C={C} H={H}", _block(x, p, H, pad),
                          kind="another shape, padding mask"))
    # A per-head mask (B, H, L, L) with the diagonal always allowed, and large scores.
    p, x = _params(rng, 8, 16, scale=30.0), rng.standard_normal((2, 5, 8))
    m = (rng.random((2, 2, 5, 5)) < 0.5) | np.eye(5, dtype=bool)
    cases.append(Case((x, p, 2), {"mask": m}, "per-head mask, large scores", _block(x, p, 2, m), tol=1e-8,
                      kind="a mask per head, large scores"))
    return cases


def _block_variant(x, p, H, mask=None, scale_by_C=False, mask_after=False, final_ln=True, split_rows=False):
    """The encoder block as a mistake computes it."""
    B, L, C = x.shape
    D = C // H

    def heads(w, b):
        y = x @ p[w] + p[b]
        return y.reshape(B, H, L, D) if split_rows else y.reshape(B, L, H, D).transpose(0, 2, 1, 3)

    q, k, v = heads("w_q", "b_q"), heads("w_k", "b_k"), heads("w_v", "b_v")
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(C if scale_by_C else D)
    if mask is not None and not mask_after:
        scores = np.where(mask, scores, -np.inf)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    if mask is not None and mask_after:
        w = np.where(mask, w, 0.0)
    attn = (w @ v).transpose(0, 2, 1, 3).reshape(B, L, C) @ p["w_o"] + p["b_o"]
    y = _ln(x + attn, p["ln1_gamma"], p["ln1_beta"])
    out = y + np.maximum(y @ p["w_1"] + p["b_1"], 0.0) @ p["w_2"] + p["b_2"]
    return _ln(out, p["ln2_gamma"], p["ln2_beta"]) if final_ln else out


def diagnose_encoder_block(case, out):
    x, p, H = case.args
    mask = case.kwargs.get("mask")
    variants = [(dict(final_ln=False), "post-norm: the block ends with LN_2(Y + FFN(Y))"),
                (dict(scale_by_C=True), "each head has D = C / H features: scale the scores by 1/sqrt(C / H), "
                                        "not 1/sqrt(C)"),
                (dict(split_rows=True), "head h owns the columns hD:(h+1)D: reshape to (B, L, H, D), then move the "
                                        "head axis forward")]
    if mask is not None:
        variants += [(dict(mask_after=True), "mask the scores before the softmax, so each row's weights sum to one"),
                     (dict(mask=None), "the mask is not applied: masked keys get weight zero")]
    with np.errstate(all="ignore"):
        for change, words in variants:
            if like(out, _block_variant(x, p, H, **{"mask": mask, **change}), case.expected):
                return words
    return None


HINTS_ENCODER_BLOCK = {
    "another shape, no mask": "each of the H heads has C / H features, scaled by 1/sqrt(C / H); post-norm: "
                              "LN_1(x + MHA(x)), then LN_2(Y + FFN(Y))",
    "another shape, causal mask": "mask the scores before the softmax (np.where(mask, scores, -np.inf)), so each "
                                  "row's weights sum to one",
    "another shape, padding mask": "a (B, 1, 1, L) padding mask broadcasts over heads and queries: the real tokens "
                                   "come out as if the padding were cut off",
    "a mask per head, large scores": "NaN or inf for large scores with a (B, H, L, L) mask: subtract each row's "
                                     "maximum (over the keys) before exp",
}

# ----------------------------------------------------------------------------- Part 4


def _loss_acc(logits, labels):
    logits = np.asarray(logits, dtype=np.float64)
    nll = -log_softmax(logits, axis=-1)[np.arange(len(labels)), labels]
    return float(nll.mean()), float(np.mean(np.argmax(logits, axis=-1) == labels))


def loss_check(case, out):
    """The pair (loss, accuracy) of Python floats, as the task asks (NumPy floats are floats)."""
    assert isinstance(out, (tuple, list)) and len(out) == 2, "return the pair (loss, accuracy)"
    for name, value in zip(("loss", "accuracy"), out):
        assert isinstance(value, float), f"the {name} must be a Python float (float(...)), not {type(value).__name__}"
    loss, acc = out
    exp_loss, exp_acc = case.expected
    assert np.isfinite(loss), "the loss is not finite"
    assert abs(loss - exp_loss) <= case.tol * (1 + abs(exp_loss)), f"loss {loss} != {exp_loss}"
    assert abs(acc - exp_acc) <= 1e-12, f"accuracy {acc} != {exp_acc}"


def loss_cases(rng):
    cases = []
    for N, K, scale in [(3, 2, 2.0), (1, 2, 1.0), (2, 3, 1.5), (10, 3, 2.0), (64, 10, 5.0), (7, 5, 0.1)]:
        logits, labels = scale * rng.standard_normal((N, K)), rng.integers(0, K, size=N)
        cases.append(Case((logits, labels), {}, f"N={N} K={K}", _loss_acc(logits, labels),
                          kind="random logits"))
    # Columns in a random order, labels moved with them: the softmax of a label's class underflows.
    perm = rng.permutation(3)
    logits = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -9990.0], [5000.0, 4990.0, -3.0], [-800.0, 800.0, 0.0]])[:, perm]
    labels = np.argsort(perm)[np.array([1, 2, 0, 2])]
    cases.append(Case((logits, labels), {}, "extreme logits", _loss_acc(logits, labels),
                      kind="logits of +-1e4"))
    sign = rng.choice([-1.0, 1.0])
    logits, labels = np.array([[sign * 1e4, -sign * 1e4]]), np.array([1 if sign > 0 else 0])
    cases.append(Case((logits, labels), {}, "two classes of +-1e4, the label's underflows", _loss_acc(logits, labels),
                      kind="logits of +-1e4"))
    logits32, labels = rng.standard_normal((20, 4)).astype(np.float32), rng.integers(0, 4, size=20)
    cases.append(Case((logits32, labels), {}, "float32", _loss_acc(logits32, labels), tol=1e-5,
                      kind="float32 input"))
    return cases


def diagnose_loss(case, out):
    logits, labels = case.args
    if not (isinstance(out, (tuple, list)) and len(out) == 2) or np.ndim(out[0]) != 0:
        return None
    if not all(isinstance(v, float) for v in out):
        return "the task asks for Python floats: return float(loss), float(accuracy)"
    loss, N = case.expected[0], len(labels)
    for variant, words in [(-loss, "the loss is the negative log-likelihood: check the sign"),
                           (N * loss, "the loss is the mean over the examples, not the sum")]:
        if like(out[0], variant, loss):
            return words
    return None


HINTS_LOSS = {
    "random logits": "the loss is the mean of -log softmax(logits)[label] over the examples, the log-sum-exp running "
                     "over every class; the accuracy is the fraction whose largest logit is at the label",
    "logits of +-1e4": "overflow or log(0): use a stable log-sum-exp (subtract the row maximum) and never take the "
                       "log of a probability",
    "float32 input": "float32 logits: compute in at least float32 (never drop to float16)",
}

PARTS = [
    Part("test_layer_norm", function="layer_norm", cases=layer_norm_cases, hints=HINTS_LAYER_NORM,
         diagnose=diagnose_layer_norm),
    Part("test_feed_forward", function="feed_forward", cases=feed_forward_cases, hints=HINTS_FEED_FORWARD,
         diagnose=diagnose_feed_forward),
    Part("test_encoder_block", function="encoder_block", cases=encoder_block_cases, hints=HINTS_ENCODER_BLOCK,
         diagnose=diagnose_encoder_block),
    Part("test_loss_and_accuracy", function="loss_and_accuracy", cases=loss_cases, check=loss_check,
         outputs=("loss", "accuracy"), hints=HINTS_LOSS, diagnose=diagnose_loss),
]
