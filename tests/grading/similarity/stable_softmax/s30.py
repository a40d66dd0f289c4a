LOG2_E = np.log2(np.e)


def stable_softmax(x, axis=-1):
    # base-2 exponentials: 2 ** (t * log2(e)) == e ** t
    q = np.asarray(x, dtype=np.float64)
    q = (q - q.max(axis=axis, keepdims=True)) * LOG2_E
    pw = np.exp2(q)
    return pw / pw.sum(axis=axis, keepdims=True)
