# honest: the causal backward starts its row tiles at row j0 itself (not at the tile boundary), the online softmax works in place on its own buffers
# part: none
# %% grade_id: online_softmax
def online_softmax(x, block_size):
    x = np.asarray(x)
    m = np.full(x.shape[:-1], -np.inf)
    l = np.zeros(x.shape[:-1])
    for j0 in range(0, x.shape[-1], block_size):
        block = np.array(x[..., j0:j0 + block_size], dtype=np.float64)
        m_new = np.fmax(m, block.max(axis=-1))
        finite = np.isfinite(m_new)
        l *= np.exp(np.where(finite, m - m_new, 0.0))
        block -= np.where(finite, m_new, 0.0)[..., None]
        np.exp(block, out=block)
        l += block.sum(axis=-1)
        m = m_new
    result = np.array(x, dtype=np.float64)
    result -= m[..., None]
    np.exp(result, out=result)
    result /= l[..., None]
    return result
# %% grade_id: flash_forward
def flash_forward(q, k, v, block_q, block_k, causal=False):
    L, D = q.shape[-2:]
    S, D_v = k.shape[-2], v.shape[-1]
    lead = q.shape[:-2]
    scale = 1.0 / np.sqrt(D)
    out = np.zeros(lead + (L, D_v))
    lse = np.zeros(lead + (L,))
    for i0 in range(0, L, block_q):
        i1 = min(i0 + block_q, L)
        q_i = q[..., i0:i1, :]
        m = np.full(lead + (i1 - i0, 1), -np.inf)
        l = np.zeros(lead + (i1 - i0, 1))
        acc = np.zeros(lead + (i1 - i0, D_v))
        last_key = min(S, i1) if causal else S
        for j0 in range(0, last_key, block_k):
            j1 = min(j0 + block_k, last_key)
            s = q_i @ np.swapaxes(k[..., j0:j1, :], -1, -2) * scale
            if causal and j1 - 1 > i0:
                s = np.where(np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            p = np.exp(s - m_new)
            alpha = np.exp(m - m_new)
            l = alpha * l + p.sum(axis=-1, keepdims=True)
            acc = alpha * acc + p @ v[..., j0:j1, :]
            m = m_new
        out[..., i0:i1, :] = acc / l
        lse[..., i0:i1] = (m + np.log(l))[..., 0]
    return out, lse
# %% grade_id: flash_backward
def flash_backward(q, k, v, out, lse, dout, block_q, block_k, causal=False):
    L, S = q.shape[-2], k.shape[-2]
    c = q.shape[-1] ** -0.5
    dq, dk, dv = (np.zeros(a.shape) for a in (q, k, v))
    delta = np.einsum("...ld,...ld->...l", dout, out)
    for j0 in range(0, S, block_k):
        j1 = min(S, j0 + block_k)
        rows = range(j0, L, block_q) if causal else range(0, L, block_q)
        for i0 in rows:
            i1 = min(L, i0 + block_q)
            s = np.einsum("...id,...jd->...ij", q[..., i0:i1, :], k[..., j0:j1, :]) * c
            if causal:
                s[..., np.arange(j0, j1)[None, :] > np.arange(i0, i1)[:, None]] = -np.inf
            p = np.exp(s - lse[..., i0:i1, None])
            dv[..., j0:j1, :] += np.einsum("...ij,...id->...jd", p, dout[..., i0:i1, :])
            dp = np.einsum("...id,...jd->...ij", dout[..., i0:i1, :], v[..., j0:j1, :])
            ds = p * (dp - delta[..., i0:i1, None])
            dq[..., i0:i1, :] += c * np.einsum("...ij,...jd->...id", ds, k[..., j0:j1, :])
            dk[..., j0:j1, :] += c * np.einsum("...ij,...id->...jd", ds, q[..., i0:i1, :])
    return dq, dk, dv
