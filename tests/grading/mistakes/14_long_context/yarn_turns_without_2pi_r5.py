# bug: YaRN counts the turns of pair i as r_i = L * theta_i, forgetting the division by 2*pi, so the ramp thresholds are applied to the wrong pairs
# part: yarn
# %% grade_id: interpolated_frequencies
def interpolated_frequencies(D, scale, base=10000.0):
    i = np.arange(D // 2, dtype=np.float64)
    return base ** (-2.0 * i / D) / scale
# %% grade_id: ntk_frequencies
def ntk_frequencies(D, scale, base=10000.0):
    i = np.arange(D // 2, dtype=np.float64)
    new_base = base * scale ** (D / (D - 2))
    return new_base ** (-2.0 * i / D)
# %% grade_id: yarn
def yarn(D, scale, original_context, base=10000.0, beta_fast=32.0, beta_slow=1.0):
    i = np.arange(D // 2, dtype=np.float64)
    theta = base ** (-2.0 * i / D)
    r = original_context * theta
    gamma = np.clip((r - beta_slow) / (beta_fast - beta_slow), 0.0, 1.0)
    inv_freq = (1 - gamma) * theta / scale + gamma * theta
    return inv_freq, float(0.1 * math.log(scale) + 1.0)
# %% grade_id: sink_cache_kept
def sink_cache_kept(S, n_sink, window):
    kept = set(range(min(n_sink, S))) | set(range(max(S - window, 0), S))
    return np.array(sorted(kept), dtype=np.int64)
# %% grade_id: ring_attention
def ring_attention(q, k, v, P, causal):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    L, Dv = q.shape[0], v.shape[1]
    blocks = np.array_split(np.arange(L), P)
    out = np.zeros((L, Dv))
    for w in range(P):
        qi = blocks[w]
        state = (np.zeros((len(qi), Dv)), np.full(len(qi), -np.inf))
        for t in range(P):
            b = (w - t) % P
            kj = blocks[b]
            mask = None
            if causal:
                if kj.min() > qi.max():
                    continue
                mask = kj[None, :] <= qi[:, None]
            state = merge_states(state, block_state(q[qi], k[kj], v[kj], mask))
        out[qi] = state[0]
    return out
