# Part 1 reshapes straight to (B, H, L, D) (right shape, wrong heads); Part 2 is right; Part 3
# forgets the 1/sqrt(D) scaling, so Part 4, which differentiates it, cannot pass either; Parts 5
# and 6 are right and self-contained.
# expect: test_split_heads=0, test_merge_heads=1, test_mha_forward=0, test_numerical_gradient=0, test_mha_backward=4, test_gqa_forward=2
# %% grade_id: split_heads
def split_heads(x, H):
    B, L, C = x.shape
    return x.reshape(B, H, L, C // H)
# %% grade_id: merge_heads
def merge_heads(x):
    B, H, L, D = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, H * D)
# %% grade_id: mha_forward
def _split(x, H):
    B, L, C = x.shape
    return x.reshape(B, L, H, C // H).transpose(0, 2, 1, 3)


def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    q, k, v = _split(x @ w_q, H), _split(x @ w_k, H), _split(x @ w_v, H)
    s = q @ k.swapaxes(-1, -2)
    if causal:
        L = x.shape[1]
        s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return merge_heads(p @ v) @ w_o
# %% grade_id: numerical_gradient
def numerical_gradient(x, w_q, w_k, w_v, w_o, H, dout, wrt, causal=False, eps=1e-6):
    args = {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "w_o": w_o}
    theta = args[wrt].copy()
    args[wrt] = theta
    grad = np.zeros_like(theta)
    for i in np.ndindex(theta.shape):
        old = theta[i]
        theta[i] = old + eps
        up = np.sum(mha_forward(**args, H=H, causal=causal) * dout)
        theta[i] = old - eps
        down = np.sum(mha_forward(**args, H=H, causal=causal) * dout)
        theta[i] = old
        grad[i] = (up - down) / (2 * eps)
    return grad
# %% grade_id: mha_backward
def _split2(x, H):
    B, L, C = x.shape
    return x.reshape(B, L, H, C // H).transpose(0, 2, 1, 3)


def _merge2(x):
    B, H, L, D = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, H * D)


def mha_backward(x, w_q, w_k, w_v, w_o, H, dout, causal=False):
    L = x.shape[1]
    q, k, v = _split2(x @ w_q, H), _split2(x @ w_k, H), _split2(x @ w_v, H)
    c = 1 / np.sqrt(q.shape[-1])
    s = q @ k.swapaxes(-1, -2) * c
    if causal:
        s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dh = _split2(dout @ w_o.T, H)
    dp = dh @ v.swapaxes(-1, -2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq = _merge2(ds @ k * c)
    dk = _merge2(ds.swapaxes(-1, -2) @ q * c)
    dv = _merge2(p.swapaxes(-1, -2) @ dh)
    dw = lambda a, b: np.einsum("blc,blk->ck", a, b)
    return (dq @ w_q.T + dk @ w_k.T + dv @ w_v.T, dw(x, dq), dw(x, dk), dw(x, dv),
            dw(_merge2(p @ v), dout))
# %% grade_id: gqa_forward
def gqa_forward(x, w_q, w_k, w_v, w_o, H, H_kv, causal=False):
    L = x.shape[1]
    q = _split2(x @ w_q, H)
    k = np.repeat(_split2(x @ w_k, H_kv), H // H_kv, axis=1)
    v = np.repeat(_split2(x @ w_v, H_kv), H // H_kv, axis=1)
    s = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return _merge2(p @ v) @ w_o
