def stable_softmax(x, axis=-1):
    # expm1(t) + 1 == exp(t); t <= 0 after the shift
    src = np.asarray(x, dtype=np.float64)
    t = src - src.max(axis=axis, keepdims=True)
    e = np.expm1(t) + 1.0
    return e / e.sum(axis=axis, keepdims=True)
