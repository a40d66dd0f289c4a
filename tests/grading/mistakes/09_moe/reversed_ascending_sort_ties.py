# bug: top-k order taken as np.argsort(p)[:, ::-1]: reversing an ascending stable sort puts tied experts highest-index first, so ties go to the highest expert index
# part: top_k_gating
# %% grade_id: top_k_gating
def top_k_gating(x, w_g, k):
    z = np.asarray(x, dtype=np.float64) @ np.asarray(w_g, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p = p / p.sum(axis=1, keepdims=True)
    # sort ascending and flip to get the largest first
    order = np.argsort(p, axis=1, kind="stable")[:, ::-1][:, :k]
    gate = np.take_along_axis(p, order, axis=1)
    return order, gate
# %% grade_id: renormalized_gates
def renormalized_gates(x, w_g, k):
    expert_index, _ = top_k_gating(x, w_g, k)
    z = np.asarray(x, dtype=np.float64) @ np.asarray(w_g, dtype=np.float64)
    chosen = np.take_along_axis(z, expert_index, axis=1)
    chosen = chosen - chosen.max(axis=1, keepdims=True)
    e = np.exp(chosen)
    return expert_index, e / e.sum(axis=1, keepdims=True)
# %% grade_id: capacity_keep
def capacity_keep(expert_index, num_experts, capacity_factor):
    expert_index = np.asarray(expert_index)
    N, K = expert_index.shape
    capacity = math.ceil(capacity_factor * N * K / num_experts)
    used = np.zeros(num_experts, dtype=np.int64)
    kept = np.zeros((N, K), dtype=bool)
    for s in range(K):
        for n in range(N):
            e = expert_index[n, s]
            if used[e] < capacity:
                used[e] += 1
                kept[n, s] = True
    return kept
# %% grade_id: load_balancing_loss
def load_balancing_loss(probs, expert_index):
    probs = np.asarray(probs, dtype=np.float64)
    expert_index = np.asarray(expert_index)
    N, E = probs.shape
    K = expert_index.shape[1]
    f = np.bincount(expert_index.ravel(), minlength=E) / (N * K)
    P = probs.mean(axis=0)
    return float(E * np.sum(f * P))
