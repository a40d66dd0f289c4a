# bug: the outputs are weighted as w * out without a guard, so a state that saw no key and holds NaN (its out is meaningless) poisons the merge
# part: merge_states
# %% grade_id: gather_sequence
def gather_sequence(pool, block_table, length):
    table = np.asarray(block_table, dtype=np.int64).reshape(-1)
    blocks = pool[table]                                   # (n, H_kv, b, D)
    n, H_kv, b, D = blocks.shape
    tokens = blocks.transpose(1, 0, 2, 3).reshape(H_kv, n * b, D)
    return tokens[:, :length].copy()
# %% grade_id: merge_states
def merge_states(states):
    lses = np.stack([np.asarray(lse, dtype=np.float64) for _, lse in states])      # (n, ..., L)
    top = lses.max(axis=0)
    shift = np.where(np.isfinite(top), top, 0.0)
    weights = np.exp(lses - shift)                                               # 0 where lse = -inf
    total = weights.sum(axis=0)
    seen = total > 0
    out = 0.0
    for w, (o, _) in zip(weights, states):
        out = out + w[..., None] * np.asarray(o, dtype=np.float64)
    out = out / np.where(seen, total, 1.0)[..., None]
    with np.errstate(divide="ignore"):
        lse = np.where(seen, shift + np.log(np.where(seen, total, 1.0)), -np.inf)
    return out, lse
# %% grade_id: mla_absorbed
def mla_absorbed(x, c_kv, w_q, w_uk, w_uv, w_o):
    H, _, D = w_q.shape
    out = np.zeros((x.shape[0], w_o.shape[-1]))
    for h in range(H):
        q_absorbed = (x @ w_q[h]) @ w_uk[h].T                 # (L, d_c)
        scores = q_absorbed @ c_kv.T / np.sqrt(D)             # (L, S)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
        out += (p @ c_kv) @ (w_uv[h] @ w_o[h])                # (L, d_c) (d_c, C)
    return out
# %% grade_id: quantize_int8_per_channel
def quantize_int8_per_channel(x):
    x = np.asarray(x, dtype=np.float64)
    biggest = np.abs(x).max(axis=0)
    scale = np.where(biggest > 0, biggest / 127.0, 1.0)
    codes = np.clip(np.rint(x / scale), -127, 127).astype(np.int8)
    return codes, scale
