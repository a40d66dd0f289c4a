# honest: per-token Python loops with sorted() on (-p, index) keys, explicit float64 copies, a private softmax helper and bincount for the loads
# part: none
# %% grade_id: top_k_gating
def _stable_softmax_rows(z):
    z = np.array(z, dtype=np.float64)  # my own copy
    out = np.empty_like(z)
    for n in range(z.shape[0]):
        row = z[n] - z[n].max()
        e = np.exp(row)
        out[n] = e / e.sum()
    return out


def top_k_gating(x, w_g, k):
    x = np.array(x, dtype=np.float64)
    w_g = np.array(w_g, dtype=np.float64)
    p = _stable_softmax_rows(x @ w_g)
    N, E = p.shape
    expert_index = np.zeros((N, k), dtype=np.int64)
    gate = np.zeros((N, k), dtype=np.float64)
    for n in range(N):
        order = sorted(range(E), key=lambda e: (-p[n, e], e))
        for s in range(k):
            expert_index[n, s] = order[s]
            gate[n, s] = p[n, order[s]]
    return expert_index, gate
# %% grade_id: renormalized_gates
def renormalized_gates(x, w_g, k):
    expert_index, _ = top_k_gating(x, w_g, k)
    z = np.array(x, dtype=np.float64) @ np.array(w_g, dtype=np.float64)
    N = z.shape[0]
    gate = np.zeros((N, k), dtype=np.float64)
    for n in range(N):
        chosen = np.array([z[n, e] for e in expert_index[n]])
        chosen = chosen - chosen.max()
        w = np.exp(chosen)
        gate[n] = w / w.sum()
    return expert_index, gate
# %% grade_id: capacity_keep
def capacity_keep(expert_index, num_experts, capacity_factor):
    expert_index = np.asarray(expert_index)
    N, K = expert_index.shape
    capacity = math.ceil(capacity_factor * N * K / num_experts)
    used = [0] * num_experts
    kept = np.zeros((N, K), dtype=bool)
    for s in range(K):
        for n in range(N):
            e = int(expert_index[n, s])
            if used[e] < capacity:
                used[e] += 1
                kept[n, s] = True
    return kept
# %% grade_id: load_balancing_loss
def load_balancing_loss(probs, expert_index):
    probs = np.array(probs, dtype=np.float64)
    expert_index = np.asarray(expert_index)
    N, E = probs.shape
    K = expert_index.shape[1]
    counts = np.bincount(expert_index.ravel(), minlength=E).astype(np.float64)
    f = counts / (N * K)
    P = probs.mean(axis=0)
    return float(E * np.dot(f, P))
