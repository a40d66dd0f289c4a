# A correct answer written differently: its own forward pass, einsum, the row sums of the softmax
# step as rowsum(dO * O), a flat-index difference loop, and the dropout folded into the weights.
# expect: test_attention_backward=4, test_masked_attention_backward=3, test_numerical_attention_gradient=2, test_dropout_attention_backward=3
# %% grade_id: attention_backward
def _weights(q, k, mask=None):
    z = np.einsum("ld,sd->ls", q, k) / np.sqrt(q.shape[1])
    if mask is not None:
        z = np.where(mask, z, -np.inf)
    rows = np.isfinite(z).any(axis=1)
    z = np.where(rows[:, None], z, 0.0)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z) * rows[:, None]
    s = e.sum(axis=1, keepdims=True)
    return e / np.where(s > 0, s, 1.0)

def _backward(P, q, k, v, dout):
    out = P @ v
    dv = np.einsum("ls,la->sa", P, dout)
    dP = np.einsum("la,sa->ls", dout, v)
    dZ = P * (dP - np.einsum("la,la->l", dout, out)[:, None])
    c = 1.0 / np.sqrt(q.shape[1])
    return c * np.einsum("ls,sd->ld", dZ, k), c * np.einsum("ls,ld->sd", dZ, q), dv

def attention_backward(q, k, v, dout):
    return _backward(_weights(q, k), q, k, v, dout)
# %% grade_id: masked_attention_backward
def masked_attention_backward(q, k, v, mask, dout):
    return _backward(_weights(q, k, mask), q, k, v, dout)
# %% grade_id: numerical_attention_gradient
def numerical_attention_gradient(q, k, v, w, wrt, eps=1e-6):
    names = ("q", "k", "v")
    base = [np.array(a, dtype=np.float64) for a in (q, k, v)]
    target = names.index(wrt)
    flat = base[target].reshape(-1)
    grad = np.empty(flat.size)
    for i in range(flat.size):
        values = []
        for sign in (1.0, -1.0):
            trial = [b.copy() for b in base]
            trial[target].reshape(-1)[i] += sign * eps
            values.append(np.sum(w * (_weights(trial[0], trial[1]) @ trial[2])))
        grad[i] = (values[0] - values[1]) / (2 * eps)
    return grad.reshape(base[target].shape)
# %% grade_id: dropout_attention_backward
def dropout_attention_backward(q, k, v, keep, p, dout):
    P = _weights(q, k)
    R = keep.astype(np.float64) / (1.0 - p)
    dv = (R * P).T @ dout
    dP = R * (dout @ v.T)
    dZ = P * dP - P * np.sum(P * dP, axis=1, keepdims=True)
    c = 1.0 / np.sqrt(q.shape[1])
    return (c * dZ @ k, c * dZ.T @ q, dv)
