# Calls the course library or torch instead of implementing the mechanism: no credit for those
# parts. The numerical gradient differentiates the delegating forward pass, so it gets none either.
# expect: test_split_heads=1, test_merge_heads=1, test_mha_forward=0, test_numerical_gradient=0, test_mha_backward=4, test_gqa_forward=0
# %% grade_id: split_heads
def split_heads(x, H):
    B, L, C = x.shape
    return x.reshape(B, L, H, C // H).transpose(0, 2, 1, 3)
# %% grade_id: merge_heads
def merge_heads(x):
    B, H, L, D = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, H * D)
# %% grade_id: mha_forward
from attnmath.multihead import MultiHeadParams, self_attention


def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    L = x.shape[1]
    mask = np.tril(np.ones((L, L), bool)) if causal else None
    return self_attention(x, MultiHeadParams(w_q, w_k, w_v, w_o), H, mask=mask)[0]
# %% grade_id: numerical_gradient
def numerical_gradient(x, w_q, w_k, w_v, w_o, H, dout, wrt, causal=False, eps=1e-6):
    args = {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "w_o": w_o}
    theta = np.array(args[wrt], dtype=float)
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
def mha_backward(x, w_q, w_k, w_v, w_o, H, dout, causal=False):
    L = x.shape[1]
    q, k, v = split_heads(x @ w_q, H), split_heads(x @ w_k, H), split_heads(x @ w_v, H)
    c = 1 / np.sqrt(q.shape[-1])
    s = q @ k.swapaxes(-1, -2) * c
    if causal:
        s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dh = split_heads(dout @ w_o.T, H)
    dp = dh @ v.swapaxes(-1, -2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq = merge_heads(ds @ k * c)
    dk = merge_heads(ds.swapaxes(-1, -2) @ q * c)
    dv = merge_heads(p.swapaxes(-1, -2) @ dh)
    dw = lambda a, b: np.einsum("blc,blk->ck", a, b)
    return (dq @ w_q.T + dk @ w_k.T + dv @ w_v.T, dw(x, dq), dw(x, dk), dw(x, dv),
            dw(merge_heads(p @ v), dout))
# %% grade_id: gqa_forward
import torch
import torch.nn.functional as F


def gqa_forward(x, w_q, w_k, w_v, w_o, H, H_kv, causal=False):
    q = torch.from_numpy(split_heads(x @ w_q, H))
    k = torch.from_numpy(split_heads(x @ w_k, H_kv))
    v = torch.from_numpy(split_heads(x @ w_v, H_kv))
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True).numpy()
    return merge_heads(heads) @ w_o
