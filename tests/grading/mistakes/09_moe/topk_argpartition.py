# bug: the k best experts are found with np.argpartition and then sorted by probability with the default sort, losing the tie rule
# part: top_k_gating
# %% grade_id: top_k_gating
def top_k_gating(x, w_g, k):
    logits = x @ w_g
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    E = probs.shape[1]
    part = np.argpartition(-probs, k - 1, axis=1)[:, :k] if k < E else np.tile(np.arange(E), (len(probs), 1))
    order = np.argsort(-np.take_along_axis(probs, part, axis=1), axis=1)
    expert_index = np.take_along_axis(part, order, axis=1)
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
    capacity = math.ceil(capacity_factor * N * K / num_experts)
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
