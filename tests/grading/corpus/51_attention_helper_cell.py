# Honest work in 02_attention: a row-softmax helper in an added cell, used by attention; a scratch
# cell prints a result. Full marks.
# kind: honest
# assignment: 02_attention
# expect: test_attention=4, test_additive_scores=2, test_dot_product_stats=2, test_row_entropy=2
# status: graded
# base: solution
# mutate: add-cell-after setup def _row_softmax(scores):\n    m = np.max(scores, axis=-1, keepdims=True)\n    m = np.where(np.isfinite(m), m, 0.0)\n    e = np.exp(scores - m)\n    t = np.sum(e, axis=-1, keepdims=True)\n    return np.divide(e, t, out=np.zeros_like(e), where=t > 0)
# mutate: add-cell-after test_attention print(attention(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))))
# %% grade_id: attention
def attention(q, k, v, mask=None):
    scores = (q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return _row_softmax(scores) @ v
