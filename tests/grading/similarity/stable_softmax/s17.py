def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    dt = np.result_type(x.dtype, np.float32)
    x = x.astype(dt)
    x_max = x.max(axis=axis, keepdims=True)
    numer = np.exp(x - x_max)
    denom = numer.sum(axis=axis, keepdims=True)
    return (numer / denom).astype(dt)
