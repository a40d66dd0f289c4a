# bug: masked scores are set to -1e9 and rows are normalised as usual, so empty rows average the values and huge negative scores lose to the fill
# part: masked_attention
# %% grade_id: causal_mask
def causal_mask(L, S=None, alignment="top_left"):
    if S is None:
        S = L
    if alignment == "top_left":
        delta = 0
    elif alignment == "bottom_right":
        delta = S - L
    else:
        raise ValueError(f"alignment must be 'top_left' or 'bottom_right', got {alignment!r}")
    return np.arange(S)[None, :] <= np.arange(L)[:, None] + delta
# %% grade_id: padding_mask
def padding_mask(lengths, S):
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    return (np.arange(S)[None, :] < lengths[:, None])[:, None, None, :]
# %% grade_id: combined_mask
def combined_mask(lengths, L, S=None, alignment="top_left"):
    if S is None:
        S = L
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    delta = S - L if alignment == "bottom_right" else 0
    j = np.arange(S)[None, None, None, :]
    i = np.arange(L)[None, None, :, None]
    return (j < lengths[:, None, None, None]) & (j <= i + delta)
# %% grade_id: masked_attention
def masked_attention(q, k, v, mask):
    q, k, v = (np.asarray(a) for a in (q, k, v))
    if q.dtype == np.float16:
        q, k, v = (a.astype(np.float32) for a in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -1e9)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v
