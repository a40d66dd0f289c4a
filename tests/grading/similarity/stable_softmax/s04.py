def stable_softmax(x, axis=-1):
    # log-sum-exp trick: softmax = exp(x - logsumexp(x))
    x = np.asarray(x, dtype=np.float64)
    mx = np.max(x, axis=axis, keepdims=True)
    lse = mx + np.log(np.sum(np.exp(x - mx), axis=axis, keepdims=True))
    return np.exp(x - lse)
