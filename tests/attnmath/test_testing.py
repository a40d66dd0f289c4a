"""Tests of attnmath.testing: the checking helpers must catch what they claim to catch."""

import numpy as np
import pytest
import torch

from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.testing import (assert_close, check_gradient, numerical_gradient, random_qkv,
                              sdpa_oracle, to_torch, uses_reference)


def test_assert_close_accepts_equal_arrays_and_torch_tensors():
    x = np.linspace(-1, 1, 7)
    assert_close(x, x.copy())
    assert_close(torch.from_numpy(x), x)
    assert_close(np.array([np.inf, -np.inf, np.nan]), np.array([np.inf, -np.inf, np.nan]))


def test_assert_close_names_the_value_and_the_worst_index():
    expected = np.zeros((2, 3))
    actual = expected.copy()
    actual[1, 2] = 1e-3
    with pytest.raises(AssertionError, match=r"probs: 1 of 6 entries differ; worst at index \(1, 2\)"):
        assert_close(actual, expected, name="probs")


@pytest.mark.parametrize("actual,expected,msg", [
    (np.zeros(3), np.zeros(4), "shape"),
    (np.array([np.nan]), np.array([0.0]), "NaN mismatch"),
    (np.array([np.inf]), np.array([-np.inf]), "differ"),
    (np.array([1.0 + 1e-6]), np.array([1.0]), "differ"),
])
def test_assert_close_rejects_what_differs(actual, expected, msg):
    with pytest.raises(AssertionError, match=msg):
        assert_close(actual, expected)


def test_numerical_gradient_of_a_quadratic_is_exact_to_rounding():
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    x = np.array([0.3, -0.7])
    grad = numerical_gradient(lambda v: 0.5 * v @ A @ v, x)
    assert_close(grad, A @ x, rtol=1e-8, atol=1e-10)
    assert_close(x, np.array([0.3, -0.7]), rtol=0, atol=0)  # the input is not modified


def test_check_gradient_names_the_argument_when_wrong():
    x = np.array([1.0, 2.0])
    check_gradient(lambda v: float(np.sum(v ** 3)), x, 3 * x ** 2, name="x")
    with pytest.raises(AssertionError, match="gradient with respect to weights"):
        check_gradient(lambda v: float(np.sum(v ** 3)), x, 2 * x, name="weights")


def test_random_qkv_shapes_and_reproducibility():
    q, k, v = random_qkv(2, 4, 5, 7, 8, 3, H_kv=2, seed=1)
    assert q.shape == (2, 4, 5, 8) and k.shape == (2, 2, 7, 8) and v.shape == (2, 2, 7, 3)
    assert_close(random_qkv(seed=3)[0], random_qkv(seed=3)[0], rtol=0, atol=0)
    with pytest.raises(ValueError, match="L must be >= 0"):
        random_qkv(L=-1)
    q, k, v = random_qkv(L=0, S=3)  # empty lengths are valid attention inputs
    assert q.shape == (2, 2, 0, 8) and k.shape == (2, 2, 3, 8)


def test_to_torch_keeps_dtype_and_can_require_grad():
    a, b = to_torch(np.ones(2, dtype=np.float32), np.zeros(3), requires_grad=True)
    assert a.dtype == torch.float32 and b.dtype == torch.float64 and a.requires_grad


def _own(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_uses_reference_passes_honest_code_and_catches_delegation():
    import attnmath.softmax as lib_softmax
    from attnmath.softmax import softmax

    def direct(x):
        return softmax(x)

    def via_module(x):
        return lib_softmax.softmax(x)

    def via_helper(x):
        return direct(x)

    def via_import(x):
        import attnmath.softmax as m
        return m.softmax(x)

    def via_torch(x):
        return torch.softmax(torch.from_numpy(x), 0).numpy()

    assert not uses_reference(_own)
    for fn in (direct, via_module, via_helper, via_import, via_torch):
        assert uses_reference(fn), fn.__name__


def _softmax_attention_by_hand(q, k, v, allowed, bias, scale):
    """The definition, row by row in float64: weights e^(s q.k + b) over the allowed keys."""
    B, H, L, _ = q.shape
    group = H // k.shape[1]
    out = np.zeros((B, H, L, v.shape[-1]))
    for b in range(B):
        for h in range(H):
            for i in range(L):
                keys = np.flatnonzero(allowed[b, h, i] & np.isfinite(bias[b, h, i]))
                if keys.size == 0:
                    continue  # a fully masked row: zeros
                z = scale * k[b, h // group, keys] @ q[b, h, i] + bias[b, h, i, keys]
                w = np.exp(z - z.max())
                out[b, h, i] = (w / w.sum()) @ v[b, h // group, keys]
    return out


@settings(max_examples=40, deadline=None)
@given(L=st.integers(0, 5), S=st.integers(0, 5), H_kv=st.integers(1, 2), group=st.integers(1, 2),
       causal=st.booleans(),
       alignment=st.one_of(st.sampled_from(["top_left", "bottom_right"]), st.integers(-6, 6)),
       window=st.one_of(st.none(), st.integers(1, 4)), use_mask=st.booleans(), use_bias=st.booleans(),
       seed=st.integers(0, 2**16))
def test_sdpa_oracle_equals_the_definition_with_masks_windows_and_biases(
        L, S, H_kv, group, causal, alignment, window, use_mask, use_bias, seed):
    rng = np.random.default_rng(seed)
    q, k, v = random_qkv(B=2, H=H_kv * group, L=L, S=S, D=3, D_v=2, H_kv=H_kv, seed=seed)
    mask = rng.random((L, S)) > 0.3 if use_mask else None
    bias = np.where(rng.random((L, S)) > 0.2, rng.standard_normal((L, S)), -np.inf) if use_bias else None
    out = sdpa_oracle(q, k, v, mask=mask, bias=bias, scale=0.7, causal=causal,
                      causal_alignment=alignment, window=window)
    offset = alignment if isinstance(alignment, int) else (S - L if alignment == "bottom_right" else 0)
    i, j = np.arange(L)[:, None] + offset, np.arange(S)[None, :]
    allowed = np.ones((L, S), bool) if mask is None else mask.copy()
    if causal:
        allowed &= j <= i
    if window is not None:
        allowed &= j > i - window
    shape = q.shape[:-1] + (S,)
    full_bias = np.broadcast_to(np.zeros((L, S)) if bias is None else bias, shape)
    expected = _softmax_attention_by_hand(q, k, v, np.broadcast_to(allowed, shape), full_bias, 0.7)
    assert_close(out, expected, name="oracle")

