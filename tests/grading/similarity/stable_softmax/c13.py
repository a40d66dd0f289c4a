def stable_softmax(x, axis=-1):
    arr = np.asarray(x, dtype=np.float64)
    last = axis
    if axis < 0:
        last = arr.ndim + axis
    order = []
    for dim in range(arr.ndim):
        if dim != last:
            order.append(dim)
    order.append(last)
    t = np.transpose(arr, order)
    t = np.exp(t - np.max(t, axis=-1, keepdims=True))
    t /= np.sum(t, axis=-1, keepdims=True)
    return np.transpose(t, np.argsort(order))
