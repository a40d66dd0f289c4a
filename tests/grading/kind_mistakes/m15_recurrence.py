"""Named mistakes for 15_recurrence: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("15_recurrence", "a decay mask with its upper triangle kept", "test_decay_mask",
     {"decay_mask": ("return np.where(np.tri(L, L, dtype=bool), np.exp(sums), 0.0)", "return np.exp(sums)")}),
    ("15_recurrence", "a decay mask as a ratio of products", "test_decay_mask",
     {"decay_mask": ("return np.where(np.tri(L, L, dtype=bool), np.exp(sums), 0.0)",
                     "b = np.cumprod(np.exp(log_alpha))\n    return np.tril(b[:, None] / b[None, :])")}),
    ("15_recurrence", "a state decayed after its write", "test_ssd_recurrent",
     {"ssd_recurrent": ("S = np.exp(log_alpha[t]) * S + np.outer(k[t], v[t])",
                        "S = np.exp(log_alpha[t]) * (S + np.outer(k[t], v[t]))")}),
    ("15_recurrence", "a recurrence without the score scale", "test_ssd_recurrent",
     {"ssd_recurrent": ("out[t] = S.T @ q[t] / math.sqrt(D)", "out[t] = S.T @ q[t]")}),
    ("15_recurrence", "chunks that do not read the carried state", "test_ssd_chunked",
     {"ssd_chunked": (" + np.exp(cs)[:, None] * (qs @ S)", "")}),
    ("15_recurrence", "a carried state not decayed over its chunk", "test_ssd_chunked",
     {"ssd_chunked": ("S = np.exp(cs[-1]) * S + ", "S = S + ")}),
    ("15_recurrence", "the short last chunk dropped", "test_ssd_chunked",
     {"ssd_chunked": ("for a in range(0, L, chunk_size):", "for a in range(0, L - L % chunk_size, chunk_size):")}),
    ("15_recurrence", "chunks cut from a whole-sequence mask", "test_ssd_chunked",
     {"ssd_chunked": [("    for a in range(0, L, chunk_size):",
                       "    cs_all = np.cumsum(log_alpha)\n"
                       "    G_all = np.tril(np.exp(cs_all[:, None] - cs_all[None, :]))  # (L, L)\n"
                       "    for a in range(0, L, chunk_size):"),
                      ("G = np.tril(np.exp(cs[:, None] - cs[None, :]))", "G = G_all[a:e, a:e]")]}),
    ("15_recurrence", "a delta-rule error read before the decay", "test_delta_rule",
     {"delta_rule": ("S = np.exp(log_alpha[t]) * S\n        S = S + beta[t] * np.outer(k[t], v[t] - S.T @ k[t])",
                     "S = np.exp(log_alpha[t]) * S + beta[t] * np.outer(k[t], v[t] - S.T @ k[t])")}),
    ("15_recurrence", "a delta rule that writes the value, not the error", "test_delta_rule",
     {"delta_rule": ("np.outer(k[t], v[t] - S.T @ k[t])", "np.outer(k[t], v[t])")}),
    ("15_recurrence", "T taken as I - A", "test_wy_representation",
     {"wy_representation": ("T[i, :i] = -A[i, :i] @ T[:i, :i]", "T[i, :i] = -A[i, :i]")}),
    ("15_recurrence", "W and U without the step sizes", "test_wy_representation",
     {"wy_representation": ("return T @ (beta[:, None] * k), T @ (beta[:, None] * v)", "return T @ k, T @ v")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
