# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_gather_sequence=0, test_merge_states=0, test_mla_absorbed=0, test_quantize_int8=0
# %% grade_id: gather_sequence
def gather_sequence(pool, block_table, length):
    raise NotImplementedError()
# %% grade_id: merge_states
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: mla_absorbed
def mla_absorbed(x, c_kv, w_q, w_uk, w_uv, w_o):
    return None
# %% grade_id: quantize_int8_per_channel
def quantize_int8_per_channel(x):
    return float("nan")
