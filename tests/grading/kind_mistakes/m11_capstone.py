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
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {
    ("11_capstone", "test_layer_norm"): {"another shape", "float32 input"},
    ("11_capstone", "test_feed_forward"): {"another shape and hidden width"},
    ("11_capstone", "test_encoder_block"): {
        "a mask per head, large scores", "another shape, causal mask", "another shape, no mask",
        "another shape, padding mask",
    },
    ("11_capstone", "test_loss_and_accuracy"): {"float32 input", "random logits"},
}
