# bug: recomputes P with its own forward that fills masked scores with -1e9, so a fully masked row gets uniform weights and passes gradient to dq, dk and dv
# part: masked_attention_backward
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
    scores = q @ k.T * s
    scores = np.where(mask, scores, -1e9)  # masked keys get a huge negative score
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    P = e / e.sum(axis=-1, keepdims=True)
    dv = P.T @ dout
    dP = dout @ v.T
    dZ = P * (dP - np.sum(P * dP, axis=-1, keepdims=True))
    dq = s * (dZ @ k)
    dk = s * (dZ.T @ q)
    return dq, dk, dv
# %% grade_id: numerical_attention_gradient
def numerical_attention_gradient(q, k, v, w, wrt, eps=1e-6):
    args = {"q": np.array(q, dtype=np.float64), "k": np.array(k, dtype=np.float64),
            "v": np.array(v, dtype=np.float64)}  # copies: the inputs stay untouched
    x = args[wrt]
    grad = np.zeros_like(x)

    def loss():
        out, _ = attention_forward(args["q"], args["k"], args["v"])
        return np.sum(w * out)

    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        plus = loss()
        x[idx] = old - eps
        minus = loss()
        x[idx] = old
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
