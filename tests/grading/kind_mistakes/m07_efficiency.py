"""Named mistakes for 07_efficiency: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("07_efficiency", "chunked attention in one chunk", "test_chunked_attention",
     {"chunked_attention": ("scale = 1.0 / np.sqrt(D)", "scale = 1.0 / np.sqrt(D)\n    chunk_size = L")}),
    ("07_efficiency", "chunked attention with an (L, S) bias", "test_chunked_attention",
     {"chunked_attention": [("scale = 1.0 / np.sqrt(D)",
                             "scale = 1.0 / np.sqrt(D)\n    bias = None if mask is None else np.where(mask, 0.0, -np.inf)"),
                            ("scores = np.where(mask[i0:i1], scores, -np.inf)", "scores = scores + bias[i0:i1]")]}),
    ("07_efficiency", "linear attention through the (L, S) kernel", "test_linear_attention",
     {"linear_attention": ("numerator = phi_q @ kv", "numerator = (phi_q @ np.swapaxes(phi_k, -1, -2)) @ v")}),
    ("07_efficiency", "causal linear attention through the masked (L, L) kernel", "test_causal_linear_attention",
     {"causal_linear_attention": ("phi_q, phi_k, v = phi(q), phi(k), np.asarray(v)",
                                  "phi_q, phi_k, v = phi(q), phi(k), np.asarray(v)\n"
                                  "    A = np.tril(phi_q @ np.swapaxes(phi_k, -1, -2))\n"
                                  "    return (A / A.sum(axis=-1, keepdims=True)) @ v")}),
    ("07_efficiency", "chunked attention without the row maximum", "test_chunked_attention",
     {"chunked_attention": ("weights = np.exp(scores - m)", "weights = np.exp(scores)")}),
    ("07_efficiency", "a decode step without the maximum", "test_decode_step_window",
     {"decode_step_window": ("weights = np.exp(scores - np.max(scores, axis=-1, keepdims=True))",
                             "weights = np.exp(scores)")}),
    ("07_efficiency", "chunked attention with k.T", "test_chunked_attention",
     {"chunked_attention": ("k_t = np.swapaxes(k, -1, -2)", "k_t = k.T")}),
    ("07_efficiency", "linear attention with phi(k).T", "test_linear_attention",
     {"linear_attention": ("kv = np.swapaxes(phi_k, -1, -2) @ v", "kv = phi_k.T @ v")}),
    ("07_efficiency", "a causal linear state without leading axes", "test_causal_linear_attention",
     {"causal_linear_attention": ("state = np.zeros(phi_q.shape[:-2] + (D_phi, D_v))", "state = np.zeros((D_phi, D_v))")}),
    ("07_efficiency", "a decode step with k.T", "test_decode_step_window",
     {"decode_step_window": ("np.swapaxes(k, -1, -2)", "k.T")}),
    ("07_efficiency", "chunked attention without the scale", "test_chunked_attention",
     {"chunked_attention": ("scale = 1.0 / np.sqrt(D)", "scale = 1.0")}),
    ("07_efficiency", "linear attention without the denominator", "test_linear_attention",
     {"linear_attention": ("return numerator / denominator", "return numerator")}),
    ("07_efficiency", "causal linear attention without the denominator", "test_causal_linear_attention",
     {"causal_linear_attention": ("out[..., t, :] = numerator / denominator[..., None]", "out[..., t, :] = numerator")}),
    ("07_efficiency", "a decode step with unnormalised weights", "test_decode_step_window",
     {"decode_step_window": ("(weights / np.sum(weights, axis=-1, keepdims=True)) @ v", "weights @ v")}),
    ("07_efficiency", "chunked attention without the guard for fully masked rows", "test_chunked_attention",
     {"chunked_attention": ("m = np.where(np.isfinite(m), m, 0.0)", "m = m")}),
    ("07_efficiency", "phi chosen by multiplying with the comparisons", "test_linear_attention",
     {"linear_attention": ("return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))",
                           "return (x > 0) * (x + 1.0) + (x <= 0) * np.exp(x)")}),
    ("07_efficiency", "a cost table squeezed to one row", "test_attention_costs",
     {"attention_costs": ("np.array(rows, dtype=np.int64).reshape(len(ns), 3)", "np.array(rows, dtype=np.int64).squeeze()")}),
    ("07_efficiency", "float32 chunked attention computed in float16", "test_chunked_attention",
     {"chunked_attention": ("    L, D = q.shape[-2], q.shape[-1]\n",
                            "    if q.dtype != np.float64:\n        q, k, v = (a.astype(np.float16) for a in (q, k, v))\n"
                            "    L, D = q.shape[-2], q.shape[-1]\n")}),
    ("07_efficiency", "float32 linear attention computed in float16", "test_linear_attention",
     {"linear_attention": ("    phi_q, phi_k = phi(q), phi(k)",
                           "    if np.asarray(q).dtype != np.float64:\n"
                           "        q, k, v = (np.asarray(a, dtype=np.float16) for a in (q, k, v))\n"
                           "    phi_q, phi_k = phi(q), phi(k)")}),
    ("07_efficiency", "float32 causal linear attention computed in float16", "test_causal_linear_attention",
     {"causal_linear_attention": ("    phi_q, phi_k, v = phi(q), phi(k), np.asarray(v)",
                                  "    if np.asarray(q).dtype != np.float64:\n"
                                  "        q, k, v = (np.asarray(a, dtype=np.float16) for a in (q, k, v))\n"
                                  "    phi_q, phi_k, v = phi(q), phi(k), np.asarray(v)")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
