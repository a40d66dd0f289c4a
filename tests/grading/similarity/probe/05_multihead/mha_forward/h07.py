# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    B, L, C = x.shape
    def heads(w):
        # (B, L, H*d) -> (B, H, L, d)
        return np.moveaxis((x @ w).reshape(B, L, H, -1), 2, 1)
    q, k, v = heads(w_q), heads(w_k), heads(w_v)
    logits = np.matmul(q, np.moveaxis(k, -1, -2)) * (1.0 / np.sqrt(q.shape[-1]))
    if causal:
        logits[..., ~np.tril(np.ones((L, L), dtype=bool))] = -np.inf
    logits -= np.max(logits, axis=-1, keepdims=True)
    probs = np.exp(logits)
    probs /= np.sum(probs, axis=-1, keepdims=True)
    ctx = np.moveaxis(np.matmul(probs, v), 1, 2).reshape(B, L, -1)
    return ctx @ w_o
