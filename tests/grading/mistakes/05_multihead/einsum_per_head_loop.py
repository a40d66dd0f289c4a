# honest: split/merge by slicing and stacking column blocks, the forward and backward loop over the heads with einsum on (B, L, .) arrays, GQA implemented by indexing the shared head h // G inside the loop, all in float64
# part: none
# %% grade_id: split_heads
def split_heads(x, H):
    D = x.shape[-1] // H
    return np.stack([x[:, :, h * D:(h + 1) * D] for h in range(H)], axis=1)
# %% grade_id: merge_heads
def merge_heads(x):
    return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)
# %% grade_id: mha_forward
def _attend(qh, kh, vh, causal):
    # one head: qh (B, L, D), kh (B, L, D), vh (B, L, D_v); returns output and weights
    scores = np.einsum("bid,bjd->bij", qh, kh) / np.sqrt(qh.shape[-1])
    if causal:
        n = qh.shape[1]
        future = np.arange(n)[None, :] > np.arange(n)[:, None]
        scores = np.where(future, -np.inf, scores)
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("bij,bjv->biv", weights, vh), weights


def _gqa(x, w_q, w_k, w_v, w_o, H, H_kv, causal):
    x = np.asarray(x, dtype=np.float64)
    Q, K, V = x @ w_q, x @ w_k, x @ w_v
    D, D_v, G = Q.shape[-1] // H, V.shape[-1] // H_kv, H // H_kv
    outs = []
    for h in range(H):
        g = h // G
        o, _ = _attend(Q[..., h * D:(h + 1) * D], K[..., g * D:(g + 1) * D], V[..., g * D_v:(g + 1) * D_v], causal)
        outs.append(o)
    return np.concatenate(outs, axis=-1) @ w_o


def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    return _gqa(x, w_q, w_k, w_v, w_o, H, H, causal)
# %% grade_id: numerical_gradient
def numerical_gradient(x, w_q, w_k, w_v, w_o, H, dout, wrt, causal=False, eps=1e-6):
    order = ["x", "w_q", "w_k", "w_v", "w_o"]
    args = [np.array(a, dtype=np.float64, copy=True) for a in (x, w_q, w_k, w_v, w_o)]
    pos = order.index(wrt)
    grad = np.zeros(args[pos].shape)
    for idx in np.ndindex(args[pos].shape):
        values = []
        for step in (+eps, -eps):
            trial = list(args)
            trial[pos] = args[pos].copy()
            trial[pos][idx] += step
            values.append(np.sum(mha_forward(*trial, H, causal=causal) * dout))
        grad[idx] = (values[0] - values[1]) / (2 * eps)
    return grad
# %% grade_id: mha_backward
def mha_backward(x, w_q, w_k, w_v, w_o, H, dout, causal=False):
    x = np.asarray(x, dtype=np.float64)
    Q, K, V = x @ w_q, x @ w_k, x @ w_v
    D, D_v = Q.shape[-1] // H, V.shape[-1] // H
    cols = lambda h, w: slice(h * w, (h + 1) * w)
    results = [_attend(Q[..., cols(h, D)], K[..., cols(h, D)], V[..., cols(h, D_v)], causal) for h in range(H)]
    Z = np.concatenate([o for o, _ in results], axis=-1)
    dw_o = np.einsum("blc,blk->ck", Z, dout)
    dZ = dout @ w_o.T
    dQ, dK, dV = np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)
    for h, (_, P) in enumerate(results):
        dhead = dZ[..., cols(h, D_v)]
        vh, qh, kh = V[..., cols(h, D_v)], Q[..., cols(h, D)], K[..., cols(h, D)]
        dV[..., cols(h, D_v)] = np.einsum("bij,biv->bjv", P, dhead)
        dP = np.einsum("biv,bjv->bij", dhead, vh)
        dS = P * (dP - np.einsum("bij,bij->bi", P, dP)[..., None])
        dQ[..., cols(h, D)] = np.einsum("bij,bjd->bid", dS, kh) / np.sqrt(D)
        dK[..., cols(h, D)] = np.einsum("bij,bid->bjd", dS, qh) / np.sqrt(D)
    grads_w = [np.einsum("blc,blk->ck", x, d) for d in (dQ, dK, dV)]
    dx = dQ @ w_q.T + dK @ w_k.T + dV @ w_v.T
    return (dx, *grads_w, dw_o)
# %% grade_id: gqa_forward
def gqa_forward(x, w_q, w_k, w_v, w_o, H, H_kv, causal=False):
    return _gqa(x, w_q, w_k, w_v, w_o, H, H_kv, causal)
