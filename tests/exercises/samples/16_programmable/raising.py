# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_sink_window_mod=0, test_block_mask_kinds=0, test_moba_selection=0, test_fp8_quantize_blocks=0, test_gated_attention_output=0
# %% grade_id: sink_window_mod
def sink_window_mod(b, h, q_idx, kv_idx, n_sink, window, offset=0):
    raise NotImplementedError()
# %% grade_id: block_mask_kinds
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: moba_selection
def moba_selection(q, k, block, top_k):
    return None
# %% grade_id: fp8_quantize_blocks
def fp8_quantize_blocks(x, block):
    return np.zeros(3)
# %% grade_id: gated_attention_output
def gated_attention_output(q, k, v, gate_logits, causal):
    return q @ k.T
