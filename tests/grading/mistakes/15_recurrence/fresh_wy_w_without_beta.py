# bug: W is computed as T K, forgetting diag(beta) on the keys (U has it)
# part: wy_representation
# %% grade_id: decay_mask
def decay_mask(log_alpha):
    la = np.asarray(log_alpha, dtype=np.float64)
    L = la.shape[0]
    cs = np.cumsum(la)
    diff = cs[:, None] - cs[None, :]
    causal = np.tril(np.ones((L, L), dtype=bool))
    return np.exp(np.where(causal, diff, -np.inf))
# %% grade_id: ssd_recurrent
def ssd_recurrent(q, k, v, log_alpha):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    alpha = np.exp(np.asarray(log_alpha, dtype=np.float64))
    L, D = q.shape
    s = 1.0 / math.sqrt(D)
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        S = alpha[t] * S + np.outer(k[t], v[t])
        out[t] = S.T @ (s * q[t])
    return out, S
# %% grade_id: ssd_chunked
def ssd_chunked(q, k, v, log_alpha, chunk_size):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    la = np.asarray(log_alpha, dtype=np.float64)
    L, D = q.shape
    s = 1.0 / math.sqrt(D)
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for a in range(0, L, chunk_size):
        e = min(a + chunk_size, L)
        qc, kc, vc = q[a:e], k[a:e], v[a:e]
        cs = np.cumsum(la[a:e])
        n = e - a
        G = np.exp(np.where(np.tri(n, dtype=bool), cs[:, None] - cs[None, :], -np.inf))
        b = np.exp(cs)
        scores = s * (qc @ kc.T) * G
        out[a:e] = scores @ vc + b[:, None] * (s * qc @ S)
        S = b[-1] * S + kc.T @ (G[-1][:, None] * vc)
    return out, S
# %% grade_id: delta_rule
def delta_rule(q, k, v, beta, log_alpha):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    alpha = np.exp(np.asarray(log_alpha, dtype=np.float64))
    L, D = q.shape
    s = 1.0 / math.sqrt(D)
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        S_tilde = alpha[t] * S
        error = v[t] - S_tilde.T @ k[t]
        S = S_tilde + beta[t] * np.outer(k[t], error)
        out[t] = S.T @ (s * q[t])
    return out, S
# %% grade_id: wy_representation
def wy_representation(k, v, beta):
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    c = k.shape[0]
    A = np.tril(beta[:, None] * (k @ k.T), -1)
    T = np.eye(c)
    for t in range(1, c):
        T[t, :t] = -A[t, :t] @ T[:t, :t]
    w = T @ k
    u = T @ (beta[:, None] * v)
    return w, u
