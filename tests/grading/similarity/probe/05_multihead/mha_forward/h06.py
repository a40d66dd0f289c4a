# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    B, L, C = x.shape
    Dq = w_q.shape[-1] // H
    Dv = w_v.shape[-1] // H
    out = np.zeros((B, L, w_o.shape[-1]))
    for b in range(B):
        concat = np.zeros((L, H * Dv))
        for h in range(H):
            qh = x[b] @ w_q[:, h * Dq:(h + 1) * Dq]
            kh = x[b] @ w_k[:, h * Dq:(h + 1) * Dq]
            vh = x[b] @ w_v[:, h * Dv:(h + 1) * Dv]
            s = qh @ kh.T / np.sqrt(Dq)
            if causal:
                for i in range(L):
                    s[i, i + 1:] = -np.inf
            s -= s.max(axis=1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(axis=1, keepdims=True)
            concat[:, h * Dv:(h + 1) * Dv] = p @ vh
        out[b] = concat @ w_o
    return out
