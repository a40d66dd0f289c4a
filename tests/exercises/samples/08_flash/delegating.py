# Part 1 is implemented; Part 2 calls the course library and Part 3 torch's autograd: no credit
# for those.
# expect: test_online_softmax=2, test_flash_forward=0, test_flash_backward=0
# %% grade_id: online_softmax
def online_softmax(x, block_size):
    m = np.full(x.shape[:-1], -np.inf)
    total = np.zeros(x.shape[:-1])
    for j0 in range(0, x.shape[-1], block_size):
        block = x[..., j0:j0 + block_size]
        m_new = np.maximum(m, block.max(axis=-1))
        shift = np.where(np.isfinite(m_new), m_new, 0.0)
        total = total * np.exp(m - shift) + np.exp(block - shift[..., None]).sum(axis=-1)
        m = m_new
    return np.exp(x - m[..., None]) / total[..., None]
# %% grade_id: flash_forward
import attnmath.flash

def flash_forward(q, k, v, block_q, block_k, causal=False):
    out, cache = attnmath.flash.flash_attention_forward(q, k, v, block_q=block_q, block_k=block_k,
                                                         causal=causal)
    return out, cache.lse
# %% grade_id: flash_backward
import torch

def flash_backward(q, k, v, out, lse, dout, block_q, block_k, causal=False):
    tq, tk, tv = (torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in (q, k, v))
    o = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    o.backward(torch.tensor(np.asarray(dout, dtype=np.float64)))
    return tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy()
