# bug: the softmax step of the backward pass uses the dropped weights P~ = R P / (1 - p) instead of P
# part: dropout_attention_backward
# %% grade_id: attention_backward
def attention_backward(q, k, v, dout):
    s = 1.0 / np.sqrt(q.shape[-1])
    _, P = attention_forward(q, k, v)
    dv = P.T @ dout
    dP = dout @ v.T
    dZ = P * (dP - np.sum(P * dP, axis=-1, keepdims=True))
    dq = s * dZ @ k
    dk = s * dZ.T @ q
    return dq, dk, dv
# %% grade_id: masked_attention_backward
def masked_attention_backward(q, k, v, mask, dout):
    s = 1.0 / np.sqrt(q.shape[-1])
    _, P = attention_forward(q, k, v, mask)     # zero weights where masked, zero rows when empty
    dv = P.T @ dout
    dP = dout @ v.T
    dZ = P * (dP - np.sum(P * dP, axis=-1, keepdims=True))
    return s * dZ @ k, s * dZ.T @ q, dv
# %% grade_id: numerical_attention_gradient
def numerical_attention_gradient(q, k, v, w, wrt, eps=1e-6):
    args = {"q": np.array(q, dtype=np.float64), "k": np.array(k, dtype=np.float64),
            "v": np.array(v, dtype=np.float64)}
    x = args[wrt]
    grad = np.zeros_like(x)

    def loss():
        return np.sum(w * attention_forward(args["q"], args["k"], args["v"])[0])

    for index in np.ndindex(x.shape):
        old = x[index]
        x[index] = old + eps
        up = loss()
        x[index] = old - eps
        down = loss()
        x[index] = old
        grad[index] = (up - down) / (2 * eps)
    return grad
# %% grade_id: dropout_attention_backward
def dropout_attention_backward(q, k, v, keep, p, dout):
    s = 1.0 / np.sqrt(q.shape[-1])
    _, P = attention_forward(q, k, v)
    Pt = keep * P / (1.0 - p)
    dv = Pt.T @ dout
    dPt = dout @ v.T
    dZ = Pt * (dPt - np.sum(Pt * dPt, axis=-1, keepdims=True))
    return s * dZ @ k, s * dZ.T @ q, dv
