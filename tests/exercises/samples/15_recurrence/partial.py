# Part 1 is right; Part 2 decays the new pair in its own step; Part 3 forgets to read the state
# the earlier chunks carried; Part 4 reads the error from the state before its decay; Part 5
# takes T = I - A, the first term of the inverse.
# expect: test_decay_mask=2, test_ssd_recurrent=0, test_ssd_chunked=0, test_delta_rule=0, test_wy_representation=0
# %% grade_id: decay_mask
def decay_mask(log_alpha):
    cs = np.cumsum(log_alpha)
    return np.tril(np.exp(cs[:, None] - cs[None, :]))
# %% grade_id: ssd_recurrent
def ssd_recurrent(q, k, v, log_alpha):
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        S = np.exp(log_alpha[t]) * (S + np.outer(k[t], v[t]))
        out[t] = S.T @ q[t] / np.sqrt(D)
    return out, S
# %% grade_id: ssd_chunked
def ssd_chunked(q, k, v, log_alpha, chunk_size):
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for a in range(0, L, chunk_size):
        e = min(a + chunk_size, L)
        cs = np.cumsum(log_alpha[a:e])
        G = np.tril(np.exp(cs[:, None] - cs[None, :]))
        out[a:e] = (q[a:e] @ k[a:e].T / np.sqrt(D) * G) @ v[a:e]
        S = np.exp(cs[-1]) * S + k[a:e].T @ (np.exp(cs[-1] - cs)[:, None] * v[a:e])
    return out, S
# %% grade_id: delta_rule
def delta_rule(q, k, v, beta, log_alpha):
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        S = np.exp(log_alpha[t]) * S + beta[t] * np.outer(k[t], v[t] - S.T @ k[t])
        out[t] = S.T @ q[t] / np.sqrt(D)
    return out, S
# %% grade_id: wy_representation
def wy_representation(k, v, beta):
    A = np.tril(beta[:, None] * (k @ k.T), -1)
    T = np.eye(len(beta)) - A
    return T @ (beta[:, None] * k), T @ (beta[:, None] * v)
