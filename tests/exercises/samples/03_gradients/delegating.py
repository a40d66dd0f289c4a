# Uses torch autograd (Part 1) and the course library's central differences (Part 3) instead of
# implementing them: no credit for those parts. Parts 2 and 4 are correct NumPy answers.
# expect: test_attention_backward=0, test_masked_attention_backward=3, test_numerical_attention_gradient=0, test_dropout_attention_backward=3
# %% grade_id: attention_backward
import torch
import torch.nn.functional as F

def attention_backward(q, k, v, dout):
    qt, kt, vt = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    F.scaled_dot_product_attention(qt, kt, vt).backward(torch.from_numpy(dout))
    return qt.grad.numpy(), kt.grad.numpy(), vt.grad.numpy()
# %% grade_id: masked_attention_backward
def masked_attention_backward(q, k, v, mask, dout):
    _, P = attention_forward(q, k, v, mask)
    dP = dout @ v.T
    dZ = P * (dP - (P * dP).sum(axis=1, keepdims=True))
    s = 1 / np.sqrt(q.shape[1])
    return s * dZ @ k, s * dZ.T @ q, P.T @ dout
# %% grade_id: numerical_attention_gradient
from attnmath.testing import numerical_gradient

def numerical_attention_gradient(q, k, v, w, wrt, eps=1e-6):
    def loss(x):
        args = {"q": q, "k": k, "v": v, wrt: x}
        return np.sum(w * attention_forward(args["q"], args["k"], args["v"])[0])
    return numerical_gradient(loss, {"q": q, "k": k, "v": v}[wrt], eps=eps)
# %% grade_id: dropout_attention_backward
def dropout_attention_backward(q, k, v, keep, p, dout):
    _, P = attention_forward(q, k, v)
    R = keep / (1.0 - p)
    dP = (dout @ v.T) * R
    dZ = P * (dP - (P * dP).sum(axis=1, keepdims=True))
    s = 1 / np.sqrt(q.shape[1])
    return s * dZ @ k, s * dZ.T @ q, (P * R).T @ dout
