def stable_softmax(x, axis=-1):
    a = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    if a.size == 0:
        return np.moveaxis(a.copy(), -1, axis)
    lines = a.reshape(-1, a.shape[-1])
    probs = np.stack([_softmax_row(line) for line in lines]).reshape(a.shape)
    return np.moveaxis(probs, -1, axis)


def _softmax_row(r):
    d = r - np.max(r)
    ex = np.exp(d)
    return ex / np.sum(ex)
