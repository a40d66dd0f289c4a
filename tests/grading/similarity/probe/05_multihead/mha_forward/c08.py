# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    queries = split_heads(x @ w_q, H)
    keys = split_heads(x @ w_k, H)
    values = split_heads(x @ w_v, H)
    D = queries.shape[-1]
    scores = queries @ keys.swapaxes(-1, -2) / np.sqrt(D)
    if causal:
        L = x.shape[1]
        hidden = np.triu(np.ones((L, L), dtype=bool), k=1)
        scores[..., hidden] = -np.inf
    scores = scores - scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs = probs / probs.sum(axis=-1, keepdims=True)
    return merge_heads(probs @ values) @ w_o
