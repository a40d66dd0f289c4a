# honest: loops over chunks and tokens with Python floats, the mask by math.fsum, the delta rule in its product form, the WY representation by solving the triangular system column by column
# part: none
# %% grade_id: decay_mask
def decay_mask(log_alpha):
    L = len(log_alpha)
    G = np.zeros((L, L))
    for i in range(L):
        for j in range(i + 1):
            G[i, j] = math.exp(math.fsum(float(x) for x in log_alpha[j + 1:i + 1]))
    return G
# %% grade_id: ssd_recurrent
def ssd_recurrent(q, k, v, log_alpha):
    q, k, v = (np.array(a, dtype=np.float64) for a in (q, k, v))
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    rows = []
    for t in range(L):
        S *= math.exp(float(log_alpha[t]))
        S += np.einsum("d,e->de", k[t], v[t])
        rows.append(np.einsum("de,d->e", S, q[t]) / math.sqrt(D))
    return np.array(rows).reshape(L, v.shape[1]), S
# %% grade_id: ssd_chunked
def ssd_chunked(q, k, v, log_alpha, chunk_size):
    q, k, v = (np.array(a, dtype=np.float64) for a in (q, k, v))
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.empty((L, v.shape[1]))
    start = 0
    while start < L:
        stop = min(start + chunk_size, L)
        la = np.asarray(log_alpha[start:stop], dtype=np.float64)
        c = stop - start
        G = np.zeros((c, c))
        for i in range(c):
            G[i, :i + 1] = np.exp(np.cumsum(la[:i + 1][::-1])[::-1] - la[:i + 1])
        decay_in = np.exp(np.cumsum(la))
        scores = np.einsum("id,jd->ij", q[start:stop], k[start:stop]) / math.sqrt(D) * G
        out[start:stop] = scores @ v[start:stop] + decay_in[:, None] * (q[start:stop] @ S) / math.sqrt(D)
        S = decay_in[-1] * S + np.einsum("jd,j,je->de", k[start:stop], G[-1], v[start:stop])
        start = stop
    return out, S
# %% grade_id: delta_rule
def delta_rule(q, k, v, beta, log_alpha):
    q, k, v = (np.array(a, dtype=np.float64) for a in (q, k, v))
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        P = np.eye(D) - float(beta[t]) * np.outer(k[t], k[t])
        S = math.exp(float(log_alpha[t])) * P @ S + float(beta[t]) * np.outer(k[t], v[t])
        out[t] = q[t] @ S / math.sqrt(D)
    return out, S
# %% grade_id: wy_representation
def wy_representation(k, v, beta):
    c = len(beta)
    M = np.eye(c) + np.tril(beta[:, None] * (k @ k.T), -1)
    rhs = np.concatenate([beta[:, None] * k, beta[:, None] * v], axis=1)
    X = np.zeros_like(rhs)
    for t in range(c):
        X[t] = rhs[t] - M[t, :t] @ X[:t]
    return X[:, :k.shape[1]], X[:, k.shape[1]:]
