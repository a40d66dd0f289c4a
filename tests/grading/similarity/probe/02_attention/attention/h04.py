# %% grade_id: attention
import math


def attention(q, k, v, mask=None):
    """Softmax attention through each row's log-sum-exp."""
    s = np.matmul(q, np.swapaxes(k, -2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    hi = s.max(axis=-1, keepdims=True)
    empty = np.isneginf(hi)
    hi[empty] = 0.0
    with np.errstate(divide="ignore"):
        lse = hi + np.log(np.exp(s - hi).sum(axis=-1, keepdims=True))
    p = np.exp(s - np.where(empty, 0.0, lse))
    return np.matmul(p, v)
