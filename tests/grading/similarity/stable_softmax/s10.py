def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    ax = axis % x.ndim
    biggest = np.expand_dims(x.max(axis=ax), ax)
    e = np.exp(x - biggest)
    s = np.expand_dims(e.sum(axis=ax), ax)
    return e / s
