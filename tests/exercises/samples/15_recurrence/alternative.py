# A correct answer written differently: the mask entry by entry from sums of logs, the recurrence
# through its quadratic form, chunks run as small recurrences, the delta rule in its product form
# alpha (I - beta k k^T) S + beta k v^T, and the WY representation by a linear solve.
# expect: test_decay_mask=2, test_ssd_recurrent=3, test_ssd_chunked=3, test_delta_rule=2, test_wy_representation=3
# %% grade_id: decay_mask
def decay_mask(log_alpha):
    L = len(log_alpha)
    G = np.zeros((L, L))
    for i in range(L):
        for j in range(i + 1):
            G[i, j] = math.exp(math.fsum(log_alpha[j + 1:i + 1]))
    return G
# %% grade_id: ssd_recurrent
def ssd_recurrent(q, k, v, log_alpha):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    L, D = q.shape
    cs = np.cumsum(np.asarray(log_alpha, dtype=np.float64))
    G = np.tril(np.exp(cs[:, None] - cs[None, :]))
    out = (q @ k.T / np.sqrt(D) * G) @ v
    state = k.T @ (np.exp(cs[-1] - cs)[:, None] * v) if L else np.zeros((D, v.shape[1]))
    return out, state
# %% grade_id: ssd_chunked
def ssd_chunked(q, k, v, log_alpha, chunk_size):
    L, D = q.shape
    state = np.zeros((D, v.shape[1]))
    pieces = []
    for a in range(0, L, chunk_size):
        rows = []
        for t in range(a, min(a + chunk_size, L)):
            state = math.exp(log_alpha[t]) * state + np.outer(k[t], v[t])
            rows.append(state.T @ q[t] / math.sqrt(D))
        pieces.append(np.array(rows))
    return (np.concatenate(pieces) if pieces else np.zeros((0, v.shape[1]))), state
# %% grade_id: delta_rule
def delta_rule(q, k, v, beta, log_alpha):
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = []
    for t in range(L):
        S = math.exp(log_alpha[t]) * (np.eye(D) - beta[t] * np.outer(k[t], k[t])) @ S + beta[t] * np.outer(k[t], v[t])
        out.append(S.T @ q[t] / math.sqrt(D))
    return np.array(out).reshape(L, v.shape[1]), S
# %% grade_id: wy_representation
def wy_representation(k, v, beta):
    c = len(beta)
    A = np.tril(np.outer(beta, np.ones(c)) * (k @ k.T), -1)
    return np.linalg.solve(np.eye(c) + A, beta[:, None] * k), np.linalg.solve(np.eye(c) + A, beta[:, None] * v)
