def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    where_max = np.expand_dims(np.argmax(x, axis=axis), axis)
    maxima = np.take_along_axis(x, where_max, axis=axis)
    exps = np.exp(x - maxima)
    return exps / exps.sum(axis=axis, keepdims=True)
