# Masks right; Part 4 uses -inf and zeroes empty rows, but never subtracts the row maximum:
# exp overflows in float16 (and underflows to 0/0 for very negative scores).
# expect: test_causal_mask=2, test_padding_mask=1, test_combined_mask=2, test_masked_attention=0
# %% grade_id: causal_mask
def causal_mask(L, S=None, alignment="top_left"):
    S = L if S is None else S
    d = S - L if alignment == "bottom_right" else 0
    return np.array([[j <= i + d for j in range(S)] for i in range(L)], dtype=bool)
# %% grade_id: padding_mask
def padding_mask(lengths, S):
    out = np.zeros((len(lengths), 1, 1, S), dtype=bool)
    for b, n in enumerate(lengths):
        out[b, 0, 0, :n] = True
    return out
# %% grade_id: combined_mask
def combined_mask(lengths, L, S=None, alignment="top_left"):
    return padding_mask(lengths, L if S is None else S) & causal_mask(L, S, alignment)
# %% grade_id: masked_attention
def masked_attention(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.where(mask, np.exp(scores), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return (e / np.where(np.any(np.broadcast_to(mask, e.shape), axis=-1, keepdims=True), total, 1.0)) @ v
