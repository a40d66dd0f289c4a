# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    B, L, _ = x.shape
    q = (x @ w_q).reshape(B, L, H, w_q.shape[1] // H).transpose(0, 2, 1, 3)
    k = (x @ w_k).reshape(B, L, H, w_k.shape[1] // H).transpose(0, 2, 1, 3)
    v = (x @ w_v).reshape(B, L, H, w_v.shape[1] // H).transpose(0, 2, 1, 3)
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        logits = np.where(np.tril(np.ones((L, L), dtype=bool)), logits, -np.inf)
    logits -= logits.max(axis=-1, keepdims=True)
    w = np.exp(logits)
    o = (w / w.sum(axis=-1, keepdims=True)) @ v
    Dv = o.shape[-1]
    return o.transpose(0, 2, 1, 3).reshape(B, L, H * Dv) @ w_o
