# honest: log-sum-exp weights, einsum products, an np.float64 gap (a float subclass), per-head sums of P_h V_h W_O,h for the rank
# part: none
# %% grade_id: gaussian_smoother
def gaussian_smoother(x_query, x_keys, y, bandwidth):
    d2 = np.einsum("lsd,lsd->ls", x_query[:, None] - x_keys[None], x_query[:, None] - x_keys[None])
    logits = -0.5 * d2 / bandwidth ** 2
    top = logits.max(axis=1, keepdims=True)
    lse = top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True))
    return np.einsum("ls,sv->lv", np.exp(logits - lse), y)
# %% grade_id: linear_self_attention
def linear_self_attention(z, w_q, w_k, w_v, p):
    scores = np.einsum("jc,qc,qk,ik->ji", z, w_q, w_k, z, optimize=True)   # (W_Q z_j) . (W_K z_i)
    update = np.einsum("ji,ic,vc->jv", scores, z, w_v, optimize=True)       # sum_i (W_V z_i) scores
    return z + np.einsum("pv,jv->jp", p, update)
# %% grade_id: icl_prediction
def icl_prediction(X, y, x_query, lr):
    N, d = X.shape
    tokens = np.vstack([np.column_stack([X, y]), np.column_stack([x_query, np.zeros(len(x_query))])])
    proj = np.diag(np.r_[np.ones(d), 0.0])
    value = np.diag(np.r_[np.zeros(d), 1.0])
    out = linear_self_attention(tokens, proj, proj, value, np.eye(d + 1) * (lr / N))
    return out[N:, -1].copy()
# %% grade_id: equivariance_gap
def equivariance_gap(q, k, v, perm, mask=None):
    def attend(q, k, v):
        s = np.einsum("...id,...jd->...ij", q, k) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        s = s - s.max(axis=-1, keepdims=True)
        w = np.exp(s)
        return np.einsum("...ij,...jd->...id", w / w.sum(axis=-1, keepdims=True), v)
    idx = np.asarray(perm)
    moved_first = attend(q[..., idx, :], k[..., idx, :], v[..., idx, :])
    gap = np.abs(moved_first - np.take(attend(q, k, v), idx, axis=-2)).max()
    return np.float64(gap)
# %% grade_id: multi_head_rank
def multi_head_rank(probs, v, w_o):
    H, D_v = probs.shape[0], v.shape[-1]
    y = sum(probs[h] @ v[h] @ w_o[h * D_v:(h + 1) * D_v] for h in range(H))
    return int(np.linalg.matrix_rank(y))
