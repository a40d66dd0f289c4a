# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_chunked_attention=0, test_linear_attention=0, test_causal_linear_attention=0, test_decode_step_window=0, test_attention_costs=0
# %% grade_id: chunked_attention
def chunked_attention(q, k, v, chunk_size, mask=None):
    raise ValueError("not done yet")
# %% grade_id: linear_attention
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: causal_linear_attention
def causal_linear_attention(q, k, v):
    return None
# %% grade_id: decode_step_window
def decode_step_window(q_t, k_cache, v_cache, length, window):
    raise NotImplementedError()
# %% grade_id: attention_costs
def attention_costs(ns, d, bytes_per_elem=4):
    return {"softmax": 0}
