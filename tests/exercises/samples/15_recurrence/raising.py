# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_decay_mask=0, test_ssd_recurrent=0, test_ssd_chunked=0, test_delta_rule=0, test_wy_representation=0
# %% grade_id: decay_mask
def decay_mask(log_alpha):
    raise NotImplementedError()
# %% grade_id: ssd_recurrent
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: ssd_chunked
def ssd_chunked(q, k, v, log_alpha, chunk_size):
    return None
# %% grade_id: delta_rule
def delta_rule(q, k, v, beta, log_alpha):
    return np.zeros(3)
# %% grade_id: wy_representation
def wy_representation(k, v, beta):
    raise ValueError("not yet")
