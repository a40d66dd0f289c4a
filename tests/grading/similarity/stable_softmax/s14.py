def row_max(t, axis):
    return np.max(t, axis=axis, keepdims=True)


def row_sum(t, axis):
    return np.sum(t, axis=axis, keepdims=True)


def stable_softmax(x, axis=-1):
    # float16 is too coarse for the sum: work in float32 then
    t = np.asarray(x)
    if t.dtype == np.float16:
        t = t.astype(np.float32)
    expo = np.exp(t - row_max(t, axis))
    return expo / row_sum(expo, axis)
