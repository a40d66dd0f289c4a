# Every answer raises: no points, and the notebook still grades.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    raise ValueError("not done yet")
# %% grade_id: softmax_jacobian
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    return None
