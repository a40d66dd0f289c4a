def stable_softmax(x, axis=-1):
    # compute log-softmax first, then exponentiate
    x = np.asarray(x, dtype=np.float64)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    log_norm = np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    log_probs = shifted - log_norm
    return np.exp(log_probs)
