# honest: a token-by-token gather loop, np.logaddexp.reduce for the merged lse, einsum over all heads at once for the absorbed latent attention, np.round
# part: none
# %% grade_id: gather_sequence
def gather_sequence(pool, block_table, length):
    b = pool.shape[2]
    out = np.empty((pool.shape[1], length, pool.shape[3]), dtype=pool.dtype)
    for t in range(length):
        out[:, t, :] = pool[int(block_table[t // b]), :, t % b, :]
    return out
# %% grade_id: merge_states
def merge_states(states):
    lses = np.stack([np.asarray(s[1], dtype=np.float64) for s in states])
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = np.logaddexp.reduce(lses, axis=0)
    seen = np.isfinite(lse)
    safe_lse = np.where(seen, lse, 0.0)
    out = np.zeros(np.shape(states[0][0]))
    for o, l in states:
        w = np.where(np.isfinite(l) & seen, np.exp(np.where(np.isfinite(l), l, 0.0) - safe_lse), 0.0)
        out += np.where(w[..., None] > 0, w[..., None] * np.asarray(o, dtype=np.float64), 0.0)
    return out, np.where(seen, lse, -np.inf)
# %% grade_id: mla_absorbed
def mla_absorbed(x, c_kv, w_q, w_uk, w_uv, w_o):
    q_lat = np.einsum("lc,hcd,hed->hle", x, w_q, w_uk, optimize=True)        # (H, L, d_c)
    z = np.einsum("hle,se->hls", q_lat, c_kv) / np.sqrt(w_q.shape[-1])
    z -= z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    ctx = np.einsum("hls,se->hle", p, c_kv)
    return np.einsum("hle,hev,hvc->lc", ctx, w_uv, w_o, optimize=True)
# %% grade_id: quantize_int8_per_channel
def quantize_int8_per_channel(x):
    x = np.asarray(x, dtype=np.float64)
    scale = np.ones(x.shape[1])
    codes = np.zeros(x.shape, dtype=np.int8)
    for c in range(x.shape[1]):
        top = np.max(np.abs(x[:, c]))
        if top > 0:
            scale[c] = top / 127
            codes[:, c] = np.round(x[:, c] / scale[c])
    return codes, scale
