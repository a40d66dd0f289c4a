# %% grade_id: mha_forward
def mha_forward(x, w_q, w_k, w_v, w_o, H, causal=False):
    Q = split_heads(np.matmul(x, w_q), H)
    K = split_heads(np.matmul(x, w_k), H)
    V = split_heads(np.matmul(x, w_v), H)
    L = Q.shape[2]
    attn = np.einsum("bhid,bhjd->bhij", Q, K) / np.sqrt(Q.shape[3])
    if causal:
        i, j = np.indices((L, L))
        attn[:, :, j > i] = -np.inf
    attn = np.exp(attn - attn.max(axis=-1)[..., None])
    attn = attn / attn.sum(axis=-1)[..., None]
    return np.matmul(merge_heads(np.einsum("bhij,bhjd->bhid", attn, V)), w_o)
