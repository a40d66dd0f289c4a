# The student computed the heads of multi-head attention in parallel with `ThreadPoolExecutor()` (default size) inside the function, one NumPy task per head, and concatenated them: threads are a normal way to use several cores with NumPy.
# expect: test_split_heads=1, test_merge_heads=1, test_mha_forward=3, test_numerical_gradient=2, test_mha_backward=4, test_gqa_forward=2
# status: graded
# kind: honest
# assignment: 05_multihead
# base: solution
# %% grade_id: mha_forward
from concurrent.futures import ThreadPoolExecutor


def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    L = x.shape[1]
    d, d_v = w_q.shape[1] // H, w_v.shape[1] // H
    allowed = np.tril(np.ones((L, L), dtype=bool)) if causal else np.ones((L, L), dtype=bool)

    def head(h):
        q = x @ w_q[:, h * d:(h + 1) * d]
        k = x @ w_k[:, h * d:(h + 1) * d]
        v = x @ w_v[:, h * d_v:(h + 1) * d_v]
        s = np.where(allowed, q @ k.transpose(0, 2, 1) / np.sqrt(d), -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        return (p / p.sum(axis=-1, keepdims=True)) @ v

    with ThreadPoolExecutor() as pool:
        heads = list(pool.map(head, range(H)))
    return np.concatenate(heads, axis=-1) @ w_o
