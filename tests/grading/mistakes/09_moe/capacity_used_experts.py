# bug: E in the capacity is the number of distinct experts that appear in expert_index, not num_experts
# part: capacity_keep
# %% grade_id: top_k_gating
def top_k_gating(x, w_g, k):
    logits = x @ w_g
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    expert_index = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    return expert_index, np.take_along_axis(probs, expert_index, axis=1)
# %% grade_id: renormalized_gates
def renormalized_gates(x, w_g, k):
    logits = x @ w_g
    e_all = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = e_all / e_all.sum(axis=1, keepdims=True)
    expert_index = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    chosen = np.take_along_axis(logits, expert_index, axis=1)
    e = np.exp(chosen - chosen.max(axis=1, keepdims=True))
    return expert_index, e / e.sum(axis=1, keepdims=True)
# %% grade_id: capacity_keep
def capacity_keep(expert_index, num_experts, capacity_factor):
    expert_index = np.asarray(expert_index)
    N, K = expert_index.shape
    capacity = math.ceil(capacity_factor * N * K / len(np.unique(expert_index)))
    used = np.zeros(num_experts, dtype=np.int64)
    kept = np.zeros((N, K), dtype=bool)
    for s in range(K):                # all first choices, then all second choices, ...
        for n in range(N):            # tokens in index order
            e = expert_index[n, s]
            if used[e] < capacity:
                used[e] += 1
                kept[n, s] = True
    return kept
# %% grade_id: load_balancing_loss
def load_balancing_loss(probs, expert_index):
    probs = np.asarray(probs, dtype=np.float64)
    expert_index = np.asarray(expert_index)
    E = probs.shape[1]
    f = np.bincount(expert_index.ravel(), minlength=E) / expert_index.size
    P = probs.mean(axis=0)
    return float(E * np.dot(f, P))
