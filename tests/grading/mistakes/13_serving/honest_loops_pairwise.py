# honest: token-by-token gather loop into a preallocated array, merge folded pairwise with np.logaddexp and errstate, MLA with einsum over all heads at once, quantisation column by column
# part: none
# %% grade_id: gather_sequence
def gather_sequence(pool, block_table, length):
    pool = np.asarray(pool)
    _, H, b, D = pool.shape
    table = [int(t) for t in block_table]
    out = np.empty((H, length, D), dtype=pool.dtype if pool.dtype.kind == "f" else np.float64)
    for t in range(length):
        out[:, t, :] = pool[table[t // b], :, t % b, :]
    return out
# %% grade_id: merge_states
def merge_two(a, b):
    out_a, lse_a = a
    out_b, lse_b = b
    lse = np.logaddexp(lse_a, lse_b)
    with np.errstate(invalid="ignore"):
        wa = np.where(np.isfinite(lse_a), np.exp(lse_a - np.where(np.isfinite(lse), lse, 0.0)), 0.0)
        wb = np.where(np.isfinite(lse_b), np.exp(lse_b - np.where(np.isfinite(lse), lse, 0.0)), 0.0)
    ta = np.where(wa[..., None] > 0, out_a, 0.0) * wa[..., None]
    tb = np.where(wb[..., None] > 0, out_b, 0.0) * wb[..., None]
    return ta + tb, lse


def merge_states(states):
    out0, lse0 = states[0]
    acc = (np.zeros(np.shape(out0)), np.full(np.shape(lse0), -np.inf))
    for out, lse in states:
        acc = merge_two(acc, (np.array(out, dtype=np.float64), np.array(lse, dtype=np.float64)))
    return acc
# %% grade_id: mla_absorbed
def mla_absorbed(x, c_kv, w_q, w_uk, w_uv, w_o):
    x = np.array(x, dtype=np.float64)
    c = np.array(c_kv, dtype=np.float64)
    D = np.shape(w_q)[-1]
    q = np.einsum("lc,hcd->hld", x, w_q)               # (H, L, D)
    q_tilde = np.einsum("hld,hed->hle", q, w_uk)       # (H, L, d_c)
    scores = np.einsum("hle,se->hls", q_tilde, c) / np.sqrt(D)
    scores -= scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    latent = np.einsum("hls,se->hle", probs, c)        # (H, L, d_c)
    w_out = np.einsum("hev,hvc->hec", w_uv, w_o)       # (H, d_c, C)
    return np.einsum("hle,hec->lc", latent, w_out)
# %% grade_id: quantize_int8_per_channel
def quantize_int8_per_channel(x):
    x = np.array(x, dtype=np.float64)
    S, D = x.shape
    codes = np.zeros((S, D), dtype=np.int8)
    scale = np.ones(D, dtype=np.float64)
    for c in range(D):
        col = x[:, c]
        biggest = np.max(np.abs(col)) if S > 0 else 0.0
        if biggest > 0:
            scale[c] = biggest / 127.0
            codes[:, c] = np.clip(np.round(col / scale[c]), -127, 127).astype(np.int8)
    return codes, scale
