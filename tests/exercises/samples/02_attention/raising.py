# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_attention=0, test_additive_scores=0, test_dot_product_stats=0, test_row_entropy=0
# %% grade_id: attention
def attention(q, k, v, mask=None):
    raise ValueError("not done yet")
# %% grade_id: additive_scores
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: dot_product_stats
def dot_product_stats(q, k):
    return None
# %% grade_id: row_entropy
def row_entropy(p):
    return [float(p.sum())][1]
