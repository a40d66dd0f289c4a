# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    B, L, C = x.shape
    head_dim = w_q.shape[1] // H
    qkv = [split_heads(x @ w, H) for w in (w_q, w_k, w_v)]
    q, k, v = qkv
    bias = np.zeros((L, L))
    if causal:
        bias[np.triu_indices(L, k=1)] = -np.inf
    scores = q @ k.swapaxes(2, 3) / head_dim ** 0.5 + bias
    m = scores.max(axis=-1, keepdims=True)
    w = np.exp(scores - m)
    w = w / w.sum(axis=-1, keepdims=True)
    return merge_heads(w @ v) @ w_o
