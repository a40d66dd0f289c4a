# Honest work that merely looks unusual: globals(), a variable named vars, getattr on NumPy.
# Static analysis lists these for review; they never cost points or change the status.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: stable_softmax
vars = {"reduce": "max"}


def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    peak = getattr(np, vars["reduce"])(work, axis=axis, keepdims=True)
    e = globals()["np"].exp(work - peak)
    return e / np.sum(e, axis=axis, keepdims=True)
