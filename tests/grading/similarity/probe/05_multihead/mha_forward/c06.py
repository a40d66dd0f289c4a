# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    B, L, C = x.shape
    q = x @ w_q
    k = x @ w_k
    v = x @ w_v
    D, D_v = q.shape[-1] // H, v.shape[-1] // H
    q = q.reshape(B, L, H, D).transpose(0, 2, 1, 3)
    k = k.reshape(B, L, H, D).transpose(0, 2, 3, 1)
    v = v.reshape(B, L, H, D_v).transpose(0, 2, 1, 3)
    s = (q @ k) / np.sqrt(D)
    if causal:
        future = np.triu(np.ones((L, L), dtype=bool), k=1)
        s = np.where(future, -np.inf, s)
    e = np.exp(s - s.max(axis=3, keepdims=True))
    a = e / e.sum(axis=3, keepdims=True)
    o = (a @ v).transpose(0, 2, 1, 3).reshape(B, L, H * D_v)
    return o @ w_o
