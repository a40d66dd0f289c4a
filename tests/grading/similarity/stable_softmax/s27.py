def _one_row(row):
    shifted = row - np.max(row)
    ex = np.exp(shifted)
    return ex / np.sum(ex)


def stable_softmax(x, axis=-1):
    arr = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    if arr.size == 0:
        return np.moveaxis(arr.copy(), -1, axis)
    rows = arr.reshape(-1, arr.shape[-1])
    done = np.stack([_one_row(r) for r in rows]).reshape(arr.shape)
    return np.moveaxis(done, -1, axis)
