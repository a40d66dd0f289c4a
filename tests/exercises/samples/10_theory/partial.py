# Part 1 forms the literal ratio (0/0 for far queries); Part 2 is right; Part 3 forgets the 1/N;
# Part 4 permutes the mask with the tokens (so it never sees a gap); Part 5 is right.
# expect: test_gaussian_smoother=0, test_linear_self_attention=2, test_icl_prediction=0, test_equivariance_gap=0, test_multi_head_rank=1
# %% grade_id: gaussian_smoother
def gaussian_smoother(x_query, x_keys, y, bandwidth):
    d2 = ((x_query[:, None, :] - x_keys[None, :, :]) ** 2).sum(-1)
    kappa = np.exp(-d2 / (2 * bandwidth**2))
    return (kappa @ y) / kappa.sum(axis=1, keepdims=True)
# %% grade_id: linear_self_attention
def linear_self_attention(z, w_q, w_k, w_v, p):
    return z + ((z @ w_q.T) @ (z @ w_k.T).T) @ (z @ w_v.T) @ p.T
# %% grade_id: icl_prediction
def icl_prediction(X, y, x_query, lr):
    N, d = X.shape
    z = np.vstack([np.hstack([X, y[:, None]]), np.hstack([x_query, np.zeros((len(x_query), 1))])])
    a = np.zeros((d + 1, d + 1))
    a[:d, :d] = np.eye(d)
    b = np.zeros((d + 1, d + 1))
    b[d, d] = 1.0
    return linear_self_attention(z, a, a, b, lr * np.eye(d + 1))[N:, d]
# %% grade_id: equivariance_gap
def equivariance_gap(q, k, v, perm, mask=None):
    def attend(q, k, v, m):
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if m is not None:
            s = np.where(m, s, -np.inf)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        return w / w.sum(axis=-1, keepdims=True) @ v

    m = None if mask is None else np.broadcast_to(mask, q.shape[:-1] + (q.shape[-2],))
    m_perm = None if m is None else m[..., perm, :][..., perm]
    return float(np.abs(attend(q[..., perm, :], k[..., perm, :], v[..., perm, :], m_perm)
                        - attend(q, k, v, m)[..., perm, :]).max())
# %% grade_id: multi_head_rank
def multi_head_rank(probs, v, w_o):
    heads = [probs[h] @ v[h] for h in range(len(probs))]
    return int(np.linalg.matrix_rank(np.hstack(heads) @ w_o))
