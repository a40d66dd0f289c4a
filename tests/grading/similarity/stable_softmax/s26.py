import math

def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    y = np.moveaxis(x, axis, -1).copy()
    for pos in np.ndindex(y.shape[:-1]):
        vals = [float(t) for t in y[pos]]
        top = max(vals)
        exps = [math.exp(t - top) for t in vals]
        s = math.fsum(exps)
        y[pos] = [t / s for t in exps]
    return np.moveaxis(y, -1, axis)
