# Memory hidden in a thread: Part 3 builds the Jacobian with NumPy inside a threading.Thread (same
# process, counted by the kernel all the same): the memory case fails.
# kind: cheat
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: graded
# base: solution
# %% grade_id: softmax_vjp
import threading


def softmax_vjp(p, g):
    box = {}

    def work():
        J = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
        box["out"] = np.einsum("...i,...ij->...j", g, J)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    return box["out"]
