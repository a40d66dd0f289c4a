# Honest work in 07_efficiency: the feature map phi lives in an added cell shared by two answers,
# with memory-limited cases measured by the kernel. Full marks.
# kind: honest
# assignment: 07_efficiency
# expect: test_chunked_attention=3, test_linear_attention=2, test_causal_linear_attention=3, test_decode_step_window=2, test_attention_costs=2
# status: graded
# base: solution
# mutate: add-cell-after test_chunked_attention def phi(x):\n    x = np.asarray(x)\n    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))
# %% grade_id: linear_attention
def linear_attention(q, k, v):
    phi_q, phi_k = phi(q), phi(k)
    kv = np.swapaxes(phi_k, -1, -2) @ v
    z = np.sum(phi_k, axis=-2)
    return (phi_q @ kv) / np.sum(phi_q * z[..., None, :], axis=-1, keepdims=True)
