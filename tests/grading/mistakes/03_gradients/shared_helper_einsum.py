# honest: one private helper for the softmax backward shared by all parts, einsum for every product, own forward pass with explicit NaN cleanup, numerical gradient on flattened copies with a preallocated loss function
# part: none
# %% grade_id: attention_backward
def _weights(q, k, mask=None):
    # my own forward: softmax of the scaled scores, NaN from empty rows replaced by 0
    z = np.einsum("ld,sd->ls", q, k) / np.sqrt(q.shape[1])
    if mask is not None:
        z = np.where(mask, z, -np.inf)
    with np.errstate(invalid="ignore"):
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        P = e / e.sum(axis=1, keepdims=True)
    return np.nan_to_num(P, nan=0.0)


def _backward_from(P, q, k, v, dP_tilde, dv):
    # shared tail: softmax backward then the two products with the scale
    row = np.einsum("ls,ls->l", P, dP_tilde)[:, None]
    dZ = P * (dP_tilde - row)
    scale = q.shape[1] ** -0.5
    return scale * np.einsum("ls,sd->ld", dZ, k), scale * np.einsum("ls,ld->sd", dZ, q), dv


def attention_backward(q, k, v, dout):
    P = _weights(q, k)
    dv = np.einsum("ls,lv->sv", P, dout)
    dP = np.einsum("lv,sv->ls", dout, v)
    return _backward_from(P, q, k, v, dP, dv)
# %% grade_id: masked_attention_backward
def masked_attention_backward(q, k, v, mask, dout):
    P = _weights(q, k, mask)
    dv = np.einsum("ls,lv->sv", P, dout)
    dP = np.einsum("lv,sv->ls", dout, v)
    return _backward_from(P, q, k, v, dP, dv)
# %% grade_id: numerical_attention_gradient
def numerical_attention_gradient(q, k, v, w, wrt, eps=1e-6):
    names = ("q", "k", "v")
    copies = [np.array(a, dtype=np.float64, copy=True) for a in (q, k, v)]
    target = copies[names.index(wrt)]
    flat = target.reshape(-1)  # a view on my copy
    grad = np.empty(flat.size)

    def L():
        return float(np.sum(attention_forward(*copies)[0] * w))

    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + eps
        up = L()
        flat[i] = keep - eps
        down = L()
        flat[i] = keep
        grad[i] = (up - down) / (2.0 * eps)
    return grad.reshape(target.shape)
# %% grade_id: dropout_attention_backward
def dropout_attention_backward(q, k, v, keep, p, dout):
    P = _weights(q, k)
    factor = np.where(keep, 1.0 / (1.0 - p), 0.0)
    dv = np.einsum("ls,lv->sv", factor * P, dout)
    dP = factor * np.einsum("lv,sv->ls", dout, v)
    return _backward_from(P, q, k, v, dP, dv)
