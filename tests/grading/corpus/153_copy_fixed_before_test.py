# Honest work fixed in a second copy: Part 3's answer cell has a sign error, and a copy of it right
# below (same grade id, before the test cell) fixes it. The fixed copy is what ran last before the
# part's test cell in the student's kernel, so it is the one graded.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: copy-after softmax_vjp def softmax_vjp(p, g):\n    return p * (g - np.sum(p * g, axis=-1, keepdims=True))
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    return p * (g + np.sum(p * g, axis=-1, keepdims=True))
