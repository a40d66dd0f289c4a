def stable_softmax(x, axis=-1):
    out = np.array(x, dtype=np.float64, copy=True)
    out -= out.max(axis=axis, keepdims=True)
    np.exp(out, out=out)
    out /= out.sum(axis=axis, keepdims=True)
    return out
