# Part 1 masks with -1e9 (an empty row averages all values instead of giving zeros); Part 2 is
# right; Part 3 uses the biased variance (ddof=0); Part 4 computes p * log(p) and gets NaN at 0.
# expect: test_attention=0, test_additive_scores=2, test_dot_product_stats=0, test_row_entropy=0
# %% grade_id: attention
def attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v
# %% grade_id: additive_scores
def additive_scores(q, k, w_q, w_k, w_a):
    return np.tanh((q @ w_q)[..., :, None, :] + (k @ w_k)[..., None, :, :]) @ w_a
# %% grade_id: dot_product_stats
def dot_product_stats(q, k):
    dots = np.sum(q * k, axis=1)
    return (float(dots.mean()), float(dots.var()), float(dots.var() / q.shape[1]))
# %% grade_id: row_entropy
def row_entropy(p):
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.sum(p * np.log(p), axis=-1)
