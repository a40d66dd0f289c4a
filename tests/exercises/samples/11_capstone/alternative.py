# A correct answer written differently: np.var and einsum, an additive mask bias, clip for the
# ReLU, a log-softmax gathered with take_along_axis.
# expect: test_layer_norm=2, test_feed_forward=1, test_encoder_block=4, test_loss_and_accuracy=2
# %% grade_id: layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    centred = x - np.mean(x, axis=-1, keepdims=True)
    return centred / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps) * gamma + beta
# %% grade_id: feed_forward
def feed_forward(x, w_1, b_1, w_2, b_2):
    hidden = np.clip(np.einsum("...c,cf->...f", x, w_1) + b_1, 0.0, None)
    return np.einsum("...f,fc->...c", hidden, w_2) + b_2
# %% grade_id: encoder_block
def _self_attention(x, p, H, mask):
    B, L, C = x.shape
    D = C // H
    q, k, v = ((x @ p["w_" + n] + p["b_" + n]).reshape(B, L, H, D) for n in "qkv")   # (B, L, H, D)
    s = np.einsum("blhd,bmhd->bhlm", q, k) / np.sqrt(D)
    if mask is not None:
        s = s + np.where(np.broadcast_to(mask, s.shape), 0.0, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    s = s / s.sum(-1, keepdims=True)
    return np.einsum("bhlm,bmhd->blhd", s, v).reshape(B, L, C) @ p["w_o"] + p["b_o"]


def encoder_block(x, params, H, mask=None):
    y = layer_norm(x + _self_attention(x, params, H, mask), params["ln1_gamma"], params["ln1_beta"])
    y2 = y + feed_forward(y, params["w_1"], params["b_1"], params["w_2"], params["b_2"])
    return layer_norm(y2, params["ln2_gamma"], params["ln2_beta"])
# %% grade_id: loss_and_accuracy
def loss_and_accuracy(logits, labels):
    z = np.array(logits, dtype=float)
    z = z - z.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    nll = -np.take_along_axis(log_p, np.asarray(labels)[:, None], axis=1)
    return nll.mean().item(), (log_p.argmax(axis=1) == labels).mean().item()
