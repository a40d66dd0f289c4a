# Honest work that displays: the answer cells call `display` (a kernel builtin) and IPython's rich
# objects, as in the student's kernel.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: softmax_jacobian
from IPython.display import Markdown, HTML


def softmax_jacobian(z):
    p = stable_softmax(np.asarray(z, dtype=np.float64))
    return np.diag(p) - np.outer(p, p)


display(Markdown("**Jacobian** of softmax at (1, 2, 3):"))
display(softmax_jacobian(np.array([1.0, 2.0, 3.0])))
display(HTML("<p>rows sum to zero</p>"))
