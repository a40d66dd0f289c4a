def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    hi = np.maximum.reduce(x, axis=axis, keepdims=True)
    y = np.exp(np.subtract(x, hi))
    return np.true_divide(y, np.add.reduce(y, axis=axis, keepdims=True))
