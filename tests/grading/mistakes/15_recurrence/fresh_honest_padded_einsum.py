# honest: vectorized: the mask from row-wise suffix sums, the chunks padded to a whole number and done all at once with einsum, the delta rule as a transition matrix, W and U by forward substitution without forming T
# part: none
# %% grade_id: decay_mask
def decay_mask(log_alpha):
    la = np.asarray(log_alpha, dtype=np.float64)
    L = la.shape[0]
    rows, cols = np.indices((L, L))
    # X[i, m] = log alpha_m for m <= i; the sum over m = j+1 .. i is a suffix sum of row i
    X = np.where(cols <= rows, la[None, :], 0.0)
    suffix = np.cumsum(X[:, ::-1], axis=1)[:, ::-1] - X
    G = np.zeros((L, L))
    below = cols <= rows
    G[below] = np.exp(suffix[below])
    return G
# %% grade_id: ssd_recurrent
def ssd_recurrent(q, k, v, log_alpha):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    alpha = np.exp(np.asarray(log_alpha, dtype=np.float64))
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.empty((L, v.shape[1]))
    for t in range(L):
        S = alpha[t] * S + np.einsum("d,e->de", k[t], v[t])
        out[t] = np.einsum("de,d->e", S, q[t]) / np.sqrt(D)
    return out, S
# %% grade_id: ssd_chunked
def ssd_chunked(q, k, v, log_alpha, chunk_size):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    la = np.asarray(log_alpha, dtype=np.float64)
    L, D = q.shape
    Dv = v.shape[1]
    c = min(int(chunk_size), max(L, 1))
    n = -(-L // c)
    pad = n * c - L  # padded tokens: no key, no value, no decay, so they change nothing
    Q = np.concatenate([q, np.zeros((pad, D))]).reshape(n, c, D)
    K = np.concatenate([k, np.zeros((pad, D))]).reshape(n, c, D)
    V = np.concatenate([v, np.zeros((pad, Dv))]).reshape(n, c, Dv)
    cs = np.concatenate([la, np.zeros(pad)]).reshape(n, c).cumsum(axis=1)
    lower = np.tri(c, dtype=bool)
    G = np.exp(np.where(lower, cs[:, :, None] - cs[:, None, :], -np.inf))  # (n, c, c)
    scores = np.einsum("nid,njd->nij", Q, K) / np.sqrt(D) * G
    intra = np.einsum("nij,nje->nie", scores, V)
    b = np.exp(cs)  # (n, c)
    contrib = np.einsum("nj,njd,nje->nde", G[:, -1, :], K, V)  # each chunk's own state
    out = np.empty((n, c, Dv))
    S = np.zeros((D, Dv))
    for m in range(n):
        out[m] = intra[m] + b[m][:, None] * (Q[m] @ S) / np.sqrt(D)
        S = b[m, -1] * S + contrib[m]
    return out.reshape(n * c, Dv)[:L], S
# %% grade_id: delta_rule
def delta_rule(q, k, v, beta, log_alpha):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    beta = np.asarray(beta, dtype=np.float64)
    alpha = np.exp(np.asarray(log_alpha, dtype=np.float64))
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.empty((L, v.shape[1]))
    for t in range(L):
        # S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T
        transition = alpha[t] * (np.eye(D) - beta[t] * np.outer(k[t], k[t]))
        S = transition @ S + beta[t] * np.outer(k[t], v[t])
        out[t] = S.T @ q[t] / np.sqrt(D)
    return out, S
# %% grade_id: wy_representation
def wy_representation(k, v, beta):
    k, v = np.asarray(k, dtype=np.float64), np.asarray(v, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    c, D = k.shape
    # (I + A) [W U] = diag(beta) [K V], solved row by row
    rhs = beta[:, None] * np.concatenate([k, v], axis=1)
    X = np.zeros_like(rhs)
    for t in range(c):
        a_row = beta[t] * (k[:t] @ k[t])  # A[t, :t]
        X[t] = rhs[t] - a_row @ X[:t]
    return X[:, :D], X[:, D:]
