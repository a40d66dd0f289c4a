# Both launchers hand the work to PyTorch's own attention (scaled_dot_product_attention) instead
# of a Triton kernel: no credit for either part.
# expect: test_triton_forward=0, test_triton_speed=0
# %% grade_id: triton_flash_forward
def triton_flash_forward(q, k, v, causal=False, dtype="float32"):
    q, k, v = (torch.as_tensor(a).to(getattr(torch, dtype)).float() for a in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).numpy()
# %% grade_id: fast_flash_forward
def fast_flash_forward(q, k, v, causal=False, dtype="float16"):
    return triton_flash_forward(q, k, v, causal, dtype)
