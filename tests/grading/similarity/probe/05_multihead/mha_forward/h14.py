# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    """Multi-head attention forward pass.

    x (B, L, C); w_q, w_k (C, H*D); w_v (C, H*D_v); w_o (H*D_v, C). Returns (B, L, C).
    """
    # project the tokens, then cut the features into H heads: (B, H, L, D)
    queries = split_heads(x @ w_q, H)
    keys = split_heads(x @ w_k, H)
    values = split_heads(x @ w_v, H)

    # scores of every query against every key, scaled by the head width
    D = queries.shape[-1]
    scores = queries @ keys.swapaxes(-1, -2) / np.sqrt(D)

    # causal: key j is hidden from query i when j > i
    if causal:
        L = x.shape[1]
        hidden = np.triu(np.ones((L, L), dtype=bool), k=1)
        scores[..., hidden] = -np.inf

    # softmax over the keys (subtract the max so exp cannot overflow)
    scores = scores - scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs = probs / probs.sum(axis=-1, keepdims=True)

    # weighted values, heads concatenated again, output projection
    return merge_heads(probs @ values) @ w_o
