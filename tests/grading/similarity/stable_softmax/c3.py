def row_max(t,axis):
    # largest entry of each row
    return np.max(t, axis = axis, keepdims = True)

def row_sum(t,axis):
    # total of each row
    return np.sum(t, axis = axis, keepdims = True)

def stable_softmax(x, axis = -1):
    t = np.asarray(x)
    if t.dtype == np.float16:   # upcast half precision
        t = t.astype(np.float32)
    expo = np.exp(t - row_max(t, axis))

    return expo / row_sum(expo, axis)
