def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    moved = np.moveaxis(x, axis, -1)
    answer = np.zeros_like(moved)
    for idx in np.ndindex(*moved.shape[:-1]):
        line = moved[idx]
        line = line - np.max(line)
        total = 0.0
        for val in line:
            total += np.exp(val)
        answer[idx] = np.exp(line) / total
    return np.moveaxis(answer, -1, axis)
