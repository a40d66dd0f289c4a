# bug: the kernel values are computed directly and divided by their sum, 0/0 for a query far from every key
# part: gaussian_smoother
# %% grade_id: gaussian_smoother
def gaussian_smoother(x_query, x_keys, y, bandwidth):
    d2 = ((x_query[:, None, :] - x_keys[None, :, :]) ** 2).sum(-1)
    kappa = np.exp(-d2 / (2 * bandwidth ** 2))
    return kappa @ y / kappa.sum(axis=1, keepdims=True)
# %% grade_id: linear_self_attention
def linear_self_attention(z, w_q, w_k, w_v, p):
    Q, K, V = z @ w_q.T, z @ w_k.T, z @ w_v.T
    A = Q @ K.T                    # A[j, i] = (W_Q z_j) . (W_K z_i)
    return z + (A @ V) @ p.T
# %% grade_id: icl_prediction
def icl_prediction(X, y, x_query, lr):
    N, d = X.shape
    M = x_query.shape[0]
    Z = np.zeros((N + M, d + 1))
    Z[:N, :d], Z[:N, d], Z[N:, :d] = X, y, x_query
    w_qk = np.zeros((d + 1, d + 1))
    w_qk[:d, :d] = np.eye(d)
    w_v = np.zeros((d + 1, d + 1))
    w_v[d, d] = 1.0
    out = linear_self_attention(Z, w_qk, w_qk, w_v, lr / N * np.eye(d + 1))
    return out[N:, d]
# %% grade_id: equivariance_gap
def _masked_attention(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def equivariance_gap(q, k, v, perm, mask=None):
    perm = np.asarray(perm)
    permuted_first = _masked_attention(q[..., perm, :], k[..., perm, :], v[..., perm, :], mask)
    permuted_after = _masked_attention(q, k, v, mask)[..., perm, :]
    return float(np.max(np.abs(permuted_first - permuted_after)))
# %% grade_id: multi_head_rank
def multi_head_rank(probs, v, w_o):
    heads = probs @ v                                   # (H, L, D_v)
    H, L, D_v = heads.shape
    concat = heads.transpose(1, 0, 2).reshape(L, H * D_v)
    return int(np.linalg.matrix_rank(concat @ w_o))
