# Every answer raises or returns nothing useful: no points, and the notebook still grades.
# expect: test_gaussian_smoother=0, test_linear_self_attention=0, test_icl_prediction=0, test_equivariance_gap=0, test_multi_head_rank=0
# %% grade_id: gaussian_smoother
def gaussian_smoother(x_query, x_keys, y, bandwidth):
    raise NotImplementedError()
# %% grade_id: linear_self_attention
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: icl_prediction
def icl_prediction(X, y, x_query, lr):
    return None
# %% grade_id: equivariance_gap
def equivariance_gap(q, k, v, perm, mask=None):
    return "0.0"
# %% grade_id: multi_head_rank
def multi_head_rank(probs, v, w_o):
    return 1 / 0
