def softmax_1d(v):
    v = v - v.max()
    ev = np.exp(v)
    return ev / ev.sum()

def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    return np.apply_along_axis(softmax_1d, axis, x)
