# Calls the course library or torch instead of implementing the mechanism: no credit for those
# parts. The block calls the delegating layer norm, so it gets none either; Part 4 is its own.
# expect: test_layer_norm=0, test_feed_forward=0, test_encoder_block=0, test_loss_and_accuracy=2
# %% grade_id: layer_norm
from attnmath.encoder import layer_norm as _library_layer_norm


def layer_norm(x, gamma, beta, eps=1e-5):
    return _library_layer_norm(x, gamma, beta, eps=eps)
# %% grade_id: feed_forward
import torch


def feed_forward(x, w_1, b_1, w_2, b_2):
    t = torch.from_numpy(np.asarray(x, dtype=float))
    hidden = torch.relu(t @ torch.from_numpy(w_1) + torch.from_numpy(b_1))
    return (hidden @ torch.from_numpy(w_2) + torch.from_numpy(b_2)).numpy()
# %% grade_id: encoder_block
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
    y = layer_norm(x + a, params["ln1_gamma"], params["ln1_beta"])
    f = np.maximum(y @ params["w_1"] + params["b_1"], 0) @ params["w_2"] + params["b_2"]
    return layer_norm(y + f, params["ln2_gamma"], params["ln2_beta"])
# %% grade_id: loss_and_accuracy
def loss_and_accuracy(logits, labels):
    z = np.asarray(logits, dtype=float)
    m = z.max(-1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(z - m).sum(-1))
    return float(np.mean(lse - z[np.arange(len(z)), labels])), float(np.mean(z.argmax(-1) == labels))
