# bug: perturbs the caller's array in place with += eps / -= 2 eps / += eps and no copy, so the input is modified (rounding does not restore it exactly)
# part: numerical_attention_gradient
# %% grade_id: attention_backward
def attention_backward(q, k, v, dout):
    s = 1.0 / np.sqrt(q.shape[-1])
    _, P = attention_forward(q, k, v)
    dv = P.T @ dout
    dP = dout @ v.T
    dZ = P * (dP - np.sum(P * dP, axis=-1, keepdims=True))
    dq = s * (dZ @ k)
    dk = s * (dZ.T @ q)
    return dq, dk, dv
# %% grade_id: masked_attention_backward
def masked_attention_backward(q, k, v, mask, dout):
    s = 1.0 / np.sqrt(q.shape[-1])
    _, P = attention_forward(q, k, v, mask)  # masked weights and empty rows are exact zeros
    dv = P.T @ dout
    dP = dout @ v.T
    dZ = P * (dP - np.sum(P * dP, axis=-1, keepdims=True))  # P = 0 makes dZ = 0 there
    dq = s * (dZ @ k)
    dk = s * (dZ.T @ q)
    return dq, dk, dv
# %% grade_id: numerical_attention_gradient
def numerical_attention_gradient(q, k, v, w, wrt, eps=1e-6):
    args = {"q": q, "k": k, "v": v}
    x = args[wrt]
    grad = np.zeros(x.shape)

    def loss():
        out, _ = attention_forward(args["q"], args["k"], args["v"])
        return np.sum(w * out)

    for idx in np.ndindex(x.shape):
        x[idx] += eps
        plus = loss()
        x[idx] -= 2 * eps
        minus = loss()
        x[idx] += eps  # put it back
        grad[idx] = (plus - minus) / (2 * eps)
    return grad
# %% grade_id: dropout_attention_backward
def dropout_attention_backward(q, k, v, keep, p, dout):
    s = 1.0 / np.sqrt(q.shape[-1])
    _, P = attention_forward(q, k, v)
    R = keep.astype(np.float64) / (1.0 - p)
    P_drop = R * P
    dv = P_drop.T @ dout
    dP_drop = dout @ v.T
    dP = R * dP_drop  # back through the fixed linear map P -> R * P / (1 - p)
    dZ = P * (dP - np.sum(P * dP, axis=-1, keepdims=True))  # the softmax step uses P itself
    dq = s * (dZ @ k)
    dk = s * (dZ.T @ q)
    return dq, dk, dv
