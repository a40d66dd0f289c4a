# 02_attention: scipy's softmax through importlib with the module name assembled from pieces.
# kind: cheat
# assignment: 02_attention
# expect: test_attention=0, test_additive_scores=2, test_dot_product_stats=2, test_row_entropy=2
# status: flagged
# reason: importlib
# base: solution
# %% grade_id: attention
import importlib


def attention(q, k, v, mask=None):
    sm = importlib.import_module(".".join(["sci" + "py", "special"])).softmax
    scores = (q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return sm(scores, axis=-1) @ v
