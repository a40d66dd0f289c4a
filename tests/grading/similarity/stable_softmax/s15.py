def stable_softmax(x, axis=-1):
    v = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    n = v.shape[-1]
    v = v - v.max(axis=-1, keepdims=True)
    ex = np.exp(v)
    norm = ex @ np.ones(n)
    res = ex / norm[..., np.newaxis]
    return np.moveaxis(res, -1, axis)
