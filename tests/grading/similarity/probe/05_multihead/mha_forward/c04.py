# %% grade_id: mha_forward
def _head(Q, K, V, h, width, vwidth, causal):
    n = Q.shape[1]
    qh = Q[:, :, h * width:(h + 1) * width]
    kh = K[:, :, h * width:(h + 1) * width]
    vh = V[:, :, h * vwidth:(h + 1) * vwidth]
    att = qh @ np.swapaxes(kh, 1, 2) / np.sqrt(width)
    if causal:
        att = att + np.triu(np.full((n, n), -np.inf), k=1)
    att = np.exp(att - np.max(att, axis=-1, keepdims=True))
    att = att / np.sum(att, axis=-1, keepdims=True)
    return att @ vh


def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    width = w_q.shape[1] // H
    vwidth = w_v.shape[1] // H
    Q, K, V = x @ w_q, x @ w_k, x @ w_v
    heads = [_head(Q, K, V, h, width, vwidth, causal) for h in range(H)]
    return np.concatenate(heads, axis=-1) @ w_o
