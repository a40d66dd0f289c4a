# Calls the course library for Parts 1, 3 and 5: no credit for those parts; Parts 2 and 4 are
# the student's own and right.
# expect: test_decay_mask=0, test_ssd_recurrent=3, test_ssd_chunked=0, test_delta_rule=2, test_wy_representation=0
# %% grade_id: decay_mask
from attnmath.recurrence import semiseparable_mask as _mask

def decay_mask(log_alpha):
    return _mask(log_alpha)
# %% grade_id: ssd_recurrent
def ssd_recurrent(q, k, v, log_alpha):
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        S = np.exp(log_alpha[t]) * S + np.outer(k[t], v[t])
        out[t] = S.T @ q[t] / np.sqrt(D)
    return out, S
# %% grade_id: ssd_chunked
import attnmath.recurrence as rec

def ssd_chunked(q, k, v, log_alpha, chunk_size):
    r = rec.ssd_chunked(q, k, v, log_alpha, chunk_size=chunk_size)
    return r.out, r.state
# %% grade_id: delta_rule
def delta_rule(q, k, v, beta, log_alpha):
    L, D = q.shape
    S = np.zeros((D, v.shape[1]))
    out = np.zeros((L, v.shape[1]))
    for t in range(L):
        S = np.exp(log_alpha[t]) * S
        S = S + beta[t] * np.outer(k[t], v[t] - S.T @ k[t])
        out[t] = S.T @ q[t] / np.sqrt(D)
    return out, S
# %% grade_id: wy_representation
from attnmath.recurrence import wy_representation as _wy

def wy_representation(k, v, beta):
    return tuple(_wy(k, v, beta))
