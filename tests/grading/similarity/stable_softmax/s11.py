def stable_softmax(x, axis=-1):
    arr = np.asarray(x, dtype=np.float64)
    peak = np.amax(arr, axis=axis, keepdims=True)
    expd = np.exp(arr - peak)
    sums = np.sum(expd, axis=axis, keepdims=True)
    return np.divide(expd, sums, out=np.zeros_like(expd), where=sums > 0)
