# Calls the course library for Parts 1 and 5: no credit for those parts. Part 4 forgets the
# 1/sqrt(D) scale, which changes the masked gaps.
# expect: test_gaussian_smoother=0, test_linear_self_attention=2, test_icl_prediction=2, test_equivariance_gap=0, test_multi_head_rank=0
# %% grade_id: gaussian_smoother
from attnmath.theory import gaussian_kernel_smoother

def gaussian_smoother(x_query, x_keys, y, bandwidth):
    return gaussian_kernel_smoother(x_query, x_keys, y, bandwidth)
# %% grade_id: linear_self_attention
def linear_self_attention(z, w_q, w_k, w_v, p):
    return z + ((z @ w_q.T) @ (z @ w_k.T).T) @ (z @ w_v.T) @ p.T
# %% grade_id: icl_prediction
def icl_prediction(X, y, x_query, lr):
    N, d = X.shape
    z = np.vstack([np.hstack([X, y[:, None]]), np.hstack([x_query, np.zeros((len(x_query), 1))])])
    a = np.diag(np.r_[np.ones(d), 0.0])
    b = np.diag(np.r_[np.zeros(d), 1.0])
    return linear_self_attention(z, a, a, b, lr / N * np.eye(d + 1))[N:, -1]
# %% grade_id: equivariance_gap
def equivariance_gap(q, k, v, perm, mask=None):
    def attend(q, k, v):
        s = q @ np.swapaxes(k, -1, -2)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        return w / w.sum(axis=-1, keepdims=True) @ v

    return float(np.abs(attend(q[..., perm, :], k[..., perm, :], v[..., perm, :]) - attend(q, k, v)[..., perm, :]).max())
# %% grade_id: multi_head_rank
import attnmath.theory

def multi_head_rank(probs, v, w_o):
    return attnmath.theory.multi_head_output_rank(probs, v, w_o)
