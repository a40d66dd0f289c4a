# Calling the reference in 02_attention: torch's scaled_dot_product_attention imported inside the
# function. Flagged as calling a reference; torch does not exist in the sandbox, so it scores 0.
# kind: cheat
# assignment: 02_attention
# expect: test_attention=0, test_additive_scores=2, test_dot_product_stats=2, test_row_entropy=2
# status: flagged
# reason: calls reference
# base: solution
# %% grade_id: attention
def attention(q, k, v, mask=None):
    import torch
    import torch.nn.functional as F

    t = [torch.from_numpy(np.asarray(a, dtype=np.float64)) for a in (q, k, v)]
    m = None if mask is None else torch.from_numpy(np.asarray(mask))
    return F.scaled_dot_product_attention(*t, attn_mask=m).numpy()
