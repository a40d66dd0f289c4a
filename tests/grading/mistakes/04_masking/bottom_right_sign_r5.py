# bug: the bottom-right offset is computed as L - S instead of S - L
# part: causal_mask
# %% grade_id: causal_mask
def causal_mask(L, S=None, alignment="top_left"):
    if S is None:
        S = L
    if alignment == "top_left":
        delta = 0
    elif alignment == "bottom_right":
        delta = L - S  # shift by the difference of the lengths
    else:
        raise ValueError(f"alignment must be 'top_left' or 'bottom_right', not {alignment!r}")
    i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    return j <= i + delta
# %% grade_id: padding_mask
def padding_mask(lengths, S):
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    m = np.arange(S)[None, :] < lengths[:, None]  # (B, S)
    return m[:, None, None, :]
# %% grade_id: combined_mask
def combined_mask(lengths, L, S=None, alignment="top_left"):
    if S is None:
        S = L
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    delta = S - L if alignment == "bottom_right" else 0
    i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    causal = j <= i + delta                                   # (L, S)
    real = np.arange(S)[None, :] < lengths[:, None]           # (B, S)
    return real[:, None, None, :] & causal[None, None, :, :]  # (B, 1, L, S)
# %% grade_id: masked_attention
def masked_attention(q, k, v, mask):
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    if q.dtype == np.float16:
        q, k, v = q.astype(np.float32), k.astype(np.float32), v.astype(np.float32)
    D = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(D)
    scores = np.where(mask, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)  # fully masked row: any finite shift
    e = np.exp(scores - m)
    total = np.sum(e, axis=-1, keepdims=True)
    P = e / np.where(total > 0, total, 1.0)  # a zero row stays zero
    return P @ v
