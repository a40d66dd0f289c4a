# bug: WY matrix A built with beta of the column token, A_ts = beta_s k_t.k_s (beta[None, :]) instead of beta_t (the row token)
# part: wy_representation
# %% grade_id: decay_mask
def decay_mask(log_alpha):
    la = np.asarray(log_alpha, dtype=np.float64)
    L = la.shape[0]
    c = np.cumsum(la)
    diff = c[:, None] - c[None, :]
    lower = np.tril(np.ones((L, L), dtype=bool))
    return np.exp(np.where(lower, diff, -np.inf))
# %% grade_id: ssd_recurrent
def ssd_recurrent(q, k, v, log_alpha):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    la = np.asarray(log_alpha, dtype=np.float64)
    L, D = q.shape
    Dv = v.shape[1]
    s = 1.0 / math.sqrt(D)
    S = np.zeros((D, Dv))
    out = np.zeros((L, Dv))
    for t in range(L):
        S = np.exp(la[t]) * S + np.outer(k[t], v[t])
        out[t] = S.T @ (s * q[t])
    return out, S
# %% grade_id: ssd_chunked
def ssd_chunked(q, k, v, log_alpha, chunk_size):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    la = np.asarray(log_alpha, dtype=np.float64)
    L, D = q.shape
    Dv = v.shape[1]
    s = 1.0 / math.sqrt(D)
    S = np.zeros((D, Dv))
    out = np.zeros((L, Dv))
    for a in range(0, L, chunk_size):
        e = min(a + chunk_size, L)
        qc, kc, vc = q[a:e], k[a:e], v[a:e]
        c = np.cumsum(la[a:e])
        n = e - a
        G = np.exp(np.where(np.tril(np.ones((n, n), dtype=bool)), c[:, None] - c[None, :], -np.inf))
        scores = s * (qc @ kc.T) * G
        b = np.exp(c)
        out[a:e] = scores @ vc + b[:, None] * (s * qc @ S)
        S = b[-1] * S + (kc * G[-1][:, None]).T @ vc
    return out, S
# %% grade_id: delta_rule
def delta_rule(q, k, v, beta, log_alpha):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    la = np.asarray(log_alpha, dtype=np.float64)
    L, D = q.shape
    Dv = v.shape[1]
    s = 1.0 / math.sqrt(D)
    S = np.zeros((D, Dv))
    out = np.zeros((L, Dv))
    for t in range(L):
        S = np.exp(la[t]) * S
        err = v[t] - S.T @ k[t]
        S = S + beta[t] * np.outer(k[t], err)
        out[t] = S.T @ (s * q[t])
    return out, S
# %% grade_id: wy_representation
def wy_representation(k, v, beta):
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    c = k.shape[0]
    A = np.tril((k @ k.T) * beta[None, :], -1)
    T = np.eye(c)
    for t in range(1, c):
        T[t, :t] = -A[t, :t] @ T[:t, :t]
    w = T @ (beta[:, None] * k)
    u = T @ (beta[:, None] * v)
    return w, u
