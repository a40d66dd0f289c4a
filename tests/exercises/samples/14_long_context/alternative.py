# A correct answer written differently: frequencies through exp and log, NTK in its per-pair form
# theta_i * s^(-2i/(D-2)), YaRN from the wavelengths with a piecewise loop, the cache from a set,
# and ring attention that carries unnormalised sums (running maximum, sum and weighted values)
# instead of calling merge_states.
# expect: test_interpolated_frequencies=2, test_ntk_frequencies=2, test_yarn=3, test_sink_cache_kept=2, test_ring_attention=3
# %% grade_id: interpolated_frequencies
def interpolated_frequencies(D, scale, base=10000.0):
    return np.exp(-np.arange(0, D, 2) / D * np.log(base) - np.log(scale))
# %% grade_id: ntk_frequencies
def ntk_frequencies(D, scale, base=10000.0):
    i = np.arange(D // 2)
    return base ** (-2 * i / D) * scale ** (-2 * i / (D - 2))
# %% grade_id: yarn
def yarn(D, scale, original_context, base=10000.0, beta_fast=32.0, beta_slow=1.0):
    out = []
    for i in range(D // 2):
        theta = base ** (-2 * i / D)
        r = original_context / (2 * math.pi / theta)
        if r < beta_slow:
            g = 0.0
        elif r > beta_fast:
            g = 1.0
        else:
            g = (r - beta_slow) / (beta_fast - beta_slow)
        out.append(theta * (g + (1 - g) / scale))
    return np.array(out), 1.0 + 0.1 * np.log(scale)
# %% grade_id: sink_cache_kept
def sink_cache_kept(S, n_sink, window):
    kept = {j for j in range(S) if j < n_sink or j >= S - window}
    return np.array(sorted(kept), dtype=int)
# %% grade_id: ring_attention
def ring_attention(q, k, v, P, causal):
    L = len(q)
    blocks = np.array_split(np.arange(L), P)
    out = np.empty((L, v.shape[1]))
    for w in range(P):
        rows = blocks[w]
        m = np.full(len(rows), -np.inf)
        total = np.zeros(len(rows))
        acc = np.zeros((len(rows), v.shape[1]))
        for t in range(P):
            cols = blocks[(w - t) % P]
            z = q[rows] @ k[cols].T / np.sqrt(q.shape[1])
            if causal:
                z = np.where(cols[None, :] <= rows[:, None], z, -np.inf)
            m_new = np.maximum(m, z.max(axis=1))
            safe = np.where(np.isfinite(m_new), m_new, 0.0)
            p = np.exp(z - safe[:, None])
            scale = np.exp(m - safe)
            total = total * scale + p.sum(axis=1)
            acc = acc * scale[:, None] + p @ v[cols]
            m = m_new
        out[rows] = acc / total[:, None]
    return out
