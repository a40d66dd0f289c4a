# Tampering: Part 3's test cell marked as not graded, with a wrong answer (returns g).
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: flagged
# reason: nbgrader metadata of cell 'test_softmax_vjp' edited
# base: solution
# mutate: meta test_softmax_vjp grade=false
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    return g
