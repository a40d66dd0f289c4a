# Memory hidden behind ballast in 08_flash: flash_forward frees 200 MB that an earlier added cell set
# aside, then materialises the full (L, S) score matrix instead of tiles. The memory cases charge
# what the call allocates in a group of its own: 0 for Part 2.
# kind: cheat
# assignment: 08_flash
# expect: test_online_softmax=2, test_flash_forward=0, test_flash_backward=4
# status: graded
# base: solution
# mutate: add-cell-after online_softmax _cushion = [np.ones(25 * 2**20 // 8) for _ in range(8)]
# %% grade_id: flash_forward
def flash_forward(q, k, v, block_q, block_k, causal=False):
    _cushion.clear()
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        L, S = scores.shape[-2:]
        scores = np.where(np.tril(np.ones((L, S), dtype=bool)), scores, -np.inf)
    m = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - m)
    total = e.sum(axis=-1, keepdims=True)
    return e @ v / total, (m + np.log(total))[..., 0]
