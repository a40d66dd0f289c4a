# bug: Gaussian kernel written as exp(-||x-x'||^2 / h^2): the factor 2 in 2h^2 is dropped, so the effective bandwidth is h/sqrt(2)
# part: gaussian_smoother
# %% grade_id: gaussian_smoother
def gaussian_smoother(x_query, x_keys, y, bandwidth):
    xq = np.asarray(x_query, dtype=np.float64)
    xk = np.asarray(x_keys, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    d2 = ((xq[:, None, :] - xk[None, :, :]) ** 2).sum(axis=-1)
    logits = -d2 / bandwidth ** 2
    logits = logits - logits.max(axis=1, keepdims=True)
    w = np.exp(logits)
    w = w / w.sum(axis=1, keepdims=True)
    return w @ y
# %% grade_id: linear_self_attention
def linear_self_attention(z, w_q, w_k, w_v, p):
    z = np.asarray(z, dtype=np.float64)
    q = z @ np.asarray(w_q, dtype=np.float64).T
    k = z @ np.asarray(w_k, dtype=np.float64).T
    v = z @ np.asarray(w_v, dtype=np.float64).T
    scores = q @ np.swapaxes(k, -1, -2)          # scores[j, i] = (W_K z_i).(W_Q z_j)
    update = scores @ v
    return z + update @ np.asarray(p, dtype=np.float64).T
# %% grade_id: icl_prediction
def icl_prediction(X, y, x_query, lr):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x_query = np.asarray(x_query, dtype=np.float64)
    N, d = X.shape
    M = x_query.shape[0]
    Z = np.zeros((N + M, d + 1))
    Z[:N, :d] = X
    Z[:N, d] = y
    Z[N:, :d] = x_query
    w_qk = np.zeros((d + 1, d + 1))
    w_qk[:d, :d] = np.eye(d)
    w_v = np.zeros((d + 1, d + 1))
    w_v[d, d] = 1.0
    P = (lr / N) * np.eye(d + 1)
    out = linear_self_attention(Z, w_qk, w_qk, w_v, P)
    return out[N:, d]
# %% grade_id: equivariance_gap
def _attention(q, k, v, mask=None):
    d = q.shape[-1]
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w = w / w.sum(axis=-1, keepdims=True)
    return w @ v


def equivariance_gap(q, k, v, perm, mask=None):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    perm = np.asarray(perm)
    permuted = _attention(q[..., perm, :], k[..., perm, :], v[..., perm, :], mask)
    plain = _attention(q, k, v, mask)[..., perm, :]
    return float(np.max(np.abs(permuted - plain)))
# %% grade_id: multi_head_rank
def multi_head_rank(probs, v, w_o):
    heads = np.asarray(probs) @ np.asarray(v)            # (H, L, D_v)
    H, L, Dv = heads.shape
    concat = np.transpose(heads, (1, 0, 2)).reshape(L, H * Dv)
    y = concat @ np.asarray(w_o)
    return int(np.linalg.matrix_rank(y))
