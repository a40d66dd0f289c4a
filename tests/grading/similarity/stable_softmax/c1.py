def stable_softmax(x, axis=-1):
    arr = np.asarray(x)
    if arr.dtype != np.float64:
        arr = arr.astype(np.float32)
    moved = _minus_max(arr, axis)
    ex = np.exp(moved)
    total = ex.sum(axis=axis, keepdims=True)
    return ex / total


def _minus_max(a, dim):
    """Shift so the largest value is zero."""
    m = np.max(a, axis=dim, keepdims=True)
    return a - m
