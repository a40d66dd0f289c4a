def stable_softmax(x, axis=-1):
    w = np.asarray(x, dtype=np.float64)
    along = lambda f, a: f(a, axis=axis, keepdims=True)
    e = np.exp(w - along(np.max, w))
    return e / along(np.sum, e)
