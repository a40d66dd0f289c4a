def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    z = x - x.max(axis=axis, keepdims=True)
    num = np.exp(z)
    den = num.sum(axis=axis, keepdims=True)
    return num / den
