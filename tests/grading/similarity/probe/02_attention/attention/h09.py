# %% grade_id: attention
def attention(q, k, v, mask=None):
    batch_shape = q.shape[:-2]
    L, D = q.shape[-2:]
    S, Dv = v.shape[-2:]
    if mask is None:
        m = np.ones(batch_shape + (L, S), dtype=bool)
    else:
        m = np.broadcast_to(mask, batch_shape + (L, S))
    Q = q.reshape(-1, L, D)
    K = k.reshape(-1, S, D)
    V = v.reshape(-1, S, Dv)
    M = m.reshape(-1, L, S)
    result = np.zeros((Q.shape[0], L, Dv))
    for b in range(Q.shape[0]):
        sc = Q[b] @ K[b].T / np.sqrt(D)
        sc[~M[b]] = -np.inf
        mx = sc.max(axis=1)
        mx[np.isinf(mx)] = 0.0
        ex = np.exp(sc - mx[:, None])
        tot = ex.sum(axis=1)
        tot[tot == 0] = 1.0
        result[b] = (ex / tot[:, None]) @ V[b]
    return result.reshape(batch_shape + (L, Dv))
