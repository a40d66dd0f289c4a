# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    L = x.shape[1]
    q = split_heads(x @ w_q, H)
    k = split_heads(x @ w_k, H)
    v = split_heads(x @ w_v, H)
    D = q.shape[-1]
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(D)
    if causal:
        mask = np.tril(np.ones((L, L), dtype=bool))
        scores = np.where(mask, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return merge_heads(weights @ v) @ w_o
