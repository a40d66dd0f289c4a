# Cheating in the kernel: Part 1 returns objects whose == always says True (wrong values).
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: stable_softmax
class Agreeable(np.ndarray):
    def __eq__(self, other):
        return True

    def __array_finalize__(self, obj):
        pass

class Anything:
    def __eq__(self, other):
        return True

def stable_softmax(x, axis=-1):
    if np.ndim(x) == 1:
        return Anything()
    return np.zeros(np.shape(x)).view(Agreeable)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
