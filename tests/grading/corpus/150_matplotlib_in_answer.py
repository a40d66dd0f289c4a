# Honest work that plots: Part 1's answer cell imports matplotlib.pyplot and draws its result, as it
# would in the student's kernel (the sandbox holds the course environment minus the references).
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: stable_softmax
import matplotlib.pyplot as plt


def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    e = np.exp(work - np.max(work, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


fig, ax = plt.subplots()
ax.bar(range(4), stable_softmax(np.array([1.0, 2.0, 3.0, 4.0])))
ax.set_title("softmax of 1..4")
plt.show()
