# bug: the mask is squeezed with np.squeeze, so a (B, 1, 1, S) padding mask becomes (B, S) and lines up with the query axis
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
    mask = np.squeeze(mask)          # drop the size-1 axes
    scores = np.where(mask, scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return (e / np.where(total > 0, total, 1.0)) @ v
