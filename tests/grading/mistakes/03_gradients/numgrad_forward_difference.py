# bug: a one-sided forward difference (L(x + eps) - L(x)) / eps is used instead of the central difference
# part: numerical_attention_gradient
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
    args = {"q": np.array(q, dtype=float), "k": np.array(k, dtype=float), "v": np.array(v, dtype=float)}
    base = np.sum(w * attention_forward(args["q"], args["k"], args["v"])[0])
    x = args[wrt]
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        old = x[index]
        x[index] = old + eps
        grad[index] = (np.sum(w * attention_forward(args["q"], args["k"], args["v"])[0]) - base) / eps
        x[index] = old
    return grad
# %% grade_id: dropout_attention_backward
def dropout_attention_backward(q, k, v, keep, p, dout):
    s = 1.0 / np.sqrt(q.shape[-1])
    _, P = attention_forward(q, k, v)
    R = keep / (1.0 - p)
    dv = (R * P).T @ dout
    dP = R * (dout @ v.T)                   # back through the fixed dropout map
    dZ = P * (dP - np.sum(P * dP, axis=-1, keepdims=True))
    return s * dZ @ k, s * dZ.T @ q, dv
