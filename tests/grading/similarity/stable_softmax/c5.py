def stable_softmax(x, axis=-1):
    # bring the axis to the back, then do each row by hand
    x = np.asarray(x, dtype=np.float64)
    y = np.moveaxis(x, axis, -1)
    out = np.zeros_like(y)
    for ix in np.ndindex(*y.shape[:-1]):
        v = y[ix]
        v = v - np.max(v)
        acc = 0.0
        for item in v:
            acc += np.exp(item)
        out[ix] = np.exp(v) / acc
    return np.moveaxis(out, -1, axis)
