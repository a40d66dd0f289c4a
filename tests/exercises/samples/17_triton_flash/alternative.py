# Correct answers written differently: scores in base 2 (exp2 with log2(e) folded into the scale),
# keys loaded as a transposed (D, BLOCK_N) tile, key tiles of 32, and the log-sum-exp from base-2
# running values.
# expect: test_triton_forward=5, test_triton_lse=2, test_triton_speed=2
# %% grade_id: flash_kernel
@triton.jit
def flash_forward_kernel(Q, K, V, Out, Lse, L, S, scale,
                         D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr, UPCAST: tl.constexpr):
    """Program (i, h): rows i * BLOCK_M ... of head h; q, k, v, out contiguous (H, L|S, D)."""
    i = tl.program_id(0)
    h = tl.program_id(1)
    rows = i * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, D)
    q = tl.load(Q + h * L * D + rows[:, None] * D + cols[None, :], mask=rows[:, None] < L, other=0.0)
    q = q.to(tl.float32) * (scale * 1.4426950408889634)
    best = tl.zeros([BLOCK_M], tl.float32) - float("inf")
    total = tl.zeros([BLOCK_M], tl.float32)
    o = tl.zeros([BLOCK_M, D], tl.float32)
    stop = S
    if CAUSAL:
        stop = tl.minimum(S, i * BLOCK_M + BLOCK_M)
    for j0 in range(0, stop, BLOCK_N):
        keys = j0 + tl.arange(0, BLOCK_N)
        kT = tl.load(K + h * S * D + keys[None, :] * D + cols[:, None], mask=keys[None, :] < S, other=0.0)
        v = tl.load(V + h * S * D + keys[:, None] * D + cols[None, :], mask=keys[:, None] < S, other=0.0)
        x = tl.dot(q, kT.to(tl.float32))
        ok = keys[None, :] < S
        if CAUSAL:
            ok = ok & (keys[None, :] <= rows[:, None])
        x = tl.where(ok, x, float("-inf"))
        new_best = tl.maximum(best, tl.max(x, 1))
        w = tl.exp2(x - new_best[:, None])
        shrink = tl.exp2(best - new_best)
        total = total * shrink + tl.sum(w, 1)
        o = o * shrink[:, None] + tl.dot(w, v.to(tl.float32))
        best = new_best
    tl.store(Out + h * L * D + rows[:, None] * D + cols[None, :], o / total[:, None], mask=rows[:, None] < L)
    tl.store(Lse + h * L + rows, (best + tl.log2(total)) * 0.6931471805599453, mask=rows < L)


def run_kernel(q, k, v, causal, dtype, block_n):
    back = isinstance(q, torch.Tensor)
    q, k, v = (torch.as_tensor(a, device=DEVICE).to(getattr(torch, dtype)).contiguous() for a in (q, k, v))
    H, L, D = q.shape
    out = torch.zeros((H, L, D), device=DEVICE)
    lse = torch.zeros((H, L), device=DEVICE)
    flash_forward_kernel[(triton.cdiv(L, 16), H)](q, k, v, out, lse, L, k.shape[1], D ** -0.5, D=D, BLOCK_M=16,
                                                  BLOCK_N=block_n, CAUSAL=causal, UPCAST=True)
    return (out, lse) if back else (out.cpu().numpy(), lse.cpu().numpy())
# %% grade_id: triton_flash_forward
def triton_flash_forward(q, k, v, causal=False, dtype="float32"):
    return run_kernel(q, k, v, causal, dtype, 32)[0]
# %% grade_id: triton_flash_lse
def triton_flash_lse(q, k, v, causal=False, dtype="float32"):
    return run_kernel(q, k, v, causal, dtype, 16)[1]
# %% grade_id: fast_flash_forward
def fast_flash_forward(q, k, v, causal=False, dtype="float16"):
    return run_kernel(q, k, v, causal, dtype, 16)[0]
