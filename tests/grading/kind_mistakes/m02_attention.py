"""Named mistakes for 02_attention: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("02_attention", "dot products from the (n, n) matrix", "test_dot_product_stats",
     {"dot_product_stats": ('dots = np.einsum("nd,nd->n", q, k)', "dots = np.diag(q @ k.T)")}),
    ("02_attention", "attention dividing by a zero total", "test_attention",
     {"attention": ("weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)", "weights = e / total")}),
    ("02_attention", "attention that special-cases an all-False mask only", "test_attention",
     {"attention": [("weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)", "weights = e / total"),
                    ("D = q.shape[-1]", "D = q.shape[-1]\n    if mask is not None and not np.any(mask):\n"
                     "        return np.zeros(q.shape[:-1] + v.shape[-1:])")]}),
    ("02_attention", "attention without the row maximum", "test_attention",
     {"attention": ("e = np.exp(scores - row_max)", "e = np.exp(scores)")}),
    ("02_attention", "additive scores for 2-D inputs only", "test_additive_scores",
     {"additive_scores": ("np.tanh(hq[..., :, None, :] + hk[..., None, :, :])", "np.tanh(hq[:, None, :] + hk[None, :, :])")}),
    ("02_attention", "additive scores subtracting the key term", "test_additive_scores",
     {"additive_scores": ("hidden = np.tanh(hq[..., :, None, :] + hk[..., None, :, :])", "hidden = np.tanh(hq[..., :, None, :] - hk[..., None, :, :])")}),
    ("02_attention", "a scaled variance multiplied by D", "test_dot_product_stats",
     {"dot_product_stats": ("return float(np.mean(dots)), var, var / q.shape[-1]", "return float(np.mean(dots)), var, var * q.shape[-1]")}),
    ("02_attention", "entropies summed over the queries", "test_row_entropy",
     {"row_entropy": ("return -np.sum(np.where(positive, p * logs, 0.0), axis=-1)", "return -np.sum(np.where(positive, p * logs, 0.0), axis=0)")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {
    ("02_attention", "test_attention"): {
        "another shape, no mask", "another shape, with a mask", "float32 input",
        "scores in the thousands, with a mask",
    },
    ("02_attention", "test_dot_product_stats"): {"random vectors", "vectors with a nonzero mean"},
    ("02_attention", "test_row_entropy"): {
        "a single key", "masked rows and keys", "softmax rows of another shape",
    },
}
