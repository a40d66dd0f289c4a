# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_split_heads=0, test_merge_heads=0, test_mha_forward=0, test_numerical_gradient=0, test_mha_backward=0, test_gqa_forward=0
# %% grade_id: split_heads
def split_heads(x, H):
    raise ValueError("not done yet")
# %% grade_id: merge_heads
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    return None
# %% grade_id: numerical_gradient
def numerical_gradient(x, w_q, w_k, w_v, w_o, H, dout, wrt, causal=False, eps=1e-6):
    return [[0.0]]
# %% grade_id: mha_backward
def mha_backward(x, w_q, w_k, w_v, w_o, H, dout, causal=False):
    raise NotImplementedError()
# %% grade_id: gqa_forward
def gqa_forward(x, w_q, w_k, w_v, w_o, H, H_kv, causal=False):
    return "attention"
