# The student summed the dot products of the memory-limited statistics part in blocks of 1000 rows on a `multiprocessing.pool.ThreadPool(4)` created inside the function (NumPy with threads), then combined the partial sums: no (n, n) matrix, and the same unbiased statistics.
# expect: test_attention=4, test_additive_scores=2, test_dot_product_stats=2, test_row_entropy=2
# status: graded
# kind: honest
# assignment: 02_attention
# base: solution
# %% grade_id: dot_product_stats
from multiprocessing.pool import ThreadPool


def dot_product_stats(q, k):
    n, D = q.shape
    blocks = [(i, min(i + 1000, n)) for i in range(0, n, 1000)]
    with ThreadPool(4) as pool:
        dots = np.concatenate(pool.map(lambda b: np.einsum("rd,rd->r", q[b[0]:b[1]], k[b[0]:b[1]]), blocks))
    mean = dots.mean()
    var = np.sum((dots - mean) ** 2) / (n - 1)
    return float(mean), float(var), float(var / D)
