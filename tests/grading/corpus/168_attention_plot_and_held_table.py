# Honest work in 02_attention that plots and keeps a big table: an added cell keeps 100 MB of
# random vectors for experiments, and Part 3's answer cell draws a histogram of the dot products
# with matplotlib. The memory-limited case charges only what dot_product_stats allocates.
# kind: honest
# assignment: 02_attention
# expect: test_attention=4, test_additive_scores=2, test_dot_product_stats=2, test_row_entropy=2
# status: graded
# base: solution
# mutate: add-cell-after test_additive_scores samples = np.random.default_rng(3).normal(size=(1_600_000, 8))\nprint(samples.nbytes // 2**20, "MiB of samples")
# %% grade_id: dot_product_stats
import matplotlib.pyplot as plt


def dot_product_stats(q, k):
    dots = np.einsum("nd,nd->n", q, k)
    var = float(np.var(dots, ddof=1))
    return float(np.mean(dots)), var, var / q.shape[-1]


plt.hist(np.einsum("nd,nd->n", samples[:2000], samples[2000:4000]), bins=30)
plt.title("dot products of random vectors")
plt.show()
