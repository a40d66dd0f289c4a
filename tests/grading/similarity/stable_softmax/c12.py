def stable_softmax(x, axis=-1):
    """Softmax through the log-sum-exp."""
    vals = np.asarray(x, dtype=np.float64)
    peak = vals.max(axis=axis, keepdims=True)
    log_total = np.log(np.exp(vals - peak).sum(axis=axis, keepdims=True)) + peak
    return np.exp(vals - log_total)
