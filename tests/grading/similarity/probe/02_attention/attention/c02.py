# %% grade_id: attention
def attention(q, k, v, mask=None):
    n_keys = k.shape[-2]
    sc = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is None:
        visible = np.ones(sc.shape, dtype=bool)
    else:
        visible = np.broadcast_to(mask, sc.shape)
    rows = sc.reshape(-1, n_keys)
    rows_visible = visible.reshape(-1, n_keys)
    p = np.zeros_like(rows)
    for i in range(rows.shape[0]):
        sel = rows_visible[i]
        if not sel.any():
            continue
        r = rows[i, sel]
        ex = np.exp(r - r.max())
        p[i, sel] = ex / ex.sum()
    return p.reshape(sc.shape) @ v
