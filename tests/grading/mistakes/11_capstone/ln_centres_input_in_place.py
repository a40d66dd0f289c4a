# bug: x is centred in place with x -= mu to save memory, which overwrites the caller's array
# part: layer_norm
# %% grade_id: layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    x -= x.mean(axis=-1, keepdims=True)
    var = (x ** 2).mean(axis=-1, keepdims=True)
    return gamma * x / np.sqrt(var + eps) + beta
# %% grade_id: feed_forward
def feed_forward(x, w_1, b_1, w_2, b_2):
    return np.maximum(0.0, x @ w_1 + b_1) @ w_2 + b_2
# %% grade_id: encoder_block
def _ln(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps) + beta


def _self_attention(x, params, H, mask):
    B, L, C = x.shape
    D = C // H

    def heads(a):
        return a.reshape(B, L, H, D).transpose(0, 2, 1, 3)

    q = heads(x @ params["w_q"] + params["b_q"])
    k = heads(x @ params["w_k"] + params["b_k"])
    v = heads(x @ params["w_v"] + params["b_v"])
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(D)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    out = (e / e.sum(axis=-1, keepdims=True)) @ v
    return out.transpose(0, 2, 1, 3).reshape(B, L, C) @ params["w_o"] + params["b_o"]


def encoder_block(x, params, H, mask=None):
    y = _ln(x + _self_attention(x, params, H, mask), params["ln1_gamma"], params["ln1_beta"])
    hidden = np.maximum(0.0, y @ params["w_1"] + params["b_1"]) @ params["w_2"] + params["b_2"]
    return _ln(y + hidden, params["ln2_gamma"], params["ln2_beta"])
# %% grade_id: loss_and_accuracy
def loss_and_accuracy(logits, labels):
    z = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels)
    N = z.shape[0]
    top = z.max(axis=1, keepdims=True)
    lse = top[:, 0] + np.log(np.exp(z - top).sum(axis=1))
    loss = np.mean(lse - z[np.arange(N), labels])
    accuracy = np.mean(np.argmax(z, axis=1) == labels)
    return float(loss), float(accuracy)
