# Malformed text in code: the answer to softmax_vjp holds an unpaired surrogate in a comment. Such a
# cell cannot be encoded, so no Python (the student's kernel included) can run it; only the parts
# that use it score 0, and the class goes on.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: graded
# base: solution
# mutate: json-sub SURROGATE \ud800
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    # SURROGATE
    return p * (g - (p * g).sum(axis=-1, keepdims=True))
