def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    ordered = np.sort(x, axis=axis)
    largest = np.take(ordered, [-1], axis=axis)
    numerators = np.exp(x - largest)
    denominator = np.sum(numerators, axis=axis, keepdims=True)
    return numerators / denominator
