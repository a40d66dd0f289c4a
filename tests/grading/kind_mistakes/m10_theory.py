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
    ("10_theory", "a smoother falling back to the nearest key", "test_gaussian_smoother",
     {"gaussian_smoother": ("    logk = logk - logk.max(axis=1, keepdims=True)\n    w = np.exp(logk)\n"
                            "    return (w / w.sum(axis=1, keepdims=True)) @ y\n",
                            "    w = np.exp(logk)\n    total = w.sum(axis=1, keepdims=True)\n"
                            "    nearest = (np.arange(w.shape[1]) == logk.argmax(axis=1)[:, None]).astype(float)\n"
                            "    return np.where(total > 0, w / np.where(total > 0, total, 1.0), nearest) @ y\n")}),
    ("10_theory", "a smoother that leaves out the query's own key", "test_gaussian_smoother",
     {"gaussian_smoother": ("logk = -np.sum(diff * diff, axis=-1) / (2.0 * bandwidth**2)",
                            "d2 = np.sum(diff * diff, axis=-1)\n"
                            "    logk = -np.where(d2 == 0, np.inf, d2) / (2.0 * bandwidth**2)")}),
    ("10_theory", "an equivariance gap with k.T", "test_equivariance_gap",
     {"equivariance_gap": ("q @ np.swapaxes(k, -1, -2)", "q @ k.T")}),
    ("10_theory", "a mask applied by boolean indexing", "test_equivariance_gap",
     {"equivariance_gap": ("scores = np.where(mask, scores, -np.inf)", "scores[~mask] = -np.inf")}),
    ("10_theory", "heads concatenated over S rows", "test_multi_head_rank",
     {"multi_head_rank": (".reshape(L, H * D_v)", ".reshape(probs.shape[-1], H * D_v)")}),
    ("10_theory", "the rank bound instead of the rank", "test_multi_head_rank",
     {"multi_head_rank": ("return int(np.linalg.matrix_rank(concat @ w_o))", "return int(min(L, H * D_v, w_o.shape[1]))")}),
    ("10_theory", "heads stacked along the tokens", "test_multi_head_rank",
     {"multi_head_rank": ("return int(np.linalg.matrix_rank(concat @ w_o))",
                          "return int(np.linalg.matrix_rank(np.concatenate(heads, axis=0)))")}),
    ("10_theory", "any mask taken as the causal one", "test_equivariance_gap",
     {"equivariance_gap": ("scores = np.where(mask, scores, -np.inf)",
                           "scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -np.inf)")}),
    ("10_theory", "a mask forced to the shape (L, S)", "test_equivariance_gap",
     {"equivariance_gap": ("scores = np.where(mask, scores, -np.inf)",
                           "scores = np.where(np.reshape(mask, scores.shape[-2:]), scores, -np.inf)")}),
    ("10_theory", "predictions squeezed", "test_icl_prediction",
     {"icl_prediction": ("return out[N:, d]", "return out[N:, d:].squeeze()")}),
    ("10_theory", "linear attention scaled by 1/sqrt(C)", "test_linear_self_attention",
     {"linear_self_attention": ("scores = queries @ keys.T", "scores = queries @ keys.T / np.sqrt(z.shape[1])")}),
    ("10_theory", "a causal linear attention", "test_linear_self_attention",
     {"linear_self_attention": ("scores = queries @ keys.T", "scores = np.tril(queries @ keys.T)")}),
    ("10_theory", "a rank as a float", "test_multi_head_rank",
     {"multi_head_rank": ("return int(np.linalg.matrix_rank(concat @ w_o))",
                          "return float(np.linalg.matrix_rank(concat @ w_o))")}),
    ("10_theory", "an equivariance gap as a 0-d array", "test_equivariance_gap",
     {"equivariance_gap": ("return float(np.max(", "return np.array(np.max(")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
