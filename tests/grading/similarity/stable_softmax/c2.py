def stable_softmax(x, axis=-1):
    # move the softmax axis to the end and treat everything else as rows
    data = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    table = data.reshape(-1, data.shape[-1])
    res = np.empty_like(table)
    for k in range(table.shape[0]):
        r = table[k]
        hi = r.max()
        exps = np.exp(r - hi)
        res[k] = exps / exps.sum()
    return np.moveaxis(res.reshape(data.shape), -1, axis)
