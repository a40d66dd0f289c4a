# Part 1 hands the work to PyTorch's own attention (scaled_dot_product_attention), Part 2 to the
# course library, Part 3 to Part 1: none of them is a Triton kernel, so no credit for any part.
# expect: test_triton_forward=0, test_triton_lse=0, test_triton_speed=0
# %% grade_id: triton_flash_forward
def triton_flash_forward(q, k, v, causal=False, dtype="float32"):
    q, k, v = (torch.as_tensor(a).to(getattr(torch, dtype)).float() for a in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).numpy()
# %% grade_id: triton_flash_lse
def triton_flash_lse(q, k, v, causal=False, dtype="float32"):
    from attnmath.flash import flash_attention_forward
    return flash_attention_forward(q, k, v, causal=causal)[1].lse
# %% grade_id: fast_flash_forward
def fast_flash_forward(q, k, v, causal=False, dtype="float16"):
    return triton_flash_forward(q, k, v, causal, dtype)
