# honest: loops and shared helpers: the mask filled diagonal by diagonal as running products, the state kept transposed inside, the chunks reuse decay_mask from Part 1, in-place updates, and T entry by entry with math.fsum
# part: none
# %% grade_id: decay_mask
def _f64(*arrays):
    return [np.array(a, dtype=np.float64) for a in arrays]


def decay_mask(log_alpha):
    (la,) = _f64(log_alpha)
    L = len(la)
    alpha = np.exp(la)
    G = np.zeros((L, L))
    idx = np.arange(L)
    G[idx, idx] = 1.0
    for d in range(1, L):
        i = idx[d:]
        j = i - d
        G[i, j] = G[i, j + 1] * alpha[j + 1]  # one more decay per step away from the diagonal
    return G
# %% grade_id: ssd_recurrent
def ssd_recurrent(q, k, v, log_alpha):
    q, k, v, la = _f64(q, k, v, log_alpha)
    L, D = q.shape
    scale = 1.0 / math.sqrt(D)
    St = np.zeros((v.shape[1], D))  # S transposed: values along the rows
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        St *= math.exp(la[t])
        St += np.outer(v[t], k[t])
        out[t] = St @ q[t] * scale
    return out, St.T.copy()
# %% grade_id: ssd_chunked
def _chunks(L, size):
    start = 0
    while start < L:
        yield start, min(start + size, L)
        start += size


def ssd_chunked(q, k, v, log_alpha, chunk_size):
    q, k, v, la = _f64(q, k, v, log_alpha)
    L, D = q.shape
    scale = 1.0 / math.sqrt(D)
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for a, e in _chunks(L, chunk_size):
        G = decay_mask(la[a:e])
        b = G[:, 0] * math.exp(la[a])  # b_i = alpha_{a+1} ... alpha_i
        qs = q[a:e] * scale
        out[a:e] = ((qs @ k[a:e].T) * G) @ v[a:e] + b[:, None] * (qs @ S)
        S = b[-1] * S + (k[a:e] * G[-1][:, None]).T @ v[a:e]
    return out, S
# %% grade_id: delta_rule
def delta_rule(q, k, v, beta, log_alpha):
    q, k, v, beta, la = _f64(q, k, v, beta, log_alpha)
    L, D = q.shape
    scale = 1.0 / math.sqrt(D)
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        S *= math.exp(la[t])
        predicted = k[t] @ S
        S += beta[t] * np.outer(k[t], v[t] - predicted)
        out[t] = (q[t] * scale) @ S
    return out, S
# %% grade_id: wy_representation
def wy_representation(k, v, beta):
    k, v, beta = _f64(k, v, beta)
    c = len(beta)
    gram = k @ k.T
    T = np.eye(c)
    for t in range(c):
        for j in range(t):
            T[t, j] = -math.fsum(beta[t] * gram[t, m] * T[m, j] for m in range(j, t))
    w = T @ (beta[:, None] * k)
    u = T @ (beta[:, None] * v)
    return w, u
