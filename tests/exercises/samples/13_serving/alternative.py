# A correct answer written differently: a loop over the tokens of the block table, a pairwise
# merge with np.logaddexp, the absorbed attention with the folded output projection applied per
# head in a loop, and the int8 scales from np.max of the absolute values with np.round.
# expect: test_gather_sequence=2, test_merge_states=3, test_mla_absorbed=3, test_quantize_int8=2
# %% grade_id: gather_sequence
def gather_sequence(pool, block_table, length):
    pool = np.asarray(pool)
    block_size = pool.shape[2]
    out = np.empty((pool.shape[1], length, pool.shape[3]), dtype=pool.dtype)
    for t in range(length):
        out[:, t, :] = pool[int(block_table[t // block_size]), :, t % block_size, :]
    return out
# %% grade_id: merge_states
def merge_states(states):
    out, lse = (np.asarray(a, dtype=np.float64) for a in states[0])
    out = np.where(np.isneginf(lse)[..., None], 0.0, out)
    for o2, l2 in states[1:]:
        o2, l2 = np.asarray(o2, dtype=np.float64), np.asarray(l2, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            new = np.logaddexp(lse, l2)
            w1 = np.where(np.isneginf(lse), 0.0, np.exp(lse - new))
            w2 = np.where(np.isneginf(l2), 0.0, np.exp(l2 - new))
        out = w1[..., None] * out + w2[..., None] * o2
        lse = new
    return out, lse
# %% grade_id: mla_absorbed
def mla_absorbed(x, c_kv, w_q, w_uk, w_uv, w_o):
    H, C, D = w_q.shape
    total = np.zeros((x.shape[0], C))
    for h in range(H):
        q_lat = (x @ w_q[h]) @ w_uk[h].T  # (L, d_c)
        z = (q_lat @ c_kv.T) / np.sqrt(D)  # (L, S)
        lse = z.max(axis=1, keepdims=True) + np.log(np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True))
        p = np.exp(z - lse)
        total += (p @ c_kv) @ (w_uv[h] @ w_o[h])
    return total
# %% grade_id: quantize_int8_per_channel
def quantize_int8_per_channel(x):
    amax = np.max(np.abs(x), axis=0)
    scale = amax / 127.0
    scale[amax == 0] = 1.0
    return np.round(x / scale).astype(np.int8), scale
