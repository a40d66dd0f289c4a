def stable_softmax(x, axis=-1):
    # softmax of every row of the flattened array
    values = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    table = values.reshape(-1, values.shape[-1])
    out = np.array([np.exp(r - r.max()) / np.exp(r - r.max()).sum() for r in table])
    return np.moveaxis(out.reshape(values.shape), -1, axis)
