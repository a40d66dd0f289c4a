"""Named mistakes for 10_theory: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("10_theory", "an equivariance gap without the row maximum", "test_equivariance_gap",
     {"equivariance_gap": ("        scores = scores - scores.max(axis=-1, keepdims=True)\n", "")}),
    ("10_theory", "a smoother without the log-kernel shift", "test_gaussian_smoother",
     {"gaussian_smoother": ("    logk = logk - logk.max(axis=1, keepdims=True)\n", "")}),
    ("10_theory", "a smoother that reads the first coordinate only", "test_gaussian_smoother",
     {"gaussian_smoother": ("np.sum(diff * diff, axis=-1)", "(diff * diff)[..., 0]")}),
    ("10_theory", "the rank before W_O", "test_multi_head_rank",
     {"multi_head_rank": ("np.linalg.matrix_rank(concat @ w_o)", "np.linalg.matrix_rank(concat)")}),
    ("10_theory", "an equivariance gap against the unpermuted output", "test_equivariance_gap",
     {"equivariance_gap": ("out_perm - out[..., perm, :]", "out_perm - out")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {
    ("10_theory", "test_gaussian_smoother"): {"queries on the keys", "two equidistant nearest keys"},
    ("10_theory", "test_linear_self_attention"): {"another shape", "the gradient-descent construction"},
    ("10_theory", "test_icl_prediction"): {"another shape"},
    ("10_theory", "test_equivariance_gap"): {
        "another shape, causal", "another shape, no mask", "band mask", "padding mask",
    },
    ("10_theory", "test_multi_head_rank"): {"a visible self-check", "another shape", "rank-one values"},
}
