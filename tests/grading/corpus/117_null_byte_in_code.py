# Malformed text in code: a NUL character inside the answer to softmax_vjp (a binary paste). No
# Python compiles such a cell; only the part that uses it scores 0.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: graded
# base: solution
# mutate: json-sub NULHERE \u0000
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    # NULHERE
    return p * (g - (p * g).sum(axis=-1, keepdims=True))
