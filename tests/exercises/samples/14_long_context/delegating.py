# Calls the course library for Parts 1, 3 and 5: no credit for those parts; Parts 2 and 4 are
# the student's own and right.
# expect: test_interpolated_frequencies=0, test_ntk_frequencies=2, test_yarn=0, test_sink_cache_kept=2, test_ring_attention=0
# %% grade_id: interpolated_frequencies
from attnmath.long_context import interpolated_frequencies as _pi

def interpolated_frequencies(D, scale, base=10000.0):
    return _pi(D, scale, base=base)
# %% grade_id: ntk_frequencies
def ntk_frequencies(D, scale, base=10000.0):
    return (base * scale ** (D / (D - 2))) ** (-np.arange(0, D, 2) / D)
# %% grade_id: yarn
import attnmath.long_context as lc

def yarn(D, scale, original_context, base=10000.0, beta_fast=32.0, beta_slow=1.0):
    return (lc.yarn_frequencies(D, scale, original_context, base=base, beta_fast=beta_fast,
                                beta_slow=beta_slow), lc.yarn_attention_factor(scale))
# %% grade_id: sink_cache_kept
def sink_cache_kept(S, n_sink, window):
    return np.array([j for j in range(S) if j < n_sink or j >= S - window], dtype=np.int64)
# %% grade_id: ring_attention
from attnmath.long_context import ring_attention as _ring

def ring_attention(q, k, v, P, causal):
    return _ring(q, k, v, P=P, causal=causal).out
