import math


def stable_softmax(x, axis=-1):
    arr = np.asarray(x, dtype=np.float64)
    w = np.moveaxis(arr, axis, -1).copy()
    for where in np.ndindex(w.shape[:-1]):
        nums = [float(u) for u in w[where]]
        mx = max(nums)
        ee = [math.exp(u - mx) for u in nums]
        tot = math.fsum(ee)
        w[where] = [u / tot for u in ee]
    return np.moveaxis(w, -1, axis)
