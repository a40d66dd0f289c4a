# The student left print calls in the memory-limited vector-Jacobian product that show the shapes and the whole result on every call (NumPy abbreviates long arrays): debugging output, not cheating.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# kind: honest
# assignment: 01_softmax
# base: solution
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    print("p:", p.shape, p.dtype, " g:", g.shape, g.dtype)
    pg = (p * g).sum(axis=-1)[..., None]       # p . g for every row
    print("p.g =", pg.ravel())
    result = p * (g - pg)
    print("result:", result)
    return result
