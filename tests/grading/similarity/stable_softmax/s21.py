class Softmax:
    def __init__(self, axis):
        self.axis = axis

    def __call__(self, arr):
        arr = np.asarray(arr, dtype=np.float64)
        arr = arr - arr.max(axis=self.axis, keepdims=True)
        numer = np.exp(arr)
        return numer / numer.sum(axis=self.axis, keepdims=True)


def stable_softmax(x, axis=-1):
    return Softmax(axis)(x)
