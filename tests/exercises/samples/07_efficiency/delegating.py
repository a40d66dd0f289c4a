# Parts 1 and 2 call the course library or torch instead of implementing the mechanism: no credit
# for those; the other parts are implemented and earn their points.
# expect: test_chunked_attention=0, test_linear_attention=0, test_causal_linear_attention=3, test_decode_step_window=2, test_attention_costs=2
# %% grade_id: chunked_attention
from attnmath.chunked import chunked_attention as _library_chunked

def chunked_attention(q, k, v, chunk_size, mask=None):
    return _library_chunked(q, k, v, chunk_size=chunk_size, mask=mask)
# %% grade_id: linear_attention
import torch

def linear_attention(q, k, v):
    tq, tk, tv = (torch.from_numpy(np.asarray(a, dtype=np.float64)) for a in (q, k, v))
    fq, fk = torch.nn.functional.elu(tq) + 1, torch.nn.functional.elu(tk) + 1
    num = fq @ (fk.transpose(-1, -2) @ tv)
    return (num / (fq @ fk.sum(-2).unsqueeze(-1))).numpy()
# %% grade_id: causal_linear_attention
def causal_linear_attention(q, k, v):
    fq = np.where(q > 0, q + 1.0, np.exp(np.minimum(q, 0.0)))
    fk = np.where(k > 0, k + 1.0, np.exp(np.minimum(k, 0.0)))
    S = np.cumsum(fk[..., :, :, None] * v[..., :, None, :], axis=-3)
    num = np.einsum("...ld,...ldv->...lv", fq, S)
    den = np.einsum("...ld,...ld->...l", fq, np.cumsum(fk, axis=-2))
    return num / den[..., None]
# %% grade_id: decode_step_window
def decode_step_window(q_t, k_cache, v_cache, length, window):
    lo = max(0, length - window)
    s = q_t @ np.swapaxes(k_cache[..., lo:length, :], -1, -2) / np.sqrt(q_t.shape[-1])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True) @ v_cache[..., lo:length, :]
# %% grade_id: attention_costs
def attention_costs(ns, d, bytes_per_elem=4):
    return np.array([[4 * n * n * d, 4 * n * d * (d + 1), n * n * bytes_per_elem] for n in ns])
