def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    t = np.moveaxis(x, axis, -1)
    t = t - t.max(-1)[..., None]
    w = np.exp(t)
    total = np.einsum('...i->...', w)
    return np.moveaxis(w / total[..., None], -1, axis)
