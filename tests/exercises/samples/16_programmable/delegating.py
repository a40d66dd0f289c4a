# Calls the course library for Parts 2 and 4: no credit for those parts; Parts 1, 3 and 5 are the
# student's own and right.
# expect: test_sink_window_mod=2, test_block_mask_kinds=0, test_moba_selection=3, test_fp8_quantize_blocks=0, test_gated_attention_output=2
# %% grade_id: sink_window_mod
def sink_window_mod(b, h, q_idx, kv_idx, n_sink, window, offset=0):
    position = q_idx + offset
    return (kv_idx <= position) & ((kv_idx < n_sink) | (kv_idx > position - window))
# %% grade_id: block_mask_kinds
from attnmath import programmable as _pg

def block_mask_kinds(mask, block_q, block_k):
    bm = _pg.create_block_mask(lambda b, h, i, j: mask[i, j], 1, 1, *mask.shape, block_q=block_q, block_k=block_k)
    kinds = bm.kinds[0, 0].astype(np.int64)
    L, S = mask.shape
    _, work = _pg.block_sparse_attention(np.zeros((1, 1, L, 1)), np.zeros((1, 1, S, 1)), np.zeros((1, 1, S, 1)), bm)
    return kinds, int(work.scores)
# %% grade_id: moba_selection
def moba_selection(q, k, block, top_k):
    L = q.shape[0]
    means = np.stack([k[s:s + block].mean(axis=0) for s in range(0, L, block)])
    scores = q @ means.T
    keys = np.zeros((L, L), dtype=bool)
    for t in range(L):
        own = t // block
        for c in np.argsort(-scores[t, :own], kind="stable")[:top_k - 1]:
            keys[t, c * block:(c + 1) * block] = True
        keys[t, own * block:t + 1] = True
    return keys
# %% grade_id: fp8_quantize_blocks
import attnmath.programmable as pg

def fp8_quantize_blocks(x, block):
    return pg.fp8_quantize(x, "e4m3", block=block)
# %% grade_id: gated_attention_output
def gated_attention_output(q, k, v, gate_logits, causal):
    z = q @ k.T / np.sqrt(q.shape[1])
    if causal:
        z = np.where(np.tri(*z.shape, dtype=bool), z, -np.inf)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return (p @ v) * (0.5 + 0.5 * np.tanh(0.5 * gate_logits))
