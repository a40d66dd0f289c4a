# 07_efficiency: "chunked" attention that forks a child process to build the whole (L, S) score
# matrix and sends the result back; the memory-limited cases fail (the child is counted too).
# kind: cheat
# assignment: 07_efficiency
# expect: test_chunked_attention=0, test_linear_attention=2, test_causal_linear_attention=3, test_decode_step_window=2, test_attention_costs=2
# status: flagged
# reason: raw file descriptors
# base: solution
# %% grade_id: chunked_attention
import os


def chunked_attention(q, k, v, chunk_size, mask=None):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        scores = (q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        m = np.max(scores, axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        e = np.exp(scores - m)
        t = np.sum(e, axis=-1, keepdims=True)
        out = (e @ v) / np.where(t > 0, t, 1.0)
        data = np.ascontiguousarray(out, dtype=np.float64).tobytes()
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
    shape = q.shape[:-1] + (v.shape[-1],)
    return np.frombuffer(b"".join(chunks), dtype=np.float64).reshape(shape).astype(np.result_type(q, k, v))
