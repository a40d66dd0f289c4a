def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    ax = axis if axis >= 0 else x.ndim + axis
    perm = [d for d in range(x.ndim) if d != ax] + [ax]
    xt = x.transpose(perm)
    xt = np.exp(xt - xt.max(axis=-1, keepdims=True))
    xt = xt / xt.sum(axis=-1, keepdims=True)
    return xt.transpose(np.argsort(perm))
