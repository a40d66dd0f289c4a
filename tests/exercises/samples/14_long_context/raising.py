# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_interpolated_frequencies=0, test_ntk_frequencies=0, test_yarn=0, test_sink_cache_kept=0, test_ring_attention=0
# %% grade_id: interpolated_frequencies
def interpolated_frequencies(D, scale, base=10000.0):
    raise NotImplementedError()
# %% grade_id: ntk_frequencies
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: yarn
def yarn(D, scale, original_context, base=10000.0, beta_fast=32.0, beta_slow=1.0):
    return None
# %% grade_id: sink_cache_kept
def sink_cache_kept(S, n_sink, window):
    return [float("nan")]
# %% grade_id: ring_attention
def ring_attention(q, k, v, P, causal):
    return np.full((len(q), v.shape[1]), np.nan)
