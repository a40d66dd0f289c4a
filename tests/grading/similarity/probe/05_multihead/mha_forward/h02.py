# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    B, L, _ = x.shape
    d = w_q.shape[1] // H
    dv = w_v.shape[1] // H
    Q = np.einsum('blc,cf->blf', x, w_q).reshape(B, L, H, d)
    K = np.einsum('blc,cf->blf', x, w_k).reshape(B, L, H, d)
    V = np.einsum('blc,cf->blf', x, w_v).reshape(B, L, H, dv)
    S = np.einsum('bihd,bjhd->bhij', Q, K) / np.sqrt(d)
    if causal:
        S = np.where(np.arange(L)[None, :] <= np.arange(L)[:, None], S, -np.inf)
    P = np.exp(S - S.max(-1, keepdims=True))
    P /= P.sum(-1, keepdims=True)
    Z = np.einsum('bhij,bjhd->bihd', P, V).reshape(B, L, H * dv)
    return np.einsum('blf,fc->blc', Z, w_o)
