def stable_softmax(x, axis=-1):
    # move the softmax axis to the end and treat everything else as rows
    arr = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    flat = arr.reshape(-1, arr.shape[-1])
    result = np.empty_like(flat)
    for i in range(flat.shape[0]):
        row = flat[i]
        biggest = row.max()
        ex = np.exp(row - biggest)
        result[i] = ex / ex.sum()
    return np.moveaxis(result.reshape(arr.shape), -1, axis)
