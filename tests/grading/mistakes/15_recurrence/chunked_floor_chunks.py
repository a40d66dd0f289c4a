# bug: L // chunk_size chunks: the tokens of a short last chunk are never computed
# part: ssd_chunked
# %% grade_id: decay_mask
def decay_mask(log_alpha):
    log_alpha = np.asarray(log_alpha, dtype=np.float64)
    L = log_alpha.shape[0]
    below = np.tri(L, L, -1, dtype=bool)  # (L, L): i > j
    sums = np.cumsum(np.where(below, log_alpha[:, None], 0.0), axis=0)  # (L, L): sum over j < m <= i
    return np.where(np.tri(L, L, dtype=bool), np.exp(sums), 0.0)
# %% grade_id: ssd_recurrent
def ssd_recurrent(q, k, v, log_alpha):
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        S = np.exp(log_alpha[t]) * S + np.outer(k[t], v[t])
        out[t] = S.T @ q[t] / math.sqrt(D)
    return out, S
# %% grade_id: ssd_chunked
def ssd_chunked(q, k, v, log_alpha, chunk_size):
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for n in range(L // chunk_size):
        a, e = n * chunk_size, (n + 1) * chunk_size
        cs = np.cumsum(log_alpha[a:e])
        G = np.tril(np.exp(cs[:, None] - cs[None, :]))
        qs = q[a:e] / math.sqrt(D)
        out[a:e] = (qs @ k[a:e].T * G) @ v[a:e] + np.exp(cs)[:, None] * (qs @ S)
        S = np.exp(cs[-1]) * S + k[a:e].T @ (np.exp(cs[-1] - cs)[:, None] * v[a:e])
    return out, S
# %% grade_id: delta_rule
def delta_rule(q, k, v, beta, log_alpha):
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        S = np.exp(log_alpha[t]) * S
        S = S + beta[t] * np.outer(k[t], v[t] - S.T @ k[t])
        out[t] = S.T @ q[t] / math.sqrt(D)
    return out, S
# %% grade_id: wy_representation
def wy_representation(k, v, beta):
    c = k.shape[0]
    A = np.tril(beta[:, None] * (k @ k.T), -1)  # (c, c): A[t, s] = beta_t k_t . k_s, s < t
    T = np.eye(c)
    for i in range(1, c):
        T[i, :i] = -A[i, :i] @ T[:i, :i]
    return T @ (beta[:, None] * k), T @ (beta[:, None] * v)
