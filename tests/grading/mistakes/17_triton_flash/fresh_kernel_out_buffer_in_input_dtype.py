# honest: the launcher allocates the output with torch.empty_like(qt), in the dtype the kernel reads, so the float32 result is stored rounded to float16 or bfloat16, which the precision contract allows (written as a bug before the contract said so)
# part: none
# %% grade_id: flash_kernel
import math


@triton.jit
def flash_forward_kernel(Q, K, V, Out, Lse, L, S, scale,
                         D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr):
    i = tl.program_id(0)
    h = tl.program_id(1)
    offs_m = i * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    row_ok = offs_m < L
    q = tl.load(Q + h * L * D + offs_m[:, None] * D + offs_d[None, :], mask=row_ok[:, None], other=0.0)
    q = q.to(tl.float32)
    m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    if CAUSAL:
        hi = tl.minimum(S, (i + 1) * BLOCK_M)
    else:
        hi = S
    for start in range(0, hi, BLOCK_N):
        cols = start + offs_n
        col_ok = cols < S
        kt = tl.load(K + h * S * D + cols[:, None] * D + offs_d[None, :], mask=col_ok[:, None], other=0.0)
        vt = tl.load(V + h * S * D + cols[:, None] * D + offs_d[None, :], mask=col_ok[:, None], other=0.0)
        kt = kt.to(tl.float32)
        vt = vt.to(tl.float32)
        s = tl.dot(q, tl.trans(kt)) * scale
        keep = col_ok[None, :]
        if CAUSAL:
            keep = keep & (cols[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m - m_new)
        l = alpha * l + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, vt)
        m = m_new
    o = acc / l[:, None]
    tl.store(Out + h * L * D + offs_m[:, None] * D + offs_d[None, :], o, mask=row_ok[:, None])
    tl.store(Lse + h * L + offs_m, m + tl.log(l), mask=row_ok)


def _flash_launch(qt, kt, vt, scale, causal, L=None, S=None, block_m=16, block_n=16):
    """qt, kt, vt: contiguous (H, L, D), (H, S, D) tensors in the dtype the kernel reads."""
    H, L_, D = qt.shape
    L = L_ if L is None else L
    S = kt.shape[1] if S is None else S
    out = torch.empty_like(qt)
    lse = torch.empty((H, L), dtype=torch.float32, device=qt.device)
    grid = (triton.cdiv(L, block_m), H)
    flash_forward_kernel[grid](qt, kt, vt, out, lse, L, S, scale, D=D, BLOCK_M=block_m,
                               BLOCK_N=block_n, CAUSAL=bool(causal))
    return out.float(), lse


def _as_kernel_input(x, dtype):
    t = torch.as_tensor(x, device=DEVICE)
    return t.to(getattr(torch, dtype)).contiguous()
# %% grade_id: triton_flash_forward
def triton_flash_forward(q, k, v, causal=False, dtype="float32"):
    is_torch = isinstance(q, torch.Tensor)
    qt, kt, vt = (_as_kernel_input(x, dtype) for x in (q, k, v))
    scale = 1.0 / math.sqrt(qt.shape[-1])
    out, _ = _flash_launch(qt, kt, vt, scale, causal, L=qt.shape[1], S=kt.shape[1])
    return out if is_torch else out.cpu().numpy()
# %% grade_id: triton_flash_lse
def triton_flash_lse(q, k, v, causal=False, dtype="float32"):
    is_torch = isinstance(q, torch.Tensor)
    qt, kt, vt = (_as_kernel_input(x, dtype) for x in (q, k, v))
    _, lse = _flash_launch(qt, kt, vt, 1.0 / math.sqrt(qt.shape[-1]), causal)
    return lse if is_torch else lse.cpu().numpy()
# %% grade_id: fast_flash_forward
@triton.jit
def fast_flash_kernel(Q, K, V, Out, L, S, scale,
                      D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      CAUSAL: tl.constexpr, DOT_F32: tl.constexpr):
    start_m = tl.program_id(0)
    h = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + h * L * D + offs_m[:, None] * D + offs_d[None, :], mask=(offs_m < L)[:, None], other=0.0)
    if DOT_F32:
        q = q.to(tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    if CAUSAL:
        hi = tl.minimum(S, (start_m + 1) * BLOCK_M)
    else:
        hi = S
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        kv_mask = (cols < S)[:, None]
        k = tl.load(K + h * S * D + cols[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(V + h * S * D + cols[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        if DOT_F32:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s = tl.dot(q, tl.trans(k)).to(tl.float32) * scale
        s = tl.where((cols < S)[None, :], s, float("-inf"))
        if CAUSAL:
            s = tl.where(cols[None, :] <= offs_m[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v).to(tl.float32)
        m_i = m_new
    tl.store(Out + h * L * D + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None],
             mask=(offs_m < L)[:, None])


def fast_flash_forward(q, k, v, causal=False, dtype="float16"):
    is_torch = isinstance(q, torch.Tensor)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    qt, kt, vt = (torch.as_tensor(x, device=dev).to(getattr(torch, dtype)).contiguous() for x in (q, k, v))
    H, L, D = qt.shape
    S = kt.shape[1]
    out = torch.empty((H, L, D), dtype=torch.float32, device=dev)
    on_gpu = dev == "cuda"
    block_m, block_n = (128, 64) if on_gpu else (32, 32)
    extra = {"num_warps": 8 if D > 64 else 4, "num_stages": 3} if on_gpu else {}
    # the CPU interpreter multiplies bfloat16 tiles wrongly: float32 dots there
    dot_f32 = (not on_gpu) or dtype == "float32"
    grid = (triton.cdiv(L, block_m), H)
    fast_flash_kernel[grid](qt, kt, vt, out, L, S, 1.0 / math.sqrt(D), D=D, BLOCK_M=block_m, BLOCK_N=block_n,
                            CAUSAL=bool(causal), DOT_F32=dot_f32, **extra)
    return out if is_torch else out.cpu().numpy()
