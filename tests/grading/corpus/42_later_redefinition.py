# Honest work: Part 3's cell later redefines stable_softmax as a scratch experiment (a wrong one).
# Each part is checked as its functions stood after its own cell, so Parts 1 and 2 keep their points.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    inner = np.sum(p * g, axis=-1, keepdims=True)
    return p * (g - inner)


def stable_softmax(x, axis=-1):  # trying something else; not the graded version
    return np.zeros_like(x)
