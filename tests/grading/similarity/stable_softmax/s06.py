def _shift_by_max(values, ax):
    """Subtract the largest entry along ax so every exponent is <= 0."""
    top = np.max(values, axis=ax, keepdims=True)
    return values - top


def stable_softmax(x, axis=-1):
    data = np.asarray(x)
    if data.dtype != np.float64:
        data = data.astype(np.float32)
    shifted = _shift_by_max(data, axis)
    powers = np.exp(shifted)
    normaliser = powers.sum(axis=axis, keepdims=True)
    return powers / normaliser
