# honest: always computes in float64 and returns the input's dtype; moves `axis` to the end and loops over rows; Jacobian built with two Python loops; VJP with einsum
# part: none
# %% grade_id: stable_softmax
TEMPERATURE = 1.0


def _softmax_1d(row):
    # one row, already float64
    shifted = (row - row.max()) / TEMPERATURE
    ex = np.exp(shifted)
    return ex / ex.sum()


def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    in_dtype = x.dtype
    work = np.moveaxis(x.astype(np.float64), axis, -1)
    shape = work.shape
    rows = work.reshape(-1, shape[-1])
    result = np.empty_like(rows)
    for r in range(rows.shape[0]):
        result[r] = _softmax_1d(rows[r])
    result = np.moveaxis(result.reshape(shape), -1, axis)
    return result.astype(in_dtype)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    p = stable_softmax(z)
    n = p.shape[0]
    J = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            kron = 1.0 if i == j else 0.0
            J[i, j] = p[i] * (kron - p[j]) / TEMPERATURE
    return J
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    p = np.asarray(p, dtype=np.float64)
    g = np.asarray(g, dtype=np.float64)
    inner = np.einsum("...n,...n->...", p, g)      # p^T g for every row
    return p * (g - inner[..., None]) / TEMPERATURE
