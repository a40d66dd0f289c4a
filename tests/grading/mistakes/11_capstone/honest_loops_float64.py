# honest: everything cast to float64 first, attention as an explicit loop over heads with column slices, np.logaddexp.reduce for the log-sum-exp
# part: none
# %% grade_id: layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    x64 = np.array(x, dtype=np.float64)
    centred = x64 - np.mean(x64, axis=-1, keepdims=True)
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    normed = centred / np.sqrt(variance + eps)
    return normed * np.array(gamma, dtype=np.float64) + np.array(beta, dtype=np.float64)
# %% grade_id: feed_forward
def feed_forward(x, w_1, b_1, w_2, b_2):
    hidden = np.array(x, dtype=np.float64) @ np.array(w_1, dtype=np.float64) + b_1
    hidden[hidden < 0] = 0.0
    return hidden @ np.array(w_2, dtype=np.float64) + b_2
# %% grade_id: encoder_block
def softmax_last(s):
    s = s - np.max(s, axis=-1, keepdims=True)
    e = np.exp(s)
    return e / np.sum(e, axis=-1, keepdims=True)


def multi_head_attention(x, P, H, mask):
    B, L, C = x.shape
    D = C // H
    Q = x @ P["w_q"] + P["b_q"]
    K = x @ P["w_k"] + P["b_k"]
    V = x @ P["w_v"] + P["b_v"]
    m = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), (B, H, L, L))
    outs = []
    for h in range(H):
        cols = slice(h * D, (h + 1) * D)
        s = np.einsum("bld,bsd->bls", Q[..., cols], K[..., cols]) / np.sqrt(D)
        if m is not None:
            s = np.where(m[:, h], s, -np.inf)
        outs.append(softmax_last(s) @ V[..., cols])
    return np.concatenate(outs, axis=-1) @ P["w_o"] + P["b_o"]


def encoder_block(x, params, H, mask=None):
    P = {name: np.array(val, dtype=np.float64) for name, val in params.items()}
    x = np.array(x, dtype=np.float64)
    Y = layer_norm(x + multi_head_attention(x, P, H, mask), P["ln1_gamma"], P["ln1_beta"], 1e-5)
    out = layer_norm(Y + feed_forward(Y, P["w_1"], P["b_1"], P["w_2"], P["b_2"]),
                     P["ln2_gamma"], P["ln2_beta"], 1e-5)
    return out
# %% grade_id: loss_and_accuracy
def loss_and_accuracy(logits, labels):
    z = np.array(logits, dtype=np.float64)
    total, correct = 0.0, 0
    for n in range(z.shape[0]):
        y = int(labels[n])
        total += np.logaddexp.reduce(z[n]) - z[n, y]
        correct += int(np.argmax(z[n]) == y)
    N = z.shape[0]
    return float(total / N), float(correct / N)
