def stable_softmax(x, axis=-1):
    logits = np.asarray(x, dtype=np.float64)
    logits = logits - logits.max(axis=axis, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=axis, keepdims=True)
    return probs
