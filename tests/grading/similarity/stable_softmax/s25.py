def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    work_type = np.promote_types(x.dtype, np.float32)
    xs = x.astype(work_type, copy=False)
    xs = xs - np.max(xs, axis=axis, keepdims=True)
    np.exp(xs, out=xs)
    return xs / np.sum(xs, axis=axis, keepdims=True)
