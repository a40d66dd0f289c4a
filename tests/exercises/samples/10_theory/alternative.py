# A correct answer written differently: squared distances by expansion and log-sum-exp weights,
# the layer as an einsum over pairs, the prediction by the closed form, attention with
# permutation matrices, and the rank from the singular values.
# expect: test_gaussian_smoother=3, test_linear_self_attention=2, test_icl_prediction=2, test_equivariance_gap=2, test_multi_head_rank=1
# %% grade_id: gaussian_smoother
def gaussian_smoother(x_query, x_keys, y, bandwidth):
    sq = (x_query**2).sum(1)[:, None] + (x_keys**2).sum(1)[None, :] - 2 * x_query @ x_keys.T
    logk = -np.maximum(sq, 0.0) / (2 * bandwidth * bandwidth)
    m = logk.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(logk - m).sum(axis=1, keepdims=True))
    return np.exp(logk - lse) @ y
# %% grade_id: linear_self_attention
def linear_self_attention(z, w_q, w_k, w_v, p):
    a = np.einsum("ic,jc->ji", np.einsum("dc,ic->id", w_k, z), np.einsum("dc,jc->jd", w_q, z))
    return z + np.einsum("ji,ic,dc->jd", a, np.einsum("ec,ic->ie", w_v, z), p)
# %% grade_id: icl_prediction
def icl_prediction(X, y, x_query, lr):
    w1 = lr / len(y) * (X.T @ y)
    return x_query @ w1
# %% grade_id: equivariance_gap
def equivariance_gap(q, k, v, perm, mask=None):
    L = q.shape[-2]
    Pm = np.eye(L)[perm]  # (Pm x)_i = x_perm[i]

    def attend(q, k, v):
        s = np.einsum("...ld,...sd->...ls", q, k) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        return np.einsum("...ls,...sd->...ld", w / w.sum(axis=-1, keepdims=True), v)

    return float(np.abs(attend(Pm @ q, Pm @ k, Pm @ v) - Pm @ attend(q, k, v)).max())
# %% grade_id: multi_head_rank
def multi_head_rank(probs, v, w_o):
    y = np.concatenate([probs[h] @ v[h] for h in range(probs.shape[0])], axis=1) @ w_o
    s = np.linalg.svd(y, compute_uv=False)
    return int(np.sum(s > s.max() * max(y.shape) * np.finfo(float).eps))
