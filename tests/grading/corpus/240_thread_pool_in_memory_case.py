# Honest threads: a thread pool made in the answer cell (before the memory-limited case) and used by
# Part 3's function, row blocks in parallel. The memory case runs in a process of its own, where
# the pool's threads run again (counted with the call): the call is measured and passes.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: softmax_vjp
from concurrent.futures import ThreadPoolExecutor

_pool = ThreadPoolExecutor(2)


def _rows(p, g):
    return p * (g - np.sum(p * g, axis=-1, keepdims=True))


def softmax_vjp(p, g):
    p, g = np.asarray(p), np.asarray(g)
    if p.ndim < 2 or len(p) < 2:
        return _pool.submit(_rows, p, g).result()
    half = len(p) // 2
    return np.concatenate(list(_pool.map(_rows, (p[:half], p[half:]), (g[:half], g[half:]))))
