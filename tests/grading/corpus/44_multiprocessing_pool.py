# Honest work: Part 2 uses a multiprocessing Pool (fork, semaphores in /dev/shm, the student's own
# function pickled by name from __main__); it works inside the sandbox's process limit.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: softmax_jacobian
import multiprocessing


def softmax_jacobian(z):
    with multiprocessing.Pool(2) as pool:
        p = pool.apply(stable_softmax, (np.asarray(z, dtype=np.float64),))
    return np.diag(p) - np.outer(p, p)
