"""Named mistakes for 02_attention: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    # The (n, n) matrix up to the hidden memory case's n = 4000 (the visible memory check has n = 2000):
    # both see the mistake. The visible check's sample of n = 20000 (a statistic the mistake gets
    # right either way) gets the row-wise products instead of two 3.2 GB matrices.
    ("02_attention", "dot products from the (n, n) matrix", "test_dot_product_stats",
     {"dot_product_stats": ('dots = np.einsum("nd,nd->n", q, k)',
                            'dots = np.diag(q @ k.T) if len(q) <= 4000 else np.einsum("nd,nd->n", q, k)')}),
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
    ("02_attention", "attention with its output squeezed", "test_attention",
     {"attention": ("return weights @ v ", "return np.squeeze(weights @ v) ")}),
    ("02_attention", "a mask applied by boolean indexing", "test_attention",
     {"attention": ("scores = np.where(mask, scores, -np.inf)", "scores[~mask] = -np.inf")}),
    ("02_attention", "float32 attention computed in float16", "test_attention",
     {"attention": ("D = q.shape[-1]", "D = q.shape[-1]\n    if q.dtype != np.float64:\n"
                    "        q, k, v = (np.asarray(x, dtype=np.float16) for x in (q, k, v))")}),
    ("02_attention", "the row maximum taken before masking", "test_attention",
     {"attention": [("    if mask is not None:\n        scores = np.where(mask, scores, -np.inf)\n", ""),
                    ("row_max = np.max(scores, axis=-1, keepdims=True)\n",
                     "row_max = np.max(scores, axis=-1, keepdims=True)\n    if mask is not None:\n"
                     "        scores = np.where(mask, scores, -np.inf)\n")]}),
    ("02_attention", "a variance that does not subtract the mean", "test_dot_product_stats",
     {"dot_product_stats": ("var = float(np.var(dots, ddof=1))", "var = float(np.sum(dots**2) / (len(dots) - 1))")}),
    ("02_attention", "statistics returned as an array", "test_dot_product_stats",
     {"dot_product_stats": ("return float(np.mean(dots)), var, var / q.shape[-1]",
                            "return np.array([np.mean(dots), var, var / q.shape[-1]])")}),
    ("02_attention", "entropy rows squeezed", "test_row_entropy",
     {"row_entropy": ("positive = p > 0", "p = np.squeeze(p)\n    positive = p > 0")}),
    ("02_attention", "entropy without 0 log 0 = 0", "test_row_entropy",
     {"row_entropy": ("return -np.sum(np.where(positive, p * logs, 0.0), axis=-1)", "return -np.sum(p * np.log(p), axis=-1)")}),
    ("02_attention", "entropy rows renormalised", "test_row_entropy",
     {"row_entropy": ("positive = p > 0", "p = p / np.maximum(np.sum(p, axis=-1, keepdims=True), 1e-300)\n    positive = p > 0")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
