# Memory hidden in a child process: Part 3 forks, the child builds the Jacobian and sends the
# product back through a pipe. The child is in the worker's cgroup: the memory case fails.
# kind: cheat
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: flagged
# reason: raw file descriptors
# base: solution
# %% grade_id: softmax_vjp
import os


def softmax_vjp(p, g):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        J = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
        data = np.einsum("...i,...ij->...j", g, J).astype(np.float64).tobytes()
        view = memoryview(data)
        while view:
            view = view[os.write(w, view):]
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    return np.frombuffer(b"".join(chunks), dtype=np.float64).reshape(p.shape)
