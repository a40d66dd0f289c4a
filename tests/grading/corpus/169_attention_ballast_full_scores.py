# Memory hidden behind ballast in 02_attention: an added cell sets aside 150 MB, and
# dot_product_stats frees it before building the full (n, n) score matrix. The memory case runs in
# a group of its own: the freed ballast does not offset the 122 MiB matrix.
# kind: cheat
# assignment: 02_attention
# expect: test_attention=4, test_additive_scores=2, test_dot_product_stats=0, test_row_entropy=2
# status: graded
# base: solution
# mutate: add-cell-after test_additive_scores _reserve = [bytearray(50 * 2**20) for _ in range(3)]
# %% grade_id: dot_product_stats
def dot_product_stats(q, k):
    _reserve.clear()
    dots = np.diag(q @ k.T).copy()
    var = float(np.var(dots, ddof=1))
    return float(np.mean(dots)), var, var / q.shape[-1]
