# bug: the decay mask divides cumulative products of the decays, which underflow on long sequences
# part: decay_mask
# %% grade_id: decay_mask
def decay_mask(log_alpha):
    b = np.cumprod(np.exp(np.asarray(log_alpha, dtype=np.float64)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.tril(b[:, None] / b[None, :])
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
    for a in range(0, L, chunk_size):
        e = min(a + chunk_size, L)
        cs = np.cumsum(log_alpha[a:e])  # (c,): log of alpha_{a+1} ... alpha_i
        G = np.tril(np.exp(cs[:, None] - cs[None, :]))  # (c, c): the chunk's decay mask
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
