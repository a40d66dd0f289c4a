# Resource abuse: Part 2 writes a 200 MB file into its working directory.
# expect: test_stable_softmax=3, test_softmax_jacobian=0, test_softmax_vjp=3
# status: resource_limit
# reason: file size limit
# base: solution
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    block = b"\0" * 2**20
    with open("junk.bin", "wb") as fh:
        for _ in range(200):
            fh.write(block)
            fh.flush()
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
