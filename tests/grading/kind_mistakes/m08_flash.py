"""Named mistakes for 08_flash: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("08_flash", "an online softmax dropping the last partial block", "test_online_softmax",
     {"online_softmax": ("for j0 in range(0, n, block_size):", "for j0 in range(0, n - block_size + 1, block_size):")}),
    ("08_flash", "an online softmax without the -inf guard", "test_online_softmax",
     {"online_softmax": ("shift = np.where(np.isfinite(m_new), m_new, 0.0)", "shift = m_new")}),
    ("08_flash", "an online softmax over n // block_size pieces", "test_online_softmax",
     {"online_softmax": ("for j0 in range(0, n, block_size):\n        block = x[..., j0:j0 + block_size]  # (..., b)",
                         "for block in np.array_split(x, n // block_size, axis=-1):")}),
    ("08_flash", "a running maximum started at 0", "test_online_softmax",
     {"online_softmax": ("m = np.full(x.shape[:-1], -np.inf)", "m = np.zeros(x.shape[:-1])")}),
    ("08_flash", "a flash forward for 2-D inputs only", "test_flash_forward",
     {"flash_forward": ("lead = q.shape[:-2]", "lead = ()")}),
    ("08_flash", "the untiled flash forward", "test_flash_forward",
     {"flash_forward": ("S, D_v = k.shape[-2], v.shape[-1]", "S, D_v = k.shape[-2], v.shape[-1]\n    block_q, block_k = L, S")}),
    ("08_flash", "a flash forward with an (L, S) causal mask", "test_flash_forward",
     {"flash_forward": ("allowed = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]",
                        "allowed = np.tril(np.ones((L, S), dtype=bool))[i0:i1, j0:j1]")}),
    ("08_flash", "a flash backward for 2-D inputs only", "test_flash_backward",
     {"flash_backward": ("np.swapaxes(k_j, -1, -2)", "k_j.T")}),
    ("08_flash", "a flash backward dividing exp(scores) by exp(lse)", "test_flash_backward",
     {"flash_backward": ("p = np.exp(scores - lse[..., i0:i1, None])", "p = np.exp(scores) / np.exp(lse[..., i0:i1, None])")}),
    ("08_flash", "the untiled flash backward", "test_flash_backward",
     {"flash_backward": ("S = k.shape[-2]", "S = k.shape[-2]\n    block_q, block_k = L, S")}),
    ("08_flash", "a flash backward with an (L, S) causal mask", "test_flash_backward",
     {"flash_backward": ("allowed = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]",
                         "allowed = np.tril(np.ones((L, S), dtype=bool))[i0:i1, j0:j1]")}),
    ("08_flash", "a flash forward without the running maximum", "test_flash_forward",
     {"flash_forward": [("shift = np.where(np.isfinite(m_new), m_new, 0.0)", "shift = np.zeros_like(m_new)"),
                        ("alpha = np.exp(m - shift)", "alpha = np.ones_like(m)"),
                        ("lse[..., i0:i1] = m + np.log(ell)", "lse[..., i0:i1] = np.log(ell)")]}),
    ("08_flash", "causal key tiles that run past S", "test_flash_forward",
     {"flash_forward": ("j_stop = min(S, i1) if causal else S", "j_stop = i1 if causal else S")}),
    ("08_flash", "an online softmax that never rescales its running sum", "test_online_softmax",
     {"online_softmax": ("total = total * np.exp(m - shift) + np.sum(", "total = total + np.sum(")}),
    ("08_flash", "a causal backward starting at row tile j0 // block_k", "test_flash_backward",
     {"flash_backward": ("i_start = (j0 // block_q) * block_q", "i_start = (j0 // block_k) * block_q")}),
    ("08_flash", "a flash forward whose running maximum starts at 0", "test_flash_forward",
     {"flash_forward": ("m = np.full(lead + (i1 - i0,), -np.inf)", "m = np.zeros(lead + (i1 - i0,))")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {
    ("08_flash", "test_online_softmax"): {"rows of +-1e4, float32 input"},
    ("08_flash", "test_flash_forward"): {"float32 input, causal"},
}
