"""Named mistakes for 03_gradients: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("03_gradients", "a central difference that steps the same way twice", "test_numerical_attention_gradient",
     {"numerical_attention_gradient": ("x[idx] = old + eps", "x[idx] = old - eps")}),
    ("03_gradients", "dropout scaled by 1/p instead of 1/(1 - p)", "test_dropout_attention_backward",
     {"dropout_attention_backward": ("factor = keep / (1.0 - p)", "factor = keep / p")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {
    ("03_gradients", "test_attention_backward"): {"another shape", "nearly one-hot attention rows"},
    ("03_gradients", "test_masked_attention_backward"): {
        "a mask that masks nothing", "causal mask", "every key masked",
        "large scores, a fully masked row and key", "random mask",
    },
    ("03_gradients", "test_numerical_attention_gradient"): {
        "eps passed by keyword", "gradient with respect to k", "gradient with respect to q",
        "gradient with respect to v",
    },
    ("03_gradients", "test_dropout_attention_backward"): {"a fully dropped row", "dropout rate zero"},
}
