# honest: einsum everywhere, the kernel computed in log space with an explicit logsumexp, Z built with np.hstack/np.vstack, heads concatenated with a list and np.concatenate
# part: none
# %% grade_id: gaussian_smoother
def gaussian_smoother(x_query, x_keys, y, bandwidth):
    xq = np.array(x_query, dtype=np.float64)
    xk = np.array(x_keys, dtype=np.float64)
    yy = np.array(y, dtype=np.float64)
    diff = xq[:, np.newaxis, :] - xk[np.newaxis, :, :]          # (L, S, D)
    log_kernel = -np.einsum("lsd,lsd->ls", diff, diff) / (2.0 * bandwidth * bandwidth)
    m = np.max(log_kernel, axis=1, keepdims=True)
    log_norm = m + np.log(np.sum(np.exp(log_kernel - m), axis=1, keepdims=True))
    weights = np.exp(log_kernel - log_norm)
    return np.einsum("ls,sv->lv", weights, yy)
# %% grade_id: linear_self_attention
def linear_self_attention(z, w_q, w_k, w_v, p):
    z = np.array(z, dtype=np.float64)
    Q = np.einsum("ab,...tb->...ta", w_q, z)   # row t is W_Q z_t
    K = np.einsum("ab,...tb->...ta", w_k, z)
    V = np.einsum("ab,...tb->...ta", w_v, z)
    A = np.einsum("...jc,...ic->...ji", Q, K)     # A[j, i] = (W_K z_i).(W_Q z_j)
    S = np.einsum("...ji,...ic->...jc", A, V)     # sum over i of A[j, i] W_V z_i
    return z + np.einsum("ab,...jb->...ja", p, S)
# %% grade_id: icl_prediction
def icl_prediction(X, y, x_query, lr):
    X = np.array(X, dtype=np.float64)
    y = np.array(y, dtype=np.float64).reshape(-1, 1)
    xq = np.array(x_query, dtype=np.float64)
    N, d = X.shape
    M = xq.shape[0]
    context = np.hstack([X, y])
    queries = np.hstack([xq, np.zeros((M, 1))])
    Z = np.vstack([context, queries])
    W_QK = np.diag(np.r_[np.ones(d), 0.0])
    W_V = np.diag(np.r_[np.zeros(d), 1.0])
    P = lr / N * np.identity(d + 1)
    Z_out = linear_self_attention(Z, W_QK, W_QK, W_V, P)
    return Z_out[N:, -1].copy()
# %% grade_id: equivariance_gap
def masked_softmax_attention(q, k, v, mask):
    scores = np.einsum("...ld,...sd->...ls", q, k) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    scores = scores - np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores)
    return np.einsum("...ls,...sv->...lv", e / np.sum(e, axis=-1, keepdims=True), v)


def equivariance_gap(q, k, v, perm, mask=None):
    q, k, v = (np.array(a, dtype=np.float64) for a in (q, k, v))
    idx = np.array(perm, dtype=np.int64)
    left = masked_softmax_attention(np.take(q, idx, axis=-2), np.take(k, idx, axis=-2),
                                    np.take(v, idx, axis=-2), mask)
    right = np.take(masked_softmax_attention(q, k, v, mask), idx, axis=-2)
    return float(np.abs(left - right).max())
# %% grade_id: multi_head_rank
def multi_head_rank(probs, v, w_o):
    probs = np.asarray(probs, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    pieces = [probs[h] @ v[h] for h in range(probs.shape[0])]
    Y = np.concatenate(pieces, axis=1) @ np.asarray(w_o, dtype=np.float64)
    return int(np.linalg.matrix_rank(Y))
