# The student left print-debugging in the recurrence of the memory-limited causal linear attention: one line per position with the state's norm, thousands of lines on long inputs; printing is not cheating, and what it prints must not cost the part.
# expect: test_chunked_attention=3, test_linear_attention=2, test_causal_linear_attention=3, test_decode_step_window=2, test_attention_costs=2
# status: graded
# kind: honest
# assignment: 07_efficiency
# base: solution
# %% grade_id: causal_linear_attention
def causal_linear_attention(q, k, v):
    fq = np.where(q > 0, q + 1.0, np.exp(np.minimum(q, 0.0)))
    fk = np.where(k > 0, k + 1.0, np.exp(np.minimum(k, 0.0)))
    L = q.shape[-2]
    S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
    z = np.zeros(q.shape[:-2] + (q.shape[-1],))
    out = np.zeros(q.shape[:-1] + (v.shape[-1],))
    print("causal_linear_attention: q", q.shape, "k", k.shape, "v", v.shape)
    for t in range(L):
        S = S + fk[..., t, :, None] * v[..., t, None, :]
        z = z + fk[..., t, :]
        num = (fq[..., t, :, None] * S).sum(axis=-2)
        den = (fq[..., t, :] * z).sum(axis=-1)
        out[..., t, :] = num / den[..., None]
        print(f"t={t} |S|={np.linalg.norm(S):.4f} den={np.ravel(den)[0]:.4f}")
    return out
