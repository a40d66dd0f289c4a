# Every answer fails: a raise, a crash at definition time, a result of the wrong kind.
# expect: test_online_softmax=0, test_flash_forward=0, test_flash_backward=0
# %% grade_id: online_softmax
def online_softmax(x, block_size):
    raise ValueError("not done yet")
# %% grade_id: flash_forward
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: flash_backward
def flash_backward(q, k, v, out, lse, dout, block_q, block_k, causal=False):
    return np.zeros_like(q)
