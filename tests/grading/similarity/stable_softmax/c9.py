def stable_softmax(x, axis=-1):
    # work on an array; anything that is not float64 becomes float32
    arr = np.asarray(x)
    if arr.dtype != np.float64:
        arr = arr.astype(np.float32)
    # subtract the maximum so that exp never overflows
    shifted = arr - np.max(arr, axis=axis, keepdims=True)
    powers = np.exp(shifted)
    # normalise
    return powers / powers.sum(axis=axis, keepdims=True)
