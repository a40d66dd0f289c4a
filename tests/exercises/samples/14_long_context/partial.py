# Part 1 is right; Part 2 raises the base by s instead of s^(D/(D-2)); Part 3 uses the turns
# over the long context instead of the original one; Part 4 keeps a sink twice when the window
# reaches back to it; Part 5 masks each block by its local positions, which is right with one
# worker only.
# expect: test_interpolated_frequencies=2, test_ntk_frequencies=0, test_yarn=0, test_sink_cache_kept=0, test_ring_attention=0
# %% grade_id: interpolated_frequencies
def interpolated_frequencies(D, scale, base=10000.0):
    return base ** (-np.arange(0, D, 2) / D) / scale
# %% grade_id: ntk_frequencies
def ntk_frequencies(D, scale, base=10000.0):
    return (base * scale) ** (-np.arange(0, D, 2) / D)
# %% grade_id: yarn
def yarn(D, scale, original_context, base=10000.0, beta_fast=32.0, beta_slow=1.0):
    theta = base ** (-np.arange(0, D, 2) / D)
    r = scale * original_context * theta / (2 * np.pi)
    g = np.clip((r - beta_slow) / (beta_fast - beta_slow), 0, 1)
    return (1 - g) * theta / scale + g * theta, 0.1 * np.log(scale) + 1
# %% grade_id: sink_cache_kept
def sink_cache_kept(S, n_sink, window):
    return np.concatenate([np.arange(min(n_sink, S)), np.arange(max(0, S - window), S)]).astype(int)
# %% grade_id: ring_attention
def ring_attention(q, k, v, P, causal):
    blocks = np.array_split(np.arange(len(q)), P)
    outs = []
    for w in range(P):
        state = None
        for t in range(P):
            cols = blocks[(w - t) % P]
            mask = np.tri(len(blocks[w]), len(cols), dtype=bool) if causal else None
            s = block_state(q[blocks[w]], k[cols], v[cols], mask)
            state = s if state is None else merge_states(state, s)
        outs.append(state[0])
    return np.concatenate(outs)
