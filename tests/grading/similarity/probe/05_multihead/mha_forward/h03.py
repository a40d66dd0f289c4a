# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    # multi-head attention = the sum over heads of one-head layers
    dq = w_q.shape[1] // H
    dv = w_v.shape[1] // H
    L = x.shape[1]
    out = np.zeros((x.shape[0], L, w_o.shape[1]))
    for h in range(H):
        cols = slice(h * dq, (h + 1) * dq)
        vcols = slice(h * dv, (h + 1) * dv)
        qh, kh, vh = x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, vcols]
        s = qh @ kh.transpose(0, 2, 1) / np.sqrt(dq)
        if causal:
            s[:, np.triu_indices(L, 1)[0], np.triu_indices(L, 1)[1]] = -np.inf
        p = np.exp(s - s.max(axis=2, keepdims=True))
        p /= p.sum(axis=2, keepdims=True)
        out += (p @ vh) @ w_o[vcols, :]
    return out
