# %% grade_id: attention
def scaled_scores(q, k):
    return np.matmul(q, np.moveaxis(k, -1, -2)) / np.sqrt(q.shape[-1])


def safe_softmax(x):
    peak = np.max(x, axis=-1, keepdims=True)
    peak = np.where(peak == -np.inf, 0, peak)
    num = np.exp(x - peak)
    den = num.sum(axis=-1, keepdims=True)
    den = np.where(den == 0, 1, den)
    return num / den


def attention(q, k, v, mask=None):
    s = scaled_scores(q, k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return safe_softmax(s) @ v
