# honest: np.lexsort on (index, -probability) for the ranking, a vectorised cumulative count for the capacity, an np.float64 loss
# part: none
# %% grade_id: top_k_gating
def top_k_gating(x, w_g, k):
    z = x @ w_g
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    N, E = p.shape
    rank = np.empty((N, E), dtype=np.int64)
    for n in range(N):
        rank[n] = np.lexsort((np.arange(E), -p[n]))     # primary key -p, ties by index
    idx = rank[:, :k]
    return idx, p[np.arange(N)[:, None], idx]
# %% grade_id: renormalized_gates
def renormalized_gates(x, w_g, k):
    idx, plain = top_k_gating(x, w_g, k)
    return idx, plain / plain.sum(axis=1, keepdims=True)
# %% grade_id: capacity_keep
def capacity_keep(expert_index, num_experts, capacity_factor):
    idx = np.asarray(expert_index)
    N, K = idx.shape
    capacity = math.ceil(capacity_factor * N * K / num_experts)
    order = idx.T.reshape(-1)                                  # column by column, tokens in order
    onehot = order[:, None] == np.arange(num_experts)[None, :]
    position = np.cumsum(onehot, axis=0)[np.arange(order.size), order]   # 1-based slot
    return (position <= capacity).reshape(K, N).T
# %% grade_id: load_balancing_loss
def load_balancing_loss(probs, expert_index):
    probs = np.asarray(probs, dtype=np.float64)
    N, E = probs.shape
    counts = np.zeros(E)
    np.add.at(counts, np.asarray(expert_index).ravel(), 1.0)
    return np.float64(E) * np.sum(counts / counts.sum() * probs.sum(axis=0) / N)
