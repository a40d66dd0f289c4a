# honest: frequencies built with math.pow in list comprehensions, the YaRN ramp as an explicit if/elif per pair, the sink cache as a filtered range, and the ring simulated literally (steps outer, workers inner, each worker passing its key block to the next)
# part: none
# %% grade_id: interpolated_frequencies
def interpolated_frequencies(D, scale, base=10000.0):
    return np.array([math.pow(base, -2.0 * i / D) / scale for i in range(D // 2)])
# %% grade_id: ntk_frequencies
def ntk_frequencies(D, scale, base=10000.0):
    b_prime = base * math.pow(scale, D / (D - 2.0))
    return np.array([math.pow(b_prime, -2.0 * i / D) for i in range(D // 2)])
# %% grade_id: yarn
def yarn_ramp(r, lo, hi):
    if r < lo:
        return 0.0
    if r > hi:
        return 1.0
    return (r - lo) / (hi - lo)


def yarn(D, scale, original_context, base=10000.0, beta_fast=32.0, beta_slow=1.0):
    freqs = []
    for i in range(D // 2):
        theta = math.pow(base, -2.0 * i / D)
        turns = original_context * theta / (2.0 * math.pi)
        g = yarn_ramp(turns, beta_slow, beta_fast)
        freqs.append((1.0 - g) * theta / scale + g * theta)
    return np.array(freqs), 0.1 * math.log(scale) + 1.0
# %% grade_id: sink_cache_kept
def sink_cache_kept(S, n_sink, window):
    return np.array([t for t in range(S) if t < n_sink or t >= S - window], dtype=int)
# %% grade_id: ring_attention
def ring_attention(q, k, v, P, causal):
    q, k, v = (np.array(a, dtype=np.float64) for a in (q, k, v))
    L = q.shape[0]
    idx = np.array_split(np.arange(L), P)
    held = list(range(P))                    # worker w holds key/value block held[w]
    states = [(np.zeros((len(idx[w]), v.shape[1])), np.full(len(idx[w]), -np.inf)) for w in range(P)]
    for step in range(P):
        for w in range(P):
            qi, kj = idx[w], idx[held[w]]
            if causal and kj[0] > qi[-1]:
                continue                     # every key of this block is after every query
            mask = (kj[np.newaxis, :] <= qi[:, np.newaxis]) if causal else None
            states[w] = merge_states(states[w], block_state(q[qi], k[kj], v[kj], mask))
        held = [held[(w - 1) % P] for w in range(P)]   # pass blocks one step round the ring
    return np.concatenate([states[w][0] for w in range(P)], axis=0)
