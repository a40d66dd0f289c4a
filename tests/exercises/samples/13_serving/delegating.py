# Calls the course library for Parts 1 and 4: no credit for those parts. Part 3 up-projects the
# whole cache (the paper's form), which is right on small inputs but exceeds the memory limit.
# expect: test_gather_sequence=0, test_merge_states=3, test_mla_absorbed=0, test_quantize_int8=0
# %% grade_id: gather_sequence
from attnmath.serving import gather_blocks

def gather_sequence(pool, block_table, length):
    return gather_blocks(pool, np.asarray(block_table, dtype=np.int64), length)
# %% grade_id: merge_states
def merge_states(states):
    lses = np.stack([np.asarray(l, dtype=np.float64) for _, l in states])  # (n, ..., L)
    outs = np.stack([np.asarray(o, dtype=np.float64) for o, _ in states])  # (n, ..., L, D_v)
    m = lses.max(axis=0)
    m = np.where(np.isneginf(m), 0.0, m)
    w = np.exp(lses - m)
    total = w.sum(axis=0)
    safe = np.where(total > 0, total, 1.0)
    with np.errstate(divide="ignore"):
        lse = np.where(total > 0, m + np.log(safe), -np.inf)
    return (w[..., None] * outs).sum(axis=0) / safe[..., None], lse
# %% grade_id: mla_absorbed
def mla_absorbed(x, c_kv, w_q, w_uk, w_uv, w_o):
    D = w_q.shape[2]
    q = np.einsum("lc,hcd->hld", x, w_q)
    k = np.einsum("sc,hcd->hsd", c_kv, w_uk)  # (H, S, D): the whole cache up-projected
    v = np.einsum("sc,hcd->hsd", c_kv, w_uv)
    z = q @ np.swapaxes(k, 1, 2) / np.sqrt(D)
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hld,hdc->lc", p @ v, w_o)
# %% grade_id: quantize_int8_per_channel
import attnmath.serving

def quantize_int8_per_channel(x):
    qt = attnmath.serving.quantize_symmetric(x, bits=8, per="channel")
    return qt.codes, qt.scale.reshape(-1)
