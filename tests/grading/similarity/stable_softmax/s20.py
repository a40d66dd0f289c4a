def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    c = x.max(axis, keepdims=True)
    return np.exp(x - c - np.log(np.exp(x - c).sum(axis, keepdims=True)))
