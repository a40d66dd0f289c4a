# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_causal_mask=0, test_padding_mask=0, test_combined_mask=0, test_masked_attention=0
# %% grade_id: causal_mask
def causal_mask(L, S=None, alignment="top_left"):
    raise ValueError("not done yet")
# %% grade_id: padding_mask
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: combined_mask
def combined_mask(lengths, L, S=None, alignment="top_left"):
    return None
# %% grade_id: masked_attention
def masked_attention(q, k, v, mask):
    return masked_attention(q, k, v, mask)  # infinite recursion
