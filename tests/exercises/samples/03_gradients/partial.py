# Part 1 is right; Part 2 computes the weights with a plain softmax of -inf scores (NaN on the empty
# row); Part 3 divides by eps instead of 2 eps; Part 4 is right.
# expect: test_attention_backward=4, test_masked_attention_backward=0, test_numerical_attention_gradient=0, test_dropout_attention_backward=3
# %% grade_id: attention_backward
def attention_backward(q, k, v, dout):
    _, P = attention_forward(q, k, v)
    dP = dout @ v.T
    dZ = P * (dP - (P * dP).sum(axis=1, keepdims=True))
    s = q.shape[1] ** -0.5
    return s * dZ @ k, s * dZ.T @ q, P.T @ dout
# %% grade_id: masked_attention_backward
def masked_attention_backward(q, k, v, mask, dout):
    z = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(z - z.max(axis=1, keepdims=True))
        P = e / e.sum(axis=1, keepdims=True)
    dP = dout @ v.T
    dZ = P * (dP - (P * dP).sum(axis=1, keepdims=True))
    s = q.shape[1] ** -0.5
    return s * dZ @ k, s * dZ.T @ q, P.T @ dout
# %% grade_id: numerical_attention_gradient
def numerical_attention_gradient(q, k, v, w, wrt, eps=1e-6):
    args = {"q": q.copy(), "k": k.copy(), "v": v.copy()}
    x = args[wrt]
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        x[i] += eps
        up = np.sum(w * attention_forward(args["q"], args["k"], args["v"])[0])
        x[i] -= 2 * eps
        down = np.sum(w * attention_forward(args["q"], args["k"], args["v"])[0])
        x[i] += eps
        g[i] = (up - down) / eps
    return g
# %% grade_id: dropout_attention_backward
def dropout_attention_backward(q, k, v, keep, p, dout):
    _, P = attention_forward(q, k, v)
    scale = keep / (1 - p)
    dP = (dout @ v.T) * scale
    dZ = P * (dP - (P * dP).sum(axis=1, keepdims=True))
    s = q.shape[1] ** -0.5
    return s * dZ @ k, s * dZ.T @ q, (P * scale).T @ dout
