# Part 1 ignores the alignment (always top-left); Part 2 is right; Part 3 builds its own causal
# mask and is right; Part 4 masks with the -1e9 sentinel and zeroes the empty rows afterwards,
# so masked keys win when every allowed score lies below -1e9.
# expect: test_causal_mask=0, test_padding_mask=1, test_combined_mask=2, test_masked_attention=0
# %% grade_id: causal_mask
def causal_mask(L, S=None, alignment="top_left"):
    S = L if S is None else S
    return np.tril(np.ones((L, S), dtype=bool))
# %% grade_id: padding_mask
def padding_mask(lengths, S):
    return (np.arange(S) < np.asarray(lengths)[:, None])[:, None, None, :]
# %% grade_id: combined_mask
def combined_mask(lengths, L, S=None, alignment="top_left"):
    S = L if S is None else S
    shift = 0 if alignment == "top_left" else S - L
    causal = np.arange(S)[None, :] <= np.arange(L)[:, None] + shift
    return padding_mask(lengths, S) & causal
# %% grade_id: masked_attention
def masked_attention(q, k, v, mask):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -1e9)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    p = np.where(np.any(np.broadcast_to(mask, p.shape), axis=-1, keepdims=True), p, 0.0)
    return p @ v
