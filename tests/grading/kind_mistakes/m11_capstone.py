"""Named mistakes for 11_capstone: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("11_capstone", "layer norm without eps", "test_layer_norm",
     {"layer_norm": ("np.sqrt(var + eps)", "np.sqrt(var)")}),
    ("11_capstone", "layer norm with eps outside the square root", "test_layer_norm",
     {"layer_norm": ("np.sqrt(var + eps)", "(np.sqrt(var) + eps)")}),
    ("11_capstone", "layer norm whose eps is called epsilon", "test_layer_norm",
     {"layer_norm": [("def layer_norm(x, gamma, beta, eps=1e-5):", "def layer_norm(x, gamma, beta, epsilon=1e-5):"),
                     ("np.sqrt(var + eps)", "np.sqrt(var + epsilon)")]}),
    ("11_capstone", "layer norm with a keyword-only eps", "test_layer_norm",
     {"layer_norm": ("def layer_norm(x, gamma, beta, eps=1e-5):", "def layer_norm(x, gamma, beta, *, eps=1e-5):")}),
    ("11_capstone", "layer norm with the one-pass variance", "test_layer_norm",
     {"layer_norm": ("var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)",
                     "var = (x ** 2).mean(axis=-1, keepdims=True) - mu ** 2")}),
    ("11_capstone", "a loss without the log-sum-exp shift", "test_loss_and_accuracy",
     {"loss_and_accuracy": ("m = z.max(axis=-1, keepdims=True)", "m = np.zeros_like(z[:, :1])")}),
    ("11_capstone", "a feed-forward layer with |x| for ReLU", "test_feed_forward",
     {"feed_forward": ("np.maximum(x @ w_1 + b_1, 0.0)", "np.abs(x @ w_1 + b_1)")}),
    ("11_capstone", "an encoder block shifting scores by the maximum over the batch", "test_encoder_block",
     {"encoder_block": ("p = np.exp(scores - scores.max(axis=-1, keepdims=True))",
                        "p = np.exp(scores - scores.max(axis=0, keepdims=True))")}),
    ("11_capstone", "layer norm with gamma and beta as (1, C) rows", "test_layer_norm",
     {"layer_norm": ("return gamma * (x - mu) / np.sqrt(var + eps) + beta",
                     "return gamma.reshape(1, -1) * (x - mu) / np.sqrt(var + eps) + beta.reshape(1, -1)")}),
    ("11_capstone", "attention weights without the row maximum", "test_encoder_block",
     {"encoder_block": ("p = np.exp(scores - scores.max(axis=-1, keepdims=True))", "p = np.exp(scores)")}),
    ("11_capstone", "a two-class loss", "test_loss_and_accuracy",
     {"loss_and_accuracy": ("loss = float(np.mean(lse - picked))",
                            "other = z[np.arange(len(z)), 1 - labels]\n    loss = float(np.mean(np.logaddexp(0.0, other - picked)))")}),
    ("11_capstone", "a hidden bias as a (1, F) row", "test_feed_forward",
     {"feed_forward": ("np.maximum(x @ w_1 + b_1, 0.0)", "np.maximum(x @ w_1 + b_1.reshape(1, -1), 0.0)")}),
    ("11_capstone", "scores scaled by 1/sqrt(C)", "test_encoder_block",
     {"encoder_block": ("scores = q @ k.swapaxes(-1, -2) / np.sqrt(D)", "scores = q @ k.swapaxes(-1, -2) / np.sqrt(C)")}),
    ("11_capstone", "the mask applied to the weights after the softmax", "test_encoder_block",
     {"encoder_block": ("    if mask is not None:\n        scores = np.where(mask, scores, -np.inf)\n"
                        "    p = np.exp(scores - scores.max(axis=-1, keepdims=True))\n    p /= p.sum(axis=-1, keepdims=True)\n",
                        "    p = np.exp(scores - scores.max(axis=-1, keepdims=True))\n    p /= p.sum(axis=-1, keepdims=True)\n"
                        "    if mask is not None:\n        p = np.where(mask, p, 0.0)\n")}),
    ("11_capstone", "a block without the final layer norm", "test_encoder_block",
     {"encoder_block": ('return layer_norm(y + ffn, params["ln2_gamma"], params["ln2_beta"])', "return y + ffn")}),
    ("11_capstone", "a float32 layer norm computed in float16", "test_layer_norm",
     {"layer_norm": ("    mu = x.mean(axis=-1, keepdims=True)\n",
                     "    if x.dtype != np.float64:\n        x = x.astype(np.float16)\n    mu = x.mean(axis=-1, keepdims=True)\n")}),
    ("11_capstone", "float32 logits computed in float16", "test_loss_and_accuracy",
     {"loss_and_accuracy": ("    z = np.asarray(logits, dtype=np.float64)\n",
                            "    z = np.asarray(logits)\n    if z.dtype != np.float64:\n        z = z.astype(np.float16)\n")}),
    ("11_capstone", "loss and accuracy as 0-d arrays", "test_loss_and_accuracy",
     {"loss_and_accuracy": ("return loss, accuracy", "return np.array(loss), np.array(accuracy)")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
