# bug: the lse launcher passes CAUSAL=False to the kernel (copy-paste, the causal argument is never forwarded), so causal runs return the lse over all keys
# part: triton_flash_lse
# %% grade_id: flash_kernel
@triton.jit
def flash_forward_kernel(Q, K, V, Out, Lse, L, S, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    i = tl.program_id(0)
    h = tl.program_id(1)
    rows = i * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, D)
    row_ok = rows < L
    q = tl.load(Q + h * L * D + rows[:, None] * D + cols[None, :], mask=row_ok[:, None], other=0.0)
    q = q.to(tl.float32)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, (i + 1) * BLOCK_M)
    for start in range(0, hi, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        key_ok = keys < S
        k = tl.load(K + h * S * D + keys[:, None] * D + cols[None, :], mask=key_ok[:, None], other=0.0)
        v = tl.load(V + h * S * D + keys[:, None] * D + cols[None, :], mask=key_ok[:, None], other=0.0)
        k = k.to(tl.float32)
        v = v.to(tl.float32)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = key_ok[None, :]
        if CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        l = alpha * l + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m = m_new
    o = acc / l[:, None]
    tl.store(Out + h * L * D + rows[:, None] * D + cols[None, :], o, mask=row_ok[:, None])
    tl.store(Lse + h * L + rows, m + tl.log(l), mask=row_ok)


def to_device(x, dtype):
    return torch.as_tensor(x, device=DEVICE).to(getattr(torch, dtype)).contiguous()
# %% grade_id: triton_flash_forward
def triton_flash_forward(q, k, v, causal=False, dtype="float32"):
    tq, tk, tv = (to_device(a, dtype) for a in (q, k, v))
    H, L, D = tq.shape
    S = tk.shape[1]
    out = torch.empty((H, L, D), dtype=torch.float32, device=DEVICE)
    lse = torch.empty((H, L), dtype=torch.float32, device=DEVICE)
    BLOCK_M, BLOCK_N = 16, 16
    grid = (triton.cdiv(L, BLOCK_M), H)
    flash_forward_kernel[grid](tq, tk, tv, out, lse, L, S, D ** -0.5, D=D, BLOCK_M=BLOCK_M,
                               BLOCK_N=BLOCK_N, CAUSAL=bool(causal))
    return out.cpu().numpy()
# %% grade_id: triton_flash_lse
def triton_flash_lse(q, k, v, causal=False, dtype="float32"):
    tq, tk, tv = (to_device(a, dtype) for a in (q, k, v))
    H, L, D = tq.shape
    S = tk.shape[1]
    out = torch.empty((H, L, D), dtype=torch.float32, device=DEVICE)
    lse = torch.empty((H, L), dtype=torch.float32, device=DEVICE)
    grid = (triton.cdiv(L, 16), H)
    flash_forward_kernel[grid](tq, tk, tv, out, lse, L, S, D ** -0.5, D=D, BLOCK_M=16,
                               BLOCK_N=16, CAUSAL=False)
    return lse.cpu().numpy()
# %% grade_id: fast_flash_forward
def fast_flash_forward(q, k, v, causal=False, dtype="float16"):
    as_torch = isinstance(q, torch.Tensor)
    dev = q.device if as_torch else DEVICE
    tq, tk, tv = (torch.as_tensor(a, device=dev).to(getattr(torch, dtype)).contiguous() for a in (q, k, v))
    H, L, D = tq.shape
    S = tk.shape[1]
    on_gpu = tq.is_cuda
    BLOCK_M, BLOCK_N = (64, 64) if on_gpu else (16, 16)
    out = torch.empty((H, L, D), dtype=torch.float32, device=dev)
    lse = torch.empty((H, L), dtype=torch.float32, device=dev)
    grid = (triton.cdiv(L, BLOCK_M), H)
    extra = dict(num_warps=4, num_stages=2) if on_gpu else {}
    flash_forward_kernel[grid](tq, tk, tv, out, lse, L, S, D ** -0.5, D=D, BLOCK_M=BLOCK_M,
                               BLOCK_N=BLOCK_N, CAUSAL=bool(causal), **extra)
    return out if as_torch else out.cpu().numpy()
