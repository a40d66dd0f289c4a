# bug: the attention factor uses math.log10(s) instead of the natural log
# part: yarn
# %% grade_id: interpolated_frequencies
def interpolated_frequencies(D, scale, base=10000.0):
    theta = float(base) ** (-np.arange(0, D, 2, dtype=np.float64) / D)
    return theta / scale
# %% grade_id: ntk_frequencies
def ntk_frequencies(D, scale, base=10000.0):
    new_base = float(base) * float(scale) ** (D / (D - 2))
    return new_base ** (-np.arange(0, D, 2, dtype=np.float64) / D)
# %% grade_id: yarn
def yarn(D, scale, original_context, base=10000.0, beta_fast=32.0, beta_slow=1.0):
    theta = float(base) ** (-np.arange(0, D, 2, dtype=np.float64) / D)
    turns = original_context * theta / (2 * math.pi)
    gamma = np.clip((turns - beta_slow) / (beta_fast - beta_slow), 0.0, 1.0)
    inv_freq = (1.0 - gamma) * theta / scale + gamma * theta
    return inv_freq, 0.1 * math.log10(scale) + 1.0
# %% grade_id: sink_cache_kept
def sink_cache_kept(S, n_sink, window):
    sinks = np.arange(min(n_sink, S))
    recent = np.arange(max(S - window, 0), S)
    return np.union1d(sinks, recent).astype(np.int64)
# %% grade_id: ring_attention
def ring_attention(q, k, v, P, causal):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    blocks = np.array_split(np.arange(q.shape[0]), P)
    outputs = []
    for w in range(P):
        rows = blocks[w]
        state = None
        for t in range(P):
            cols = blocks[(w - t) % P]
            if causal and cols[0] > rows[-1]:
                continue                                   # every key after every query
            mask = cols[None, :] <= rows[:, None] if causal else None
            part = block_state(q[rows], k[cols], v[cols], mask)
            state = part if state is None else merge_states(state, part)
        outputs.append(state[0])
    return np.concatenate(outputs, axis=0)
