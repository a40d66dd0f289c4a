# Every answer raises or returns the wrong kind of thing: no points, and the notebook still grades.
# expect: test_attention_backward=0, test_masked_attention_backward=0, test_numerical_attention_gradient=0, test_dropout_attention_backward=0
# %% grade_id: attention_backward
def attention_backward(q, k, v, dout):
    raise NotImplementedError("later")
# %% grade_id: masked_attention_backward
def masked_attention_backward(q, k, v, mask, dout):
    return {"dq": q, "dk": k, "dv": v}
# %% grade_id: numerical_attention_gradient
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: dropout_attention_backward
def dropout_attention_backward(q, k, v, keep, p, dout):
    return None
