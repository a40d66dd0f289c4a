# %% grade_id: attention
def attention(q, k, v, mask=None):
    S = k.shape[-2]
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
    if mask is None:
        allowed = np.ones(scores.shape, dtype=bool)
    else:
        allowed = np.broadcast_to(mask, scores.shape)
    flat_scores = scores.reshape(-1, S)
    flat_allowed = allowed.reshape(-1, S)
    weights = np.zeros_like(flat_scores)
    # one softmax per query row, over the keys it may see
    for r in range(flat_scores.shape[0]):
        ok = flat_allowed[r]
        if not ok.any():
            continue          # nothing to attend to: the row stays zero
        row = flat_scores[r, ok]
        e = np.exp(row - row.max())
        weights[r, ok] = e / e.sum()
    return np.matmul(weights.reshape(scores.shape), v)
