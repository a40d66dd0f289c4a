# honest: masks from np.fromfunction and np.less_equal.outer, Python-list lengths handled by a comprehension, attention in float64 with einsum and an explicit empty-row guard
# part: none
# %% grade_id: causal_mask
def causal_mask(L, S=None, alignment="top_left"):
    S = L if S is None else S
    shift = {"top_left": 0, "bottom_right": S - L}[alignment]
    return np.fromfunction(lambda i, j: j <= i + shift, (L, S), dtype=int)
# %% grade_id: padding_mask
def padding_mask(lengths, S):
    rows = [[j < int(n) for j in range(S)] for n in lengths]
    return np.array(rows, dtype=bool).reshape(len(rows), 1, 1, S)
# %% grade_id: combined_mask
def combined_mask(lengths, L, S=None, alignment="top_left"):
    S = L if S is None else S
    shift = S - L if alignment == "bottom_right" else 0
    causal = np.less_equal.outer(np.arange(S), np.arange(L) + shift).T           # (L, S)
    valid = np.less.outer(np.arange(S), np.asarray(lengths, dtype=np.int64)).T     # (B, S)
    return np.logical_and(valid[:, None, None, :], causal[None, None, :, :])
# %% grade_id: masked_attention
def masked_attention(q, k, v, mask):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    s = np.einsum("...ld,...sd->...ls", q, k) / np.sqrt(q.shape[-1])
    allowed = np.broadcast_to(mask, s.shape)
    s = np.where(allowed, s, -np.inf)
    any_key = allowed.any(axis=-1, keepdims=True)
    top = np.where(any_key, s.max(axis=-1, keepdims=True, initial=-np.inf), 0.0)
    w = np.where(allowed, np.exp(s - top), 0.0)
    w /= np.where(any_key, w.sum(axis=-1, keepdims=True), 1.0)
    return np.einsum("...ls,...se->...le", w, v)
