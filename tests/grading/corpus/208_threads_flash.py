# The student ran the query tiles of the flash forward pass on four threads (a ThreadPoolExecutor created inside the function): each thread keeps one tile of scores, far inside the memory budget, and NumPy releases the GIL in the products, so this is a fair speed-up and must keep its points.
# expect: test_online_softmax=2, test_flash_forward=4, test_flash_backward=4
# status: graded
# kind: honest
# assignment: 08_flash
# base: solution
# %% grade_id: flash_forward
from concurrent.futures import ThreadPoolExecutor


def _query_tile(q, k, v, i0, i1, block_k, causal):
    S = k.shape[-2]
    scale = q.shape[-1] ** -0.5
    qi = q[..., i0:i1, :]
    m = np.full(qi.shape[:-1], -np.inf)
    ell = np.zeros(qi.shape[:-1])
    acc = np.zeros(qi.shape[:-1] + (v.shape[-1],))
    last = min(S, i1) if causal else S             # keys after the tile's last query are all masked
    for j0 in range(0, last, block_k):
        j1 = min(j0 + block_k, S)
        s = qi @ np.swapaxes(k[..., j0:j1, :], -1, -2) * scale
        if causal and j1 - 1 > i0:
            s = np.where(np.arange(j0, j1) <= np.arange(i0, i1)[:, None], s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1))
        safe = np.where(np.isneginf(m_new), 0.0, m_new)
        p = np.exp(s - safe[..., None])
        rescale = np.exp(m - safe)
        ell = rescale * ell + p.sum(axis=-1)
        acc = rescale[..., None] * acc + p @ v[..., j0:j1, :]
        m = m_new
    return acc / ell[..., None], m + np.log(ell)


def flash_forward(q, k, v, block_q, block_k, causal=False):
    L = q.shape[-2]
    out = np.empty(q.shape[:-1] + (v.shape[-1],))
    lse = np.empty(q.shape[:-1])
    starts = range(0, L, block_q)
    with ThreadPoolExecutor(max_workers=4) as pool:
        tiles = pool.map(lambda i0: _query_tile(q, k, v, i0, min(i0 + block_q, L), block_k, causal), starts)
        for i0, (o, l) in zip(starts, tiles):
            out[..., i0:i0 + block_q, :] = o
            lse[..., i0:i0 + block_q] = l
    return out, lse
