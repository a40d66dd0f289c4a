# bug: the caller's array named by wrt is perturbed in place (+= eps, -= 2 eps, += eps) instead of a copy, which leaves rounding residue in it
# part: numerical_gradient
# %% grade_id: split_heads
def split_heads(x, H):
    B, L, C = x.shape
    return x.reshape(B, L, H, C // H).transpose(0, 2, 1, 3)
# %% grade_id: merge_heads
def merge_heads(x):
    B, H, L, D = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, H * D)
# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    B, L, _ = x.shape
    q = (x @ w_q).reshape(B, L, H, -1).transpose(0, 2, 1, 3)
    k = (x @ w_k).reshape(B, L, H, -1).transpose(0, 2, 1, 3)
    v = (x @ w_v).reshape(B, L, H, -1).transpose(0, 2, 1, 3)
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    if causal:
        scores = np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    P = e / e.sum(axis=-1, keepdims=True)
    heads = P @ v
    return heads.transpose(0, 2, 1, 3).reshape(B, L, -1) @ w_o
# %% grade_id: numerical_gradient
def numerical_gradient(x, w_q, w_k, w_v, w_o, H, dout, wrt, causal=False, eps=1e-6):
    args = {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "w_o": w_o}
    theta = args[wrt]
    grad = np.zeros(theta.shape)
    for index in np.ndindex(theta.shape):
        theta[index] += eps
        up = np.sum(mha_forward(H=H, causal=causal, **args) * dout)
        theta[index] -= 2 * eps
        down = np.sum(mha_forward(H=H, causal=causal, **args) * dout)
        theta[index] += eps
        grad[index] = (up - down) / (2 * eps)
    return grad
# %% grade_id: mha_backward
def mha_backward(x, w_q, w_k, w_v, w_o, H, dout, causal=False):
    B, L, _ = x.shape

    def split(a):
        return a.reshape(B, L, H, -1).transpose(0, 2, 1, 3)

    def merge(a):
        return a.transpose(0, 2, 1, 3).reshape(B, L, -1)

    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    scale = 1.0 / np.sqrt(q.shape[-1])
    scores = q @ k.swapaxes(-1, -2) * scale
    if causal:
        scores = np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    P = e / e.sum(axis=-1, keepdims=True)
    Z = merge(P @ v)
    dw_o = np.einsum("blc,blk->ck", Z, dout)
    dheads = split(dout @ w_o.T)
    dv = P.swapaxes(-1, -2) @ dheads
    dP = dheads @ v.swapaxes(-1, -2)
    dS = P * (dP - np.sum(P * dP, axis=-1, keepdims=True))
    dq = merge(dS @ k * scale)
    dk = merge(dS.swapaxes(-1, -2) @ q * scale)
    dv = merge(dv)
    dw_q = np.einsum("blc,blk->ck", x, dq)
    dw_k = np.einsum("blc,blk->ck", x, dk)
    dw_v = np.einsum("blc,blk->ck", x, dv)
    dx = dq @ w_q.T + dk @ w_k.T + dv @ w_v.T
    return dx, dw_q, dw_k, dw_v, dw_o
# %% grade_id: gqa_forward
def gqa_forward(x, w_q, w_k, w_v, w_o, H, H_kv, causal=False):
    B, L, _ = x.shape
    G = H // H_kv
    q = (x @ w_q).reshape(B, L, H, -1).transpose(0, 2, 1, 3)
    k = (x @ w_k).reshape(B, L, H_kv, -1).transpose(0, 2, 1, 3)
    v = (x @ w_v).reshape(B, L, H_kv, -1).transpose(0, 2, 1, 3)
    k, v = np.repeat(k, G, axis=1), np.repeat(v, G, axis=1)
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    if causal:
        scores = np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    heads = (e / e.sum(axis=-1, keepdims=True)) @ v
    return heads.transpose(0, 2, 1, 3).reshape(B, L, -1) @ w_o
