# The student parallelised the memory-limited chunked attention: inside the function a ThreadPoolExecutor(max_workers=2) splits each chunk's rows between two threads, so still only one chunk of scores exists at a time; threads started inside the answer are ordinary Python and the result is exact.
# expect: test_chunked_attention=3, test_linear_attention=2, test_causal_linear_attention=3, test_decode_step_window=2, test_attention_costs=2
# status: graded
# kind: honest
# assignment: 07_efficiency
# base: solution
# %% grade_id: chunked_attention
from concurrent.futures import ThreadPoolExecutor


def _attend_rows(q_rows, k_t, v, mask_rows, scale):
    s = q_rows @ k_t
    s *= scale
    if mask_rows is not None:
        s = np.where(mask_rows, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    top[np.isneginf(top)] = 0.0                # a row with every key masked
    s -= top
    np.exp(s, out=s)
    total = s.sum(axis=-1, keepdims=True)
    total[total == 0] = 1.0
    return (s @ v) / total


def chunked_attention(q, k, v, chunk_size, mask=None):
    L = q.shape[-2]
    scale = 1.0 / np.sqrt(q.shape[-1])
    k_t = np.swapaxes(k, -1, -2)
    out = np.empty(q.shape[:-1] + (v.shape[-1],), dtype=np.result_type(q, k, v))
    with ThreadPoolExecutor(max_workers=2) as pool:
        for i0 in range(0, L, chunk_size):
            i1 = min(i0 + chunk_size, L)
            mid = (i0 + i1 + 1) // 2                 # each thread takes half of the chunk's rows
            halves = [(a, b) for a, b in ((i0, mid), (mid, i1)) if b > a]
            jobs = [pool.submit(_attend_rows, q[..., a:b, :], k_t, v,
                                None if mask is None else mask[a:b], scale) for a, b in halves]
            for (a, b), job in zip(halves, jobs):
                out[..., a:b, :] = job.result()
    return out
