# bug: recomputes the tiles of P from q k^T - lse without the scale s = 1/sqrt(D)
# part: flash_backward
# %% grade_id: online_softmax
def online_softmax(x, block_size):
    x = np.asarray(x)
    n = x.shape[-1]
    m = np.full(x.shape[:-1] + (1,), -np.inf, dtype=x.dtype)
    l = np.zeros(x.shape[:-1] + (1,), dtype=x.dtype)
    for j0 in range(0, n, block_size):
        block = x[..., j0:j0 + block_size]
        m_new = np.maximum(m, np.max(block, axis=-1, keepdims=True))
        shift = np.where(np.isfinite(m_new), m_new, 0.0)   # still -inf: any finite shift, the terms are 0
        l = np.exp(m - shift) * l + np.sum(np.exp(block - shift), axis=-1, keepdims=True)
        m = m_new
    return np.exp(x - m) / l
# %% grade_id: flash_forward
def flash_forward(q, k, v, block_q, block_k, causal=False):
    L, D = q.shape[-2], q.shape[-1]
    S, D_v = k.shape[-2], v.shape[-1]
    lead = q.shape[:-2]
    s = 1.0 / np.sqrt(D)
    dt = np.result_type(q, k, v)
    out = np.zeros(lead + (L, D_v), dtype=dt)
    lse = np.zeros(lead + (L,), dtype=dt)
    for i0 in range(0, L, block_q):
        i1 = min(i0 + block_q, L)
        q_i = q[..., i0:i1, :]
        m = np.full(lead + (i1 - i0, 1), -np.inf, dtype=dt)
        l = np.zeros(lead + (i1 - i0, 1), dtype=dt)
        acc = np.zeros(lead + (i1 - i0, D_v), dtype=dt)
        for j0 in range(0, S, block_k):
            if causal and j0 > i1 - 1:
                break                                   # this key tile and the later ones are all above the diagonal
            j1 = min(j0 + block_k, S)
            scores = (q_i @ np.swapaxes(k[..., j0:j1, :], -1, -2)) * s
            if causal and j1 - 1 > i0:                  # the tile reaches above the diagonal
                allowed = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]
                scores = np.where(allowed, scores, -np.inf)
            m_new = np.maximum(m, np.max(scores, axis=-1, keepdims=True))
            shift = np.where(np.isfinite(m_new), m_new, 0.0)
            p = np.exp(scores - shift)
            alpha = np.exp(m - shift)
            l = alpha * l + np.sum(p, axis=-1, keepdims=True)
            acc = alpha * acc + p @ v[..., j0:j1, :]
            m = m_new
        out[..., i0:i1, :] = acc / l
        lse[..., i0:i1] = (m + np.log(l))[..., 0]
    return out, lse
# %% grade_id: flash_backward
def flash_backward(q, k, v, out, lse, dout, block_q, block_k, causal=False):
    L, D = q.shape[-2], q.shape[-1]
    S = k.shape[-2]
    s = 1.0 / np.sqrt(D)
    dt = np.result_type(q, k, v, dout)
    dq = np.zeros(q.shape, dtype=dt)
    dk = np.zeros(k.shape, dtype=dt)
    dv = np.zeros(v.shape, dtype=dt)
    Drow = np.sum(dout * out, axis=-1)                  # D_i = sum_d dO_id O_id, shape (..., L)
    for j0 in range(0, S, block_k):                     # keys outside, queries inside
        j1 = min(j0 + block_k, S)
        k_j, v_j = k[..., j0:j1, :], v[..., j0:j1, :]
        for i0 in range(0, L, block_q):
            i1 = min(i0 + block_q, L)
            if causal and j0 > i1 - 1:
                continue                                # the whole tile is masked
            q_i, do_i = q[..., i0:i1, :], dout[..., i0:i1, :]
            scores = q_i @ np.swapaxes(k_j, -1, -2)
            if causal and j1 - 1 > i0:
                allowed = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]
                scores = np.where(allowed, scores, -np.inf)
            P = np.exp(scores - lse[..., i0:i1, None])  # recomputed tile of P, 0 where masked
            dv[..., j0:j1, :] += np.swapaxes(P, -1, -2) @ do_i
            dP = do_i @ np.swapaxes(v_j, -1, -2)
            dS = P * (dP - Drow[..., i0:i1, None])
            dq[..., i0:i1, :] += s * (dS @ k_j)
            dk[..., j0:j1, :] += s * (np.swapaxes(dS, -1, -2) @ q_i)
    return dq, dk, dv
