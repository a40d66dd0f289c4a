# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    B, T, C = x.shape
    mask_add = np.zeros((T, T))
    if causal:
        mask_add[np.triu_indices(T, k=1)] = -np.inf
    dh = w_q.shape[1] // H
    queries, keys, vals = [split_heads(x @ w, H) for w in (w_q, w_k, w_v)]
    att = queries @ keys.swapaxes(2, 3) / dh ** 0.5 + mask_add
    top = att.max(axis=-1, keepdims=True)
    pr = np.exp(att - top)
    pr = pr / pr.sum(axis=-1, keepdims=True)
    return merge_heads(pr @ vals) @ w_o
