# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    B, L, C = x.shape
    dk = w_q.shape[1] // H
    dv = w_v.shape[1] // H

    def one_head(h):
        q = x @ w_q[:, h * dk:(h + 1) * dk]
        k = x @ w_k[:, h * dk:(h + 1) * dk]
        v = x @ w_v[:, h * dv:(h + 1) * dv]
        s = np.einsum("bid,bjd->bij", q, k) / np.sqrt(dk)
        if causal:
            s = np.where(np.tri(L, dtype=bool), s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        return (s / s.sum(-1, keepdims=True)) @ v

    return np.concatenate([one_head(h) for h in range(H)], axis=-1) @ w_o
