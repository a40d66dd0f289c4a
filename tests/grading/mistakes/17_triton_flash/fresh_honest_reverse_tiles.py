# honest: the key tiles are walked from the last one the program needs back to the first (the online softmax does not care about the order), a fully masked row guarded by a safe maximum, tiles of 32 rows by 16 keys, the tuned part a second launch of the same kernel, its grid laid out heads first (on a GPU with tiles of 128 by 64 and float16 tiles into tl.dot)
# part: none
# %% grade_id: flash_kernel
import math


@triton.jit
def _flash_rev(Q, K, V, Out, Lse, L, S, scale,
               D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
               HEAD_FIRST: tl.constexpr, F32_DOT: tl.constexpr):
    if HEAD_FIRST:
        h = tl.program_id(0)
        tile = tl.program_id(1)
    else:
        tile = tl.program_id(0)
        h = tl.program_id(1)
    r = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.arange(0, D)
    q = tl.load(Q + (h * L + r)[:, None] * D + c[None, :], mask=(r < L)[:, None], other=0.0)
    if F32_DOT:
        q = q.to(tl.float32)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.full([BLOCK_M], 0.0, tl.float32)
    o = tl.full([BLOCK_M, D], 0.0, tl.float32)
    stop = S
    if CAUSAL:
        stop = tl.minimum(S, (tile + 1) * BLOCK_M)
    n_tiles = tl.cdiv(stop, BLOCK_N)
    for t in range(0, n_tiles):
        start = (n_tiles - 1 - t) * BLOCK_N
        n = start + tl.arange(0, BLOCK_N)
        kk = tl.load(K + (h * S + n)[:, None] * D + c[None, :], mask=(n < S)[:, None], other=0.0)
        vv = tl.load(V + (h * S + n)[:, None] * D + c[None, :], mask=(n < S)[:, None], other=0.0)
        if F32_DOT:
            kk = kk.to(tl.float32)
            vv = vv.to(tl.float32)
        s = tl.dot(q, tl.trans(kk)).to(tl.float32) * scale
        visible = (n < S)[None, :] & (r >= 0)[:, None]
        if CAUSAL:
            visible = visible & (n[None, :] <= r[:, None])
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)   # a row with nothing seen yet
        p = tl.exp(s - m_safe[:, None])
        a = tl.exp(m - m_safe)
        l = a * l + tl.sum(p, 1)
        o = a[:, None] * o + tl.dot(p.to(vv.dtype), vv).to(tl.float32)
        m = m_new
    tl.store(Out + (h * L + r)[:, None] * D + c[None, :], o / l[:, None], mask=(r < L)[:, None])
    tl.store(Lse + h * L + r, m + tl.log(l), mask=r < L)


def flash_launch(q, k, v, causal, dtype, block_m=32, block_n=16, head_first=False, f32_dot=True, **launch):
    kind = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    q_, k_, v_ = [torch.as_tensor(x, device=DEVICE).to(kind).contiguous() for x in (q, k, v)]
    H, L, D = q_.shape
    S = k_.shape[1]
    out = q_.new_empty((H, L, D), dtype=torch.float32)
    lse = q_.new_empty((H, L), dtype=torch.float32)
    tiles = triton.cdiv(L, block_m)
    grid = (H, tiles) if head_first else (tiles, H)
    _flash_rev[grid](q_, k_, v_, out, lse, L, S, D ** -0.5, D=D, BLOCK_M=block_m, BLOCK_N=block_n,
                     CAUSAL=bool(causal), HEAD_FIRST=head_first, F32_DOT=f32_dot, **launch)
    return out, lse
# %% grade_id: triton_flash_forward
def triton_flash_forward(q, k, v, causal=False, dtype="float32"):
    out = flash_launch(q, k, v, causal, dtype)[0]
    return out if isinstance(q, torch.Tensor) else out.detach().cpu().numpy().astype(np.float32, copy=False)
# %% grade_id: triton_flash_lse
def triton_flash_lse(q, k, v, causal=False, dtype="float32"):
    lse = flash_launch(q, k, v, causal, dtype)[1]
    return lse if isinstance(q, torch.Tensor) else lse.detach().cpu().numpy()
# %% grade_id: fast_flash_forward
def fast_flash_forward(q, k, v, causal=False, dtype="float16"):
    if DEVICE == "cuda":
        out = flash_launch(q, k, v, causal, dtype, block_m=128, block_n=64, head_first=True,
                           f32_dot=dtype == "float32", num_warps=4, num_stages=3)[0]
    else:
        out = flash_launch(q, k, v, causal, dtype, block_m=16, block_n=16, head_first=True)[0]
    return out if isinstance(q, torch.Tensor) else out.cpu().numpy()
