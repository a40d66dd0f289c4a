# bug: the causal mask is built once as np.tril(np.ones((L, S), dtype=bool)) and sliced per tile
# part: flash_forward
# %% grade_id: online_softmax
def online_softmax(x, block_size):
    x = np.asarray(x)
    n = x.shape[-1]
    m = np.full(x.shape[:-1] + (1,), -np.inf)
    l = np.zeros(x.shape[:-1] + (1,))
    for j0 in range(0, n, block_size):
        block = x[..., j0:j0 + block_size]
        m_new = np.maximum(m, block.max(axis=-1, keepdims=True))
        shift = np.where(np.isfinite(m_new), m_new, 0.0)
        l = l * np.exp(m - shift) + np.exp(block - shift).sum(axis=-1, keepdims=True)
        m = m_new
    return np.exp(x - m) / l
# %% grade_id: flash_forward
def flash_forward(q, k, v, block_q, block_k, causal=False):
    L, D = q.shape[-2:]
    S, D_v = k.shape[-2], v.shape[-1]
    lead = q.shape[:-2]
    scale = 1.0 / np.sqrt(D)
    out = np.zeros(lead + (L, D_v))
    lse = np.zeros(lead + (L,))
    full_mask = np.tril(np.ones((L, S), dtype=bool))
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
                s = np.where(full_mask[i0:i1, j0:j1], s, -np.inf)
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
    L, D = q.shape[-2:]
    S = k.shape[-2]
    scale = 1.0 / np.sqrt(D)
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    delta = np.sum(dout * out, axis=-1)                       # D_i = dO_i . O_i
    for j0 in range(0, S, block_k):
        j1 = min(j0 + block_k, S)
        k_j, v_j = k[..., j0:j1, :], v[..., j0:j1, :]
        first = (j0 // block_q) * block_q if causal else 0
        for i0 in range(first, L, block_q):
            i1 = min(i0 + block_q, L)
            s = q[..., i0:i1, :] @ np.swapaxes(k_j, -1, -2) * scale
            if causal and j1 - 1 > i0:
                s = np.where(np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None], s, -np.inf)
            p = np.exp(s - lse[..., i0:i1, None])
            do = dout[..., i0:i1, :]
            dv[..., j0:j1, :] += np.swapaxes(p, -1, -2) @ do
            dp = do @ np.swapaxes(v_j, -1, -2)
            ds = p * (dp - delta[..., i0:i1, None])
            dq[..., i0:i1, :] += ds @ k_j * scale
            dk[..., j0:j1, :] += np.swapaxes(ds, -1, -2) @ q[..., i0:i1, :] * scale
    return dq, dk, dv
