# honest: a different block split for the ring (the last worker takes the remainder; the output is the same), a set for the sink cache, np.float64 attention factor
# part: none
# %% grade_id: interpolated_frequencies
def interpolated_frequencies(D, scale, base=10000.0):
    return np.exp(-np.arange(D // 2) * (2.0 / D) * np.log(base)) / scale
# %% grade_id: ntk_frequencies
def ntk_frequencies(D, scale, base=10000.0):
    log_base = math.log(base) + D / (D - 2) * math.log(scale)
    return np.exp(-np.arange(0, D, 2) / D * log_base)
# %% grade_id: yarn
def yarn(D, scale, original_context, base=10000.0, beta_fast=32.0, beta_slow=1.0):
    theta = np.power(np.float64(base), -np.arange(0, D, 2) / D)
    r = original_context * theta / (2.0 * np.pi)
    out = np.empty_like(theta)
    for i, (th, ri) in enumerate(zip(theta, r)):
        g = 0.0 if ri < beta_slow else 1.0 if ri > beta_fast else (ri - beta_slow) / (beta_fast - beta_slow)
        out[i] = (1 - g) * th / scale + g * th
    return out, np.float64(0.1) * np.log(np.float64(scale)) + 1
# %% grade_id: sink_cache_kept
def sink_cache_kept(S, n_sink, window):
    kept = {t for t in range(S) if t < n_sink or t >= S - window}
    return np.array(sorted(kept), dtype=np.int64)
# %% grade_id: ring_attention
def ring_attention(q, k, v, P, causal):
    L = q.shape[0]
    size = L // P
    starts = [w * size for w in range(P)] + [L]          # the last block takes the remainder
    blocks = [np.arange(starts[w], starts[w + 1]) for w in range(P)]
    result = np.empty((L, v.shape[1]))
    for w, rows in enumerate(blocks):
        out, lse = None, None
        for step in range(P):
            cols = blocks[(w - step) % P]
            mask = cols[None, :] <= rows[:, None]
            q_w, k_w, v_w = (a.astype(np.float64) for a in (q[rows], k[cols], v[cols]))
            state = block_state(q_w, k_w, v_w, mask if causal else None)
            out, lse = state if out is None else merge_states((out, lse), state)
        result[rows] = out
    return result
