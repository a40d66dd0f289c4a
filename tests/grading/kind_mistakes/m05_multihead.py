"""Named mistakes for 05_multihead: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("05_multihead", "MHA without the row maximum", "test_mha_forward",
     {"mha_forward": ("    scores = scores - scores.max(axis=-1, keepdims=True)\n", "")}),
    ("05_multihead", "GQA without the row maximum", "test_gqa_forward",
     {"gqa_forward": ("p = np.exp(scores - scores.max(axis=-1, keepdims=True))", "p = np.exp(scores)")}),
    ("05_multihead", "heads scaled by sqrt(C / H)", "test_mha_forward",
     {"mha_forward": ("/ np.sqrt(q.shape[-1])", "/ np.sqrt(C / H)")}),
    ("05_multihead", "MHA weights not normalised", "test_mha_forward",
     {"mha_forward": ("    p /= p.sum(axis=-1, keepdims=True)\n", "")}),
    ("05_multihead", "MHA with the causal mask left out", "test_mha_forward",
     {"mha_forward": ("np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)", "scores")}),
    ("05_multihead", "an MHA central difference that steps the same way twice", "test_numerical_gradient",
     {"numerical_gradient": ("theta[i] = old + eps", "theta[i] = old - eps")}),
    ("05_multihead", "dx with the value term subtracted", "test_mha_backward",
     {"mha_backward": ("dx = dq @ w_q.T + dk @ w_k.T + dv @ w_v.T", "dx = dq @ w_q.T + dk @ w_k.T - dv @ w_v.T")}),
    ("05_multihead", "GQA weights normalised over the heads", "test_gqa_forward",
     {"gqa_forward": ("p /= p.sum(axis=-1, keepdims=True)", "p /= p.sum(axis=0, keepdims=True)")}),
    ("05_multihead", "a numerical gradient that drops causal", "test_numerical_gradient",
     {"numerical_gradient": ('args["w_o"], H, causal)', 'args["w_o"], H)')}),
    ("05_multihead", "heads split as (B, H, L, D) directly", "test_split_heads",
     {"split_heads": ("x.reshape(B, L, H, C // H).transpose(0, 2, 1, 3)", "x.reshape(B, H, L, C // H)")}),
    ("05_multihead", "heads merged without the transpose", "test_merge_heads",
     {"merge_heads": ("x.transpose(0, 2, 1, 3).reshape(B, L, H * D)", "x.reshape(B, L, H * D)")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {
    ("05_multihead", "test_split_heads"): {"another shape and head count", "float32 input"},
    ("05_multihead", "test_merge_heads"): {"another shape"},
    ("05_multihead", "test_mha_forward"): {
        "causal, one head", "causal, several heads, one token", "not causal, several heads",
        "not causal, several heads, one token",
    },
    ("05_multihead", "test_numerical_gradient"): {
        "a visible self-check", "gradient with respect to w_k", "gradient with respect to w_k, causal",
        "gradient with respect to w_o", "gradient with respect to w_o, causal",
        "gradient with respect to w_q", "gradient with respect to w_v",
        "gradient with respect to w_v, causal", "gradient with respect to x",
        "gradient with respect to x, causal",
    },
    ("05_multihead", "test_mha_backward"): {
        "causal, one head", "causal, several heads", "causal, several heads, one token",
        "head widths other than C / H", "not causal, one head", "not causal, several heads",
        "not causal, several heads, one token",
    },
    ("05_multihead", "test_gqa_forward"): {
        "causal, several heads, grouped key-value heads",
        "causal, several heads, one key-value head per head",
        "causal, several heads, one token, grouped key-value heads",
        "not causal, several heads, grouped key-value heads",
        "not causal, several heads, one key-value head per head",
        "not causal, several heads, one token, grouped key-value heads",
    },
}
