# Calls the course library for Parts 1 and 4: no credit for those parts. Part 3 serves tokens in
# token order (all slots of token 0, then token 1, ...), which violates the priority rule.
# expect: test_top_k_gating=0, test_renormalized_gates=2, test_capacity_keep=0, test_load_balancing_loss=0
# %% grade_id: top_k_gating
from attnmath.moe import softmax_gating, top_k_route

def top_k_gating(x, w_g, k):
    r = top_k_route(softmax_gating(x, w_g), k)
    return r.expert_index, r.gate
# %% grade_id: renormalized_gates
def renormalized_gates(x, w_g, k):
    z = x @ w_g
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    idx = np.argsort(-p, axis=1, kind="stable")[:, :k]
    g = np.take_along_axis(p, idx, axis=1)
    return idx, g / g.sum(axis=1, keepdims=True)
# %% grade_id: capacity_keep
def capacity_keep(expert_index, num_experts, capacity_factor):
    N, K = expert_index.shape
    capacity = math.ceil(capacity_factor * N * K / num_experts)
    used = np.zeros(num_experts, dtype=int)
    kept = np.zeros((N, K), dtype=bool)
    for n in range(N):
        for s in range(K):
            e = expert_index[n, s]
            kept[n, s] = used[e] < capacity
            used[e] += kept[n, s]
    return kept
# %% grade_id: load_balancing_loss
import attnmath.moe

def load_balancing_loss(probs, expert_index):
    return attnmath.moe.load_balancing_loss(probs, expert_index)
