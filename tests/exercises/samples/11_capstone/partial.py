# Part 1 uses the one-pass variance E[x^2] - mean^2, which fails for tokens far from the origin;
# Part 2 is right; Part 3 is right and brings its own layer norm; Part 4 takes the log of a
# softmax, which overflows for large logits.
# expect: test_layer_norm=0, test_feed_forward=1, test_encoder_block=4, test_loss_and_accuracy=0
# %% grade_id: layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = (x * x).mean(-1, keepdims=True) - mu * mu
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
# %% grade_id: feed_forward
def feed_forward(x, w_1, b_1, w_2, b_2):
    return np.maximum(x @ w_1 + b_1, 0) @ w_2 + b_2
# %% grade_id: encoder_block
def _ln(x, g, b):
    mu = x.mean(-1, keepdims=True)
    return g * (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) + b


def encoder_block(x, params, H, mask=None):
    B, L, C = x.shape
    D = C // H
    split = lambda t: t.reshape(B, L, H, D).transpose(0, 2, 1, 3)
    q = split(x @ params["w_q"] + params["b_q"])
    k = split(x @ params["w_k"] + params["b_k"])
    v = split(x @ params["w_v"] + params["b_v"])
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    a = (p @ v).transpose(0, 2, 1, 3).reshape(B, L, C) @ params["w_o"] + params["b_o"]
    y = _ln(x + a, params["ln1_gamma"], params["ln1_beta"])
    f = np.maximum(y @ params["w_1"] + params["b_1"], 0) @ params["w_2"] + params["b_2"]
    return _ln(y + f, params["ln2_gamma"], params["ln2_beta"])
# %% grade_id: loss_and_accuracy
def loss_and_accuracy(logits, labels):
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    loss = -np.log(p[np.arange(len(labels)), labels]).mean()
    return float(loss), float((p.argmax(-1) == labels).mean())
