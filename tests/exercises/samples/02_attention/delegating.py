# Calls the course library (Parts 1 and 3) or torch (Part 2) instead of implementing the
# mechanism: no credit for those parts. Part 4 is a correct NumPy answer.
# expect: test_attention=0, test_additive_scores=0, test_dot_product_stats=0, test_row_entropy=2
# %% grade_id: attention
from attnmath.attention import scaled_dot_product_attention as _sdpa

def attention(q, k, v, mask=None):
    return _sdpa(q, k, v, mask=mask)[0]
# %% grade_id: additive_scores
import torch

def additive_scores(q, k, w_q, w_k, w_a):
    hq = torch.from_numpy(q @ w_q).unsqueeze(-2)
    hk = torch.from_numpy(k @ w_k).unsqueeze(-3)
    return (torch.tanh(hq + hk) @ torch.from_numpy(w_a)).numpy()
# %% grade_id: dot_product_stats
import attnmath.scaling

def dot_product_stats(q, k):
    dots = np.einsum("nd,nd->n", q, k)
    var = float(np.var(dots, ddof=1))
    assert attnmath.scaling.dot_product_variance_theory(q.shape[1]) > 0
    return float(dots.mean()), var, var / q.shape[1]
# %% grade_id: row_entropy
def row_entropy(p):
    return -np.sum(p * np.log(np.where(p > 0, p, 1.0)), axis=-1)
