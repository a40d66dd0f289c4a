# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    B, L, C = x.shape
    q = (x @ w_q).reshape(B, L, H, -1).swapaxes(1, 2)
    k = (x @ w_k).reshape(B, L, H, -1).swapaxes(1, 2)
    v = (x @ w_v).reshape(B, L, H, -1).swapaxes(1, 2)
    scale = 1 / np.sqrt(q.shape[-1])
    s = q @ k.swapaxes(-1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones((L, L))) == 1, s, -np.inf)
    s = s - np.amax(s, axis=-1, keepdims=True)
    p = np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)
    y = (p @ v).swapaxes(1, 2).reshape(B, L, -1)
    return y @ w_o
