def stable_softmax(x, axis=-1):
    a = np.swapaxes(np.array(x, dtype=float), axis, -1)
    shape = a.shape
    rows = a.reshape(-1, shape[-1])
    out = []
    for r in rows:
        r = r - np.max(r)
        out.append(np.exp(r) / np.exp(r).sum())
    out = np.array(out).reshape(shape)
    return np.swapaxes(out, axis, -1)
