def stable_softmax(x, axis=-1):
    a = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    if a.size == 0:
        # nothing to normalise
        return np.moveaxis(a.copy(), -1, axis)
    out = []
    for r in a.reshape(-1, a.shape[-1]):
        e = np.exp(r - np.max(r))
        out.append(e / np.sum(e))
    return np.moveaxis(np.stack(out).reshape(a.shape), -1, axis)
