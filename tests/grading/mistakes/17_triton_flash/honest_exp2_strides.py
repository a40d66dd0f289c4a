# honest: kernel works in base 2 (exp2/log2 with the scale folded into log2(e)), takes explicit strides, walks every key tile even when causal (allowed by the task), converts the base-2 lse back to natural log; one shared launcher returns (out, lse) for all three parts
# part: none
# %% grade_id: flash_kernel
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@triton.jit
def flash_fwd_base2(Q, K, V, Out, Lse, L, S, qk_scale_log2,
                    stride_qh, stride_ql, stride_kh, stride_ks, stride_oh, stride_ol,
                    D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_h = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q_tile = tl.load(Q + pid_h * stride_qh + offs_m[:, None] * stride_ql + offs_d[None, :],
                     mask=offs_m[:, None] < L, other=0.0).to(tl.float32)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, S, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        in_range = offs_n < S
        kv_off = pid_h * stride_kh + offs_n[:, None] * stride_ks + offs_d[None, :]
        k_tile = tl.load(K + kv_off, mask=in_range[:, None], other=0.0).to(tl.float32)
        v_tile = tl.load(V + kv_off, mask=in_range[:, None], other=0.0).to(tl.float32)
        t = tl.dot(q_tile, tl.trans(k_tile)) * qk_scale_log2        # scores times log2(e)
        visible = in_range[None, :] & (offs_m[:, None] >= 0)
        if CAUSAL:
            visible = visible & (offs_n[None, :] <= offs_m[:, None])
        t = tl.where(visible, t, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(t, axis=1))
        # a tile may hide every key of a row while m is still -inf: keep the exponents finite
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        corr = tl.exp2(m_i - m_safe)
        p = tl.exp2(t - m_safe[:, None])
        l_i = l_i * corr + tl.sum(p, axis=1)
        acc = acc * corr[:, None] + tl.dot(p, v_tile)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(Out + pid_h * stride_oh + offs_m[:, None] * stride_ol + offs_d[None, :], out,
             mask=offs_m[:, None] < L)
    tl.store(Lse + pid_h * L + offs_m, (m_i + tl.log2(l_i)) * 0.6931471805599453, mask=offs_m < L)


def run_flash(q, k, v, causal, dtype, block_m=16, block_n=32, **launch):
    dev = q.device if isinstance(q, torch.Tensor) else DEVICE
    wanted = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    tq = torch.as_tensor(q, device=dev).to(wanted).contiguous()
    tk = torch.as_tensor(k, device=dev).to(wanted).contiguous()
    tv = torch.as_tensor(v, device=dev).to(wanted).contiguous()
    H, L, D = tq.shape
    S = tk.shape[1]
    out = torch.zeros((H, L, D), dtype=torch.float32, device=dev)
    lse = torch.zeros((H, L), dtype=torch.float32, device=dev)
    grid = (triton.cdiv(L, block_m), H)
    flash_fwd_base2[grid](tq, tk, tv, out, lse, L, S, LOG2E / float(np.sqrt(D)),
                          tq.stride(0), tq.stride(1), tk.stride(0), tk.stride(1), out.stride(0), out.stride(1),
                          D=D, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=bool(causal), **launch)
    return out, lse
# %% grade_id: triton_flash_forward
def triton_flash_forward(q, k, v, causal=False, dtype="float32"):
    out, _ = run_flash(q, k, v, causal, dtype)
    return out.detach().cpu().numpy().astype(np.float32)
# %% grade_id: triton_flash_lse
def triton_flash_lse(q, k, v, causal=False, dtype="float32"):
    _, lse = run_flash(q, k, v, causal, dtype)
    return lse.detach().cpu().numpy()
# %% grade_id: fast_flash_forward
def fast_flash_forward(q, k, v, causal=False, dtype="float16"):
    if isinstance(q, torch.Tensor) and q.is_cuda:
        out, _ = run_flash(q, k, v, causal, dtype, block_m=64, block_n=64, num_warps=4, num_stages=3)
        return out
    out, _ = run_flash(q, k, v, causal, dtype, block_m=16, block_n=16)
    return out.cpu().numpy()
