# Part 1 breaks ties towards the highest index; Part 2 overflows (no max shift); Part 3 is right;
# Part 4 counts assignments per token (divides by N, not N K), which is wrong for K > 1.
# expect: test_top_k_gating=0, test_renormalized_gates=0, test_capacity_keep=3, test_load_balancing_loss=0
# %% grade_id: top_k_gating
def top_k_gating(x, w_g, k):
    z = x @ w_g
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    expert_index = np.argsort(p, axis=1)[:, ::-1][:, :k]
    return expert_index, np.take_along_axis(p, expert_index, axis=1)
# %% grade_id: renormalized_gates
def renormalized_gates(x, w_g, k):
    z = x @ w_g
    expert_index = np.argsort(-z, axis=1, kind="stable")[:, :k]
    e = np.exp(np.take_along_axis(z, expert_index, axis=1))
    return expert_index, e / e.sum(axis=1, keepdims=True)
# %% grade_id: capacity_keep
def capacity_keep(expert_index, num_experts, capacity_factor):
    N, K = expert_index.shape
    capacity = math.ceil(capacity_factor * N * K / num_experts)
    used = np.zeros(num_experts, dtype=int)
    kept = np.zeros((N, K), dtype=bool)
    for s in range(K):
        for n in range(N):
            e = expert_index[n, s]
            kept[n, s] = used[e] < capacity
            used[e] += kept[n, s]
    return kept
# %% grade_id: load_balancing_loss
def load_balancing_loss(probs, expert_index):
    N, E = probs.shape
    f = np.bincount(np.ravel(expert_index), minlength=E) / N
    return float(E * f @ probs.mean(axis=0))
