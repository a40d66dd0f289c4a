# A correct answer written differently: np.tril with an offset, an outer comparison for the
# padding, einsum scores with a log-sum-exp normaliser, empty rows zeroed afterwards, and
# float16 kept in float16 apart from the exponentials.
# expect: test_causal_mask=2, test_padding_mask=1, test_combined_mask=2, test_masked_attention=4
# %% grade_id: causal_mask
def causal_mask(L, S=None, alignment="top_left"):
    S = L if S is None else S
    offset = {"top_left": 0, "bottom_right": S - L}[alignment]
    return np.tril(np.ones((L, S), dtype=bool), k=offset)
# %% grade_id: padding_mask
def padding_mask(lengths, S):
    lengths = np.array(lengths).reshape(-1, 1, 1, 1)
    return np.less(np.arange(S).reshape(1, 1, 1, S), lengths)
# %% grade_id: combined_mask
def combined_mask(lengths, L, S=None, alignment="top_left"):
    S = L if S is None else S
    return np.logical_and(padding_mask(lengths, S), causal_mask(L, S, alignment)[None, None])
# %% grade_id: masked_attention
def masked_attention(q, k, v, mask):
    scores = np.einsum("...ld,...sd->...ls", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(mask, scores.astype(np.float32 if scores.dtype == np.float16 else scores.dtype), -np.inf)
    empty = ~np.any(np.broadcast_to(mask, scores.shape), axis=-1, keepdims=True)
    m = np.where(empty, 0.0, scores.max(axis=-1, keepdims=True))
    lse = m + np.log(np.where(empty, 1.0, np.exp(scores - m).sum(axis=-1, keepdims=True)))
    p = np.where(empty, 0.0, np.exp(scores - lse))
    return np.einsum("...ls,...sd->...ld", p.astype(v.dtype), v)
