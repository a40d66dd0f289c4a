# honest: float128 layer-norm statistics cast back, np.logaddexp.reduce for the log-sum-exp, an explicit per-head loop in the block
# part: none
# %% grade_id: layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    wide = np.asarray(x, dtype=np.longdouble)
    centred = wide - wide.mean(axis=-1, keepdims=True)
    scale = 1.0 / np.sqrt(np.mean(centred * centred, axis=-1, keepdims=True) + eps)
    return (centred * scale).astype(np.float64) * gamma + beta
# %% grade_id: feed_forward
def feed_forward(x, w_1, b_1, w_2, b_2):
    hidden = np.einsum("...c,cf->...f", x, w_1) + b_1
    hidden[hidden < 0] = 0.0
    return np.einsum("...f,fc->...c", hidden, w_2) + b_2
# %% grade_id: encoder_block
def encoder_block(x, params, H, mask=None):
    B, L, C = x.shape
    D = C // H
    q = x @ params["w_q"] + params["b_q"]
    k = x @ params["w_k"] + params["b_k"]
    v = x @ params["w_v"] + params["b_v"]
    allowed = np.ones((B, H, L, L), dtype=bool) if mask is None else np.broadcast_to(mask, (B, H, L, L))
    concat = np.empty_like(q)
    for h in range(H):
        cols = slice(h * D, (h + 1) * D)
        s = np.einsum("bld,bmd->blm", q[..., cols], k[..., cols]) / np.sqrt(D)
        s = np.where(allowed[:, h], s, -np.inf)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        concat[..., cols] = (w / w.sum(axis=-1, keepdims=True)) @ v[..., cols]
    y = layer_norm(x + concat @ params["w_o"] + params["b_o"], params["ln1_gamma"], params["ln1_beta"])
    ffn = feed_forward(y, params["w_1"], params["b_1"], params["w_2"], params["b_2"])
    return layer_norm(y + ffn, params["ln2_gamma"], params["ln2_beta"])
# %% grade_id: loss_and_accuracy
def loss_and_accuracy(logits, labels):
    z = np.asarray(logits, dtype=np.float64)
    rows = np.arange(z.shape[0])
    nll = np.logaddexp.reduce(z, axis=1) - z[rows, labels]
    hits = sum(int(np.argmax(z[n]) == labels[n]) for n in rows)
    return float(nll.mean()), hits / len(rows)
