# honest: explicit per-head Python loops, np.split / np.concatenate for the heads, gradients accumulated head by head
# part: none
# %% grade_id: split_heads
def split_heads(x, H):
    return np.stack(np.split(x, H, axis=-1), axis=1)
# %% grade_id: merge_heads
def merge_heads(x):
    return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)
# %% grade_id: mha_forward
def _head_weights(qh, kh, causal):
    scores = np.einsum("bld,bsd->bls", qh, kh) / np.sqrt(qh.shape[-1])
    if causal:
        L = scores.shape[-1]
        scores = scores + np.triu(np.full((L, L), -np.inf), k=1)
    scores -= scores.max(axis=-1, keepdims=True)
    P = np.exp(scores)
    P /= P.sum(axis=-1, keepdims=True)
    return P


def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    wq, wk, wv = (np.split(w, H, axis=1) for w in (w_q, w_k, w_v))
    wo = np.split(w_o, H, axis=0)
    out = np.zeros(x.shape[:2] + (w_o.shape[1],))
    for h in range(H):
        P = _head_weights(x @ wq[h], x @ wk[h], causal)
        out += (P @ (x @ wv[h])) @ wo[h]
    return out
# %% grade_id: numerical_gradient
def numerical_gradient(x, w_q, w_k, w_v, w_o, H, dout, wrt, causal=False, eps=1e-6):
    order = ["x", "w_q", "w_k", "w_v", "w_o"]
    values = [np.copy(a) for a in (x, w_q, w_k, w_v, w_o)]
    theta = values[order.index(wrt)]
    grad = np.empty(theta.shape)
    it = np.nditer(theta, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        saved = theta[i]
        totals = []
        for step in (eps, -eps):
            theta[i] = saved + step
            totals.append(float(np.vdot(mha_forward(*values, H, causal), dout)))
        theta[i] = saved
        grad[i] = (totals[0] - totals[1]) / (2 * eps)
    return grad
# %% grade_id: mha_backward
def mha_backward(x, w_q, w_k, w_v, w_o, H, dout, causal=False):
    wq, wk, wv = (np.split(w, H, axis=1) for w in (w_q, w_k, w_v))
    wo = np.split(w_o, H, axis=0)
    dx = np.zeros_like(x)
    dwq, dwk, dwv, dwo = ([np.zeros_like(a) for a in parts] for parts in (wq, wk, wv, wo))
    for h in range(H):
        qh, kh, vh = x @ wq[h], x @ wk[h], x @ wv[h]
        P = _head_weights(qh, kh, causal)
        head = P @ vh
        dwo[h] = np.einsum("bld,blc->dc", head, dout)
        dhead = dout @ wo[h].T
        dvh = np.einsum("bls,bld->bsd", P, dhead)
        dP = np.einsum("bld,bsd->bls", dhead, vh)
        dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True)) / np.sqrt(qh.shape[-1])
        dqh, dkh = dS @ kh, np.einsum("bls,bld->bsd", dS, qh)
        dwq[h] = np.einsum("blc,bld->cd", x, dqh)
        dwk[h] = np.einsum("blc,bld->cd", x, dkh)
        dwv[h] = np.einsum("blc,bld->cd", x, dvh)
        dx += dqh @ wq[h].T + dkh @ wk[h].T + dvh @ wv[h].T
    return (dx, np.concatenate(dwq, axis=1), np.concatenate(dwk, axis=1),
            np.concatenate(dwv, axis=1), np.concatenate(dwo, axis=0))
# %% grade_id: gqa_forward
def gqa_forward(x, w_q, w_k, w_v, w_o, H, H_kv, causal=False):
    wq, wo = np.split(w_q, H, axis=1), np.split(w_o, H, axis=0)
    wk, wv = np.split(w_k, H_kv, axis=1), np.split(w_v, H_kv, axis=1)
    group = H // H_kv
    out = 0.0
    for h in range(H):
        P = _head_weights(x @ wq[h], x @ wk[h // group], causal)
        out = out + (P @ (x @ wv[h // group])) @ wo[h]
    return out
