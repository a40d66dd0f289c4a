# honest: exp2 with log2(e) folded into the scale, the log-sum-exp kept in base 2 by the kernel and converted by triton_flash_lse, key tiles of 32, a padded lse buffer cut to L rows, strides passed to the kernel, the tuned part Part 1's kernel relaunched (on a GPU with tiles of 128 by 64 and float16 tiles into tl.dot)
# part: none
# %% grade_id: flash_kernel
import math

LOG2E = 1.4426950408889634


@triton.jit
def flash_forward_kernel(Q, K, V, Out, Lse, L, S, scale_log2, stride_qh, stride_kh, stride_lh,
                         D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr, F32_DOT: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_h = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, D)
    keys = tl.arange(0, BLOCK_N)
    q_ptrs = Q + pid_h * stride_qh + rows[:, None] * D + dims[None, :]
    q = tl.load(q_ptrs, mask=rows[:, None] < L, other=0.0)
    if F32_DOT:  # Triton's CPU interpreter multiplies bfloat16 tiles wrongly
        q = q.to(tl.float32)
    m2 = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")   # running max, in log2 units
    l = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    end = S
    if CAUSAL:
        end = tl.minimum(S, pid_m * BLOCK_M + BLOCK_M)
    for n0 in range(0, end, BLOCK_N):
        n = n0 + keys
        inside = n[:, None] < S
        k = tl.load(K + pid_h * stride_kh + n[:, None] * D + dims[None, :], mask=inside, other=0.0)
        v = tl.load(V + pid_h * stride_kh + n[:, None] * D + dims[None, :], mask=inside, other=0.0)
        if F32_DOT:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s2 = tl.dot(q, tl.trans(k)).to(tl.float32) * scale_log2
        ok = n[None, :] < S
        if CAUSAL:
            ok = ok & (n[None, :] <= rows[:, None])
        s2 = tl.where(ok, s2, float("-inf"))
        m2_new = tl.maximum(m2, tl.max(s2, 1))
        corr = tl.exp2(m2 - m2_new)
        p = tl.exp2(s2 - m2_new[:, None])
        l = l * corr + tl.sum(p, 1)
        acc = acc * corr[:, None]
        acc += tl.dot(p.to(v.dtype), v).to(tl.float32)
        m2 = m2_new
    tl.store(Out + pid_h * stride_qh + rows[:, None] * D + dims[None, :], acc / l[:, None],
             mask=rows[:, None] < L)
    # every row of the padded buffer is written; triton_flash_lse cuts it to L rows
    tl.store(Lse + pid_h * stride_lh + rows, m2 + tl.log2(l))


def _run_kernel(q, k, v, causal, dtype, block_m=16, block_n=32, f32_dot=True, **launch):
    """Returns float32 tensors: the output (H, L, D) and the base-2 lse, padded to whole row tiles."""
    dt = getattr(torch, dtype)
    qt, kt, vt = (torch.as_tensor(a, device=DEVICE).to(dt).contiguous() for a in (q, k, v))
    H, L, D = qt.shape
    S = kt.shape[1]
    n_tiles = triton.cdiv(L, block_m)
    out = torch.zeros((H, L, D), dtype=torch.float32, device=qt.device)
    lse2 = torch.zeros((H, n_tiles * block_m), dtype=torch.float32, device=qt.device)
    flash_forward_kernel[(n_tiles, H)](qt, kt, vt, out, lse2, L, S, LOG2E / math.sqrt(D),
                                       L * D, S * D, n_tiles * block_m,
                                       D=D, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=bool(causal),
                                       F32_DOT=f32_dot, **launch)
    return out, lse2
# %% grade_id: triton_flash_forward
def triton_flash_forward(q, k, v, causal=False, dtype="float32"):
    out, _ = _run_kernel(q, k, v, causal, dtype)
    if torch.is_tensor(q):
        return out
    return np.asarray(out.cpu(), dtype=np.float32)
# %% grade_id: triton_flash_lse
def triton_flash_lse(q, k, v, causal=False, dtype="float32"):
    _, lse2 = _run_kernel(q, k, v, causal, dtype)
    L = q.shape[1]
    lse = lse2[:, :L] * math.log(2.0)          # log x = log2 x * ln 2
    if torch.is_tensor(q):
        return lse
    return np.asarray(lse.cpu(), dtype=np.float32)
# %% grade_id: fast_flash_forward
def fast_flash_forward(q, k, v, causal=False, dtype="float16"):
    if DEVICE == "cuda":  # large tiles, float16 tiles into tl.dot
        out, _ = _run_kernel(q, k, v, causal, dtype, block_m=128, block_n=64, f32_dot=dtype == "float32",
                             num_warps=4, num_stages=3)
    else:  # any correct launch will do: Part 1's kernel with taller row tiles
        out, _ = _run_kernel(q, k, v, causal, dtype, block_m=32, block_n=16)
    if torch.is_tensor(q):
        return out
    return np.asarray(out.cpu(), dtype=np.float32)
