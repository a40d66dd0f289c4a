# %% grade_id: attention
def attention(q, k, v, mask=None):
    """Scaled dot-product attention.

    q: (..., L, D), k: (..., S, D), v: (..., S, Dv); mask: True = may attend.
    """
    # 1. similarity of every query with every key (transpose the last two axes of k only)
    axes = list(range(k.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    raw = np.matmul(q, np.transpose(k, axes))
    # 2. divide by sqrt(D)
    scaled = raw / np.sqrt(float(q.shape[-1]))
    # 3. masked keys get -inf so that exp gives exactly 0
    if mask is not None:
        scaled = np.where(mask, scaled, float("-inf"))
    # 4. subtract the row max; a row with no allowed key would give -inf - (-inf) = nan
    biggest = scaled.max(axis=-1, keepdims=True)
    biggest[biggest == float("-inf")] = 0.0
    numer = np.exp(scaled - biggest)
    denom = numer.sum(axis=-1, keepdims=True)
    denom[denom == 0.0] = 1.0
    # 5. weighted average of the values
    return np.matmul(numer / denom, v)
