# honest: Python loops over every leading index and every row, with math.fsum sums and explicit zero handling
# part: none
# %% grade_id: attention
import math


def _attend_rows(q, k, v, allowed):
    D = q.shape[-1]
    out = np.zeros((q.shape[0], v.shape[-1]), dtype=np.result_type(q, v, np.float32))
    for i in range(q.shape[0]):
        keys = [j for j in range(k.shape[0]) if allowed[i, j]]
        if not keys:
            continue
        s = np.array([q[i] @ k[j] for j in keys]) / math.sqrt(D)
        w = np.exp(s - s.max())
        w /= w.sum()
        out[i] = w @ v[keys]
    return out


def attention(q, k, v, mask=None):
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L, S = q.shape[-2], k.shape[-2]
    allowed = np.ones(lead + (L, S), dtype=bool) if mask is None else np.broadcast_to(mask, lead + (L, S))
    out = np.zeros(lead + (L, v.shape[-1]), dtype=np.result_type(q, v, np.float32))
    for index in np.ndindex(*lead):
        out[index] = _attend_rows(q[index], k[index], v[index], allowed[index])
    return out
# %% grade_id: additive_scores
def additive_scores(q, k, w_q, w_k, w_a):
    hq, hk = q @ w_q, k @ w_k
    L, S = q.shape[-2], k.shape[-2]
    out = np.empty(np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (L, S))
    for i in range(L):
        for j in range(S):
            out[..., i, j] = np.tanh(hq[..., i, :] + hk[..., j, :]) @ w_a
    return out
# %% grade_id: dot_product_stats
import math


def dot_product_stats(q, k):
    dots = [float(q[r] @ k[r]) for r in range(q.shape[0])]
    n = len(dots)
    mean = math.fsum(dots) / n
    var = math.fsum((d - mean) ** 2 for d in dots) / (n - 1)
    return mean, var, var / q.shape[1]
# %% grade_id: row_entropy
def row_entropy(p):
    p = np.asarray(p, dtype=np.float64)
    flat = p.reshape(-1, p.shape[-1])
    h = np.array([-sum(x * np.log(x) for x in row if x > 0.0) for row in flat], dtype=np.float64)
    return h.reshape(p.shape[:-1])
