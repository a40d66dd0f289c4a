# honest: builds the causal mask with np.tril and a diagonal offset, the padding mask with a Python loop over the batch, and masked attention in float64 with explicit Python loops over the rows of a flattened batch
# part: none
# %% grade_id: causal_mask
def causal_mask(L, S=None, alignment="top_left"):
    S = L if S is None else S
    offsets = {"top_left": 0, "bottom_right": S - L}
    if alignment not in offsets:
        raise ValueError("alignment must be 'top_left' or 'bottom_right'")
    return np.tril(np.ones((L, S), dtype=bool), k=offsets[alignment])
# %% grade_id: padding_mask
def padding_mask(lengths, S):
    lengths = [int(n) for n in lengths]
    out = np.zeros((len(lengths), 1, 1, S), dtype=bool)
    for b, n in enumerate(lengths):
        out[b, 0, 0, :n] = True
    return out
# %% grade_id: combined_mask
def combined_mask(lengths, L, S=None, alignment="top_left"):
    S = L if S is None else S
    both = np.logical_and(padding_mask(lengths, S), causal_mask(L, S, alignment))
    return both  # (B, 1, 1, S) & (L, S) broadcasts to (B, 1, L, S)
# %% grade_id: masked_attention
def _one_row(scores, allowed, values):
    if not allowed.any():
        return np.zeros(values.shape[-1])
    picked = scores[allowed]
    w = np.exp(picked - picked.max())
    w /= w.sum()
    return w @ values[allowed]


def masked_attention(q, k, v, mask):
    q64, k64, v64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    L, S = q64.shape[-2], k64.shape[-2]
    lead = np.broadcast_shapes(q64.shape[:-2], k64.shape[:-2], v64.shape[:-2], np.shape(mask)[:-2])
    qb = np.broadcast_to(q64, lead + q64.shape[-2:]).reshape(-1, L, q64.shape[-1])
    kb = np.broadcast_to(k64, lead + k64.shape[-2:]).reshape(-1, S, k64.shape[-1])
    vb = np.broadcast_to(v64, lead + v64.shape[-2:]).reshape(-1, S, v64.shape[-1])
    mb = np.broadcast_to(np.asarray(mask, dtype=bool), lead + (L, S)).reshape(-1, L, S)
    out = np.zeros((qb.shape[0], L, vb.shape[-1]))
    for b in range(qb.shape[0]):
        scores = qb[b] @ kb[b].T / np.sqrt(q64.shape[-1])
        for i in range(L):
            out[b, i] = _one_row(scores[i], mb[b, i], vb[b])
    return out.reshape(lead + (L, vb.shape[-1]))
