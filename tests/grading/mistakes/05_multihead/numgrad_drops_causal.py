# bug: the loss inside the numerical gradient calls mha_forward without passing `causal`, so causal gradients are those of the unmasked layer
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
def _heads(a, H):
    # (B, L, H*D) -> (B, H, L, D), head h owns the columns h*D:(h+1)*D
    B, L, W = a.shape
    return a.reshape(B, L, H, W // H).transpose(0, 2, 1, 3)


def _softmax_rows(scores, causal):
    if causal:
        L, S = scores.shape[-2:]
        scores = np.where(np.tril(np.ones((L, S), dtype=bool)), scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True)


def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    q, k, v = _heads(x @ w_q, H), _heads(x @ w_k, H), _heads(x @ w_v, H)
    D = w_q.shape[1] // H
    P = _softmax_rows(q @ k.swapaxes(-1, -2) / np.sqrt(D), causal)
    heads = P @ v                                   # (B, H, L, D_v)
    B, _, L, D_v = heads.shape
    return heads.transpose(0, 2, 1, 3).reshape(B, L, H * D_v) @ w_o
# %% grade_id: numerical_gradient
def numerical_gradient(x, w_q, w_k, w_v, w_o, H, dout, wrt, causal=False, eps=1e-6):
    params = {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "w_o": w_o}
    params = {name: np.array(a, dtype=np.float64) for name, a in params.items()}
    theta = params[wrt]
    grad = np.zeros_like(theta)

    def loss():
        out = mha_forward(params["x"], params["w_q"], params["w_k"], params["w_v"], params["w_o"], H)
        return np.sum(out * dout)

    for idx in np.ndindex(theta.shape):
        old = theta[idx]
        theta[idx] = old + eps
        plus = loss()
        theta[idx] = old - eps
        minus = loss()
        theta[idx] = old
        grad[idx] = (plus - minus) / (2 * eps)
    return grad
# %% grade_id: mha_backward
def mha_backward(x, w_q, w_k, w_v, w_o, H, dout, causal=False):
    def heads(a):
        B, L, W = a.shape
        return a.reshape(B, L, H, W // H).transpose(0, 2, 1, 3)

    def merge(a):
        B, _, L, W = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, L, H * W)

    q, k, v = heads(x @ w_q), heads(x @ w_k), heads(x @ w_v)
    s = 1.0 / np.sqrt(w_q.shape[1] // H)
    scores = q @ k.swapaxes(-1, -2) * s
    if causal:
        L = x.shape[1]
        scores = np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    P = e / e.sum(axis=-1, keepdims=True)
    Z = merge(P @ v)

    dw_o = np.einsum("blc,blk->ck", Z, dout)
    dheads = heads(dout @ w_o.T)
    dv = P.swapaxes(-1, -2) @ dheads
    dP = dheads @ v.swapaxes(-1, -2)
    dS = P * (dP - np.sum(P * dP, axis=-1, keepdims=True))
    dq = dS @ k * s
    dk = dS.swapaxes(-1, -2) @ q * s
    dQ, dK, dV = merge(dq), merge(dk), merge(dv)
    dw_q = np.einsum("blc,blk->ck", x, dQ)
    dw_k = np.einsum("blc,blk->ck", x, dK)
    dw_v = np.einsum("blc,blk->ck", x, dV)
    dx = dQ @ w_q.T + dK @ w_k.T + dV @ w_v.T
    return dx, dw_q, dw_k, dw_v, dw_o
# %% grade_id: gqa_forward
def gqa_forward(x, w_q, w_k, w_v, w_o, H, H_kv, causal=False):
    def heads(a, n):
        B, L, W = a.shape
        return a.reshape(B, L, n, W // n).transpose(0, 2, 1, 3)

    G = H // H_kv
    q = heads(x @ w_q, H)
    k = np.repeat(heads(x @ w_k, H_kv), G, axis=1)  # head h uses kv head h // G
    v = np.repeat(heads(x @ w_v, H_kv), G, axis=1)
    D = w_q.shape[1] // H
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(D)
    if causal:
        L = x.shape[1]
        scores = np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    P = e / e.sum(axis=-1, keepdims=True)
    out = P @ v
    B, _, L, D_v = out.shape
    return out.transpose(0, 2, 1, 3).reshape(B, L, H * D_v) @ w_o
