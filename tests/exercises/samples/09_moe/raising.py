# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_top_k_gating=0, test_renormalized_gates=0, test_capacity_keep=0, test_load_balancing_loss=0
# %% grade_id: top_k_gating
def top_k_gating(x, w_g, k):
    raise NotImplementedError()
# %% grade_id: renormalized_gates
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: capacity_keep
def capacity_keep(expert_index, num_experts, capacity_factor):
    return None
# %% grade_id: load_balancing_loss
def load_balancing_loss(probs, expert_index):
    return float("nan")
