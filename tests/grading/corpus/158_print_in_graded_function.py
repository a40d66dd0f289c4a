# Benign noise inside a graded function: Part 2 prints a 2 MB debug dump on every call. Output past
# the cap is discarded with a note, the part keeps its points.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    p = stable_softmax(np.asarray(z, dtype=np.float64))
    print("debug:", "." * (2 << 20))
    return np.diag(p) - np.outer(p, p)
