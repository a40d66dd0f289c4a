"""Named mistakes for 17_triton_flash: each fails one kind of hidden case, and the visible check that
stops it names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("17_triton_flash", "a Triton kernel that never rescales its running sum", "test_triton_forward",
     {"flash_kernel": ("alpha = tl.exp(m_i - m_new)  # 0 on the first tile",
                               "alpha = tl.full([BLOCK_M], 1.0, tl.float32)")}),
    ("17_triton_flash", "a Triton causal mask off by one", "test_triton_forward",
     {"flash_kernel": ("keep = keep & (offs_n[None, :] <= offs_m[:, None])",
                               "keep = keep & (offs_n[None, :] < offs_m[:, None])")}),
    ("17_triton_flash", "a Triton kernel accumulating P V in float16", "test_triton_forward",
     {"flash_kernel": ("acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)",
                               "acc = (acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)).to(tl.float16).to(tl.float32)")}),
]

GAPS: dict[tuple[str, str], set[str]] = {}
