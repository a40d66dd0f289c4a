# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    n_batch, n_tok, width = x.shape
    dk = w_q.shape[-1] // H
    dval = w_v.shape[-1] // H
    result = np.zeros((n_batch, n_tok, w_o.shape[-1]))
    for bi in range(n_batch):
        cat = np.zeros((n_tok, H * dval))
        for hi in range(H):
            qq = x[bi] @ w_q[:, hi * dk:(hi + 1) * dk]
            kk = x[bi] @ w_k[:, hi * dk:(hi + 1) * dk]
            vv = x[bi] @ w_v[:, hi * dval:(hi + 1) * dval]
            sc = qq @ kk.T * dk ** -0.5
            if causal:
                for r in range(n_tok):
                    sc[r, r + 1:] = -np.inf
            sc -= sc.max(axis=1, keepdims=True)
            pr = np.exp(sc)
            pr /= pr.sum(axis=1, keepdims=True)
            cat[:, hi * dval:(hi + 1) * dval] = pr @ vv
        result[bi] = cat @ w_o
    return result
