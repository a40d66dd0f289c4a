# %% grade_id: mha_forward
def _project(x, w, H):
    B, L, _ = x.shape
    return (x @ w).reshape(B, L, H, w.shape[1] // H).transpose(0, 2, 1, 3)


def _attend(q, k, v, causal):
    L = q.shape[-2]
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        logits = np.where(np.tril(np.ones((L, L), dtype=bool)), logits, -np.inf)
    logits -= logits.max(axis=-1, keepdims=True)
    w = np.exp(logits)
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    o = _attend(_project(x, w_q, H), _project(x, w_k, H), _project(x, w_v, H), causal)
    B, _, L, Dv = o.shape
    return o.transpose(0, 2, 1, 3).reshape(B, L, H * Dv) @ w_o
