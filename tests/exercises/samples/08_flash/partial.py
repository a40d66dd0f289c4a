# Part 1 forgets that a block can be all -inf (NaN); Part 2 gets the values right but builds the
# whole (L, S) causal mask; Part 3 is right.
# expect: test_online_softmax=0, test_flash_forward=0, test_flash_backward=4
# %% grade_id: online_softmax
def online_softmax(x, block_size):
    m = np.full(x.shape[:-1], -np.inf)
    total = np.zeros(x.shape[:-1])
    for j0 in range(0, x.shape[-1], block_size):
        block = x[..., j0:j0 + block_size]
        m_new = np.maximum(m, block.max(axis=-1))
        total = total * np.exp(m - m_new) + np.exp(block - m_new[..., None]).sum(axis=-1)
        m = m_new
    return np.exp(x - m[..., None]) / total[..., None]
# %% grade_id: flash_forward
def flash_forward(q, k, v, block_q, block_k, causal=False):
    L, S = q.shape[-2], k.shape[-2]
    allowed = np.tril(np.ones((L, S), dtype=bool)) if causal else np.ones((L, S), dtype=bool)
    c = 1.0 / np.sqrt(q.shape[-1])
    out = np.empty(q.shape[:-1] + (v.shape[-1],))
    lse = np.empty(q.shape[:-1])
    for i0 in range(0, L, block_q):
        i1 = min(L, i0 + block_q)
        m = np.full(q.shape[:-2] + (i1 - i0,), -np.inf)
        ell = np.zeros_like(m)
        acc = np.zeros(q.shape[:-2] + (i1 - i0, v.shape[-1]))
        for j0 in range(0, S, block_k):
            j1 = min(S, j0 + block_k)
            s = q[..., i0:i1, :] @ np.swapaxes(k[..., j0:j1, :], -1, -2) * c
            s = np.where(allowed[i0:i1, j0:j1], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1))
            shift = np.where(np.isfinite(m_new), m_new, 0.0)
            p = np.exp(s - shift[..., None])
            a = np.exp(m - shift)
            ell = ell * a + p.sum(axis=-1)
            acc = acc * a[..., None] + p @ v[..., j0:j1, :]
            m = m_new
        out[..., i0:i1, :] = acc / ell[..., None]
        lse[..., i0:i1] = m + np.log(ell)
    return out, lse
# %% grade_id: flash_backward
def flash_backward(q, k, v, out, lse, dout, block_q, block_k, causal=False):
    L, S = q.shape[-2], k.shape[-2]
    c = 1.0 / np.sqrt(q.shape[-1])
    delta = (dout * out).sum(axis=-1)
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    for j0 in range(0, S, block_k):
        j1 = min(S, j0 + block_k)
        for i0 in range(0, L, block_q):
            i1 = min(L, i0 + block_q)
            s = q[..., i0:i1, :] @ np.swapaxes(k[..., j0:j1, :], -1, -2) * c
            if causal:
                s = np.where(np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None], s, -np.inf)
            p = np.exp(s - lse[..., i0:i1, None])
            dv[..., j0:j1, :] += np.swapaxes(p, -1, -2) @ dout[..., i0:i1, :]
            ds = p * (dout[..., i0:i1, :] @ np.swapaxes(v[..., j0:j1, :], -1, -2) - delta[..., i0:i1, None])
            dq[..., i0:i1, :] += ds @ k[..., j0:j1, :] * c
            dk[..., j0:j1, :] += np.swapaxes(ds, -1, -2) @ q[..., i0:i1, :] * c
    return dq, dk, dv
