# honest: einsum for every product, the gradients through one shared helper, the numerical gradient on a flat private copy
# part: none
# %% grade_id: attention_backward
def _backward_from_weights(q, k, v, P, dP_scale, dout):
    s = q.shape[-1] ** -0.5
    dv = np.einsum("ls,la->sa", P * dP_scale, dout)
    dP = np.einsum("la,sa->ls", dout, v) * dP_scale
    dZ = P * (dP - np.einsum("ls,ls->l", P, dP)[:, None])
    return np.einsum("ls,sd->ld", dZ, k) * s, np.einsum("ls,ld->sd", dZ, q) * s, dv


def attention_backward(q, k, v, dout):
    return _backward_from_weights(q, k, v, attention_forward(q, k, v)[1], 1.0, dout)
# %% grade_id: masked_attention_backward
def masked_attention_backward(q, k, v, mask, dout):
    return _backward_from_weights(q, k, v, attention_forward(q, k, v, mask)[1], 1.0, dout)
# %% grade_id: numerical_attention_gradient
def numerical_attention_gradient(q, k, v, w, wrt, eps=1e-6):
    names = ("q", "k", "v")
    chosen = np.array({"q": q, "k": k, "v": v}[wrt], dtype=np.float64)
    flat = chosen.reshape(-1)            # a view of the private copy
    grad = np.empty(flat.size)

    def loss():
        given = {"q": q, "k": k, "v": v}
        given[wrt] = chosen
        return float(np.einsum("la,la->", w, attention_forward(*(given[n] for n in names))[0]))

    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + eps
        up = loss()
        flat[i] = keep - eps
        grad[i] = (up - loss()) / (2.0 * eps)
        flat[i] = keep
    return grad.reshape(chosen.shape)
# %% grade_id: dropout_attention_backward
def dropout_attention_backward(q, k, v, keep, p, dout):
    return _backward_from_weights(q, k, v, attention_forward(q, k, v)[1], keep / (1.0 - p), dout)
