# The student checked the memory of linear attention with `tracemalloc.start()` in the answer cell and left it running (the self-check helper itself uses tracemalloc): a standard-library profiler, honest work on the memory-limited part.
# expect: test_chunked_attention=3, test_linear_attention=2, test_causal_linear_attention=3, test_decode_step_window=2, test_attention_costs=2
# status: graded
# kind: honest
# assignment: 07_efficiency
# base: solution
# %% grade_id: linear_attention
import tracemalloc
tracemalloc.start()


def linear_attention(q, k, v):
    phi_q = np.where(q > 0, q + 1.0, np.exp(np.minimum(q, 0.0)))
    phi_k = np.where(k > 0, k + 1.0, np.exp(np.minimum(k, 0.0)))
    kv = np.einsum("...sd,...se->...de", phi_k, v)           # (D, D_v): the keys and values summarised
    k_sum = phi_k.sum(axis=-2)                               # (D,)
    num = np.einsum("...ld,...de->...le", phi_q, kv)
    den = np.einsum("...ld,...d->...l", phi_q, k_sum)
    return num / den[..., None]


_x = np.random.default_rng(0).standard_normal((2048, 16))
tracemalloc.reset_peak()
linear_attention(_x, _x, _x)
print(f"peak {tracemalloc.get_traced_memory()[1] / 2**20:.2f} MiB")
