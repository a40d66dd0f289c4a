# bug: paged gather reshapes pool[table] (n, H_kv, b, D) straight to (H_kv, n*b, D) without moving the head axis first, which interleaves heads and blocks (right only when H_kv = 1)
# part: gather_sequence
# %% grade_id: gather_sequence
def gather_sequence(pool, block_table, length):
    pool = np.asarray(pool)
    table = np.asarray(block_table, dtype=np.int64).reshape(-1)
    n, H, b, D = len(table), pool.shape[1], pool.shape[2], pool.shape[3]
    blocks = pool[table]                                  # (n, H, b, D)
    seq = blocks.reshape(H, n * b, D)
    return np.ascontiguousarray(seq[:, :length, :])
# %% grade_id: merge_states
def merge_states(states):
    outs = np.stack([np.asarray(o, dtype=np.float64) for o, _ in states])     # (n, ..., L, Dv)
    lses = np.stack([np.asarray(l, dtype=np.float64) for _, l in states])     # (n, ..., L)
    m = lses.max(axis=0)
    seen = np.isfinite(m)
    m_safe = np.where(seen, m, 0.0)
    w = np.exp(lses - m_safe)                                                  # 0 where lse = -inf
    s = w.sum(axis=0)
    s_safe = np.where(seen, s, 1.0)
    lse = np.where(seen, m_safe + np.log(s_safe), -np.inf)
    contrib = np.zeros_like(outs)
    np.multiply(w[..., None], outs, out=contrib, where=(w[..., None] > 0))
    out = contrib.sum(axis=0) / s_safe[..., None]
    return out, lse
# %% grade_id: mla_absorbed
def mla_absorbed(x, c_kv, w_q, w_uk, w_uv, w_o):
    x = np.asarray(x, dtype=np.float64)
    c = np.asarray(c_kv, dtype=np.float64)
    H, C, D = np.shape(w_q)
    out = np.zeros((x.shape[0], C))
    for h in range(H):
        q = x @ w_q[h]                         # (L, D)
        q_lat = q @ np.asarray(w_uk[h]).T      # (L, d_c)
        s = (q_lat @ c.T) / np.sqrt(D)         # (L, S)
        s = s - s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p = p / p.sum(axis=1, keepdims=True)
        ctx = p @ c                            # (L, d_c)
        out += ctx @ (np.asarray(w_uv[h]) @ np.asarray(w_o[h]))
    return out
# %% grade_id: quantize_int8_per_channel
def quantize_int8_per_channel(x):
    x = np.asarray(x, dtype=np.float64)
    amax = np.abs(x).max(axis=0, initial=0.0)
    scale = np.where(amax > 0, amax / 127.0, 1.0)
    codes = np.clip(np.rint(x / scale), -127, 127).astype(np.int8)
    return codes, scale
