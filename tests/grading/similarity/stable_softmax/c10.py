import math


def stable_softmax(x, axis=-1):
    moved = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    result = np.zeros_like(moved)
    for where in np.ndindex(*moved.shape[:-1]):
        vals = list(moved[where])
        top = max(vals)
        vals = [v - top for v in vals]
        acc = 0.0
        for v in vals:
            acc += math.exp(v)
        result[where] = [math.exp(v) / acc for v in vals]
    return np.moveaxis(result, -1, axis)
