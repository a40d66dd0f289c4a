# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_sinusoidal_encoding=0, test_apply_rope=0, test_alibi_slopes=0, test_alibi_bias=0, test_pe_dot_by_offset=0
# %% grade_id: sinusoidal_encoding
def sinusoidal_encoding(L, C, base=10000.0):
    raise NotImplementedError()
# %% grade_id: apply_rope
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: alibi_slopes
def alibi_slopes(H):
    return None
# %% grade_id: alibi_bias
def alibi_bias(H, L, S=None):
    return "not an array"
# %% grade_id: pe_dot_by_offset
def pe_dot_by_offset(C, offsets, base=10000.0):
    return [[1.0, 2.0], [3.0]]  # ragged: not an array
