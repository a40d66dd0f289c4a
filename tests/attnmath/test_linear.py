"""Tests of attnmath.linear: linear attention, its recurrent form, Performer features, flop counts."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.attention import scaled_dot_product_attention
from attnmath.linear import (
    attention_flops,
    causal_linear_attention,
    draw_gaussian_features,
    draw_orthogonal_features,
    elu_feature_map,
    linear_attention,
    linear_attention_flops,
    linear_attention_quadratic,
    performer_attention,
    random_feature_map,
)
from attnmath.testing import assert_close, random_qkv, to_torch

SETTINGS = settings(max_examples=30, deadline=None)

shapes = st.tuples(
    st.integers(1, 2),  # B
    st.sampled_from([(1, 1), (2, 2), (4, 2), (3, 1)]),  # (H, H_kv)
    st.integers(1, 7),  # L
    st.integers(1, 7),  # S
    st.integers(1, 5),  # D
    st.integers(1, 4),  # D_v
    st.integers(0, 10_000),  # seed
)


def _torch_linear_attention(q, k, v, *, causal=False):
    """Oracle: (phi(Q) phi(K)^T) V normalised by rows, with torch's ELU, in float64."""
    tq, tk, tv = to_torch(q, k, v)
    H = tq.shape[-3]
    tk = tk.repeat_interleave(H // tk.shape[-3], dim=-3)
    tv = tv.repeat_interleave(H // tv.shape[-3], dim=-3)
    pq, pk = F.elu(tq) + 1, F.elu(tk) + 1
    a = pq @ pk.transpose(-1, -2)  # (B, H, L, S)
    if causal:
        a = torch.tril(a)
    return (a / a.sum(-1, keepdim=True)) @ tv


# ----------------------------------------------------------------------------- feature map


def test_elu_feature_map_matches_torch_elu_plus_one():
    x = np.random.default_rng(0).standard_normal((4, 6)) * 5
    assert_close(elu_feature_map(x), F.elu(to_torch(x)) + 1, name="elu + 1")


@pytest.mark.claim(
    "003 §5.3",
    r"$\phi(x) = \operatorname{elu}(x) + 1$, implemented as `phi = np.maximum(0, x) + 1`",
    "corrected",
    correction=r"ReLU + 1 is a different feature map: it equals $\operatorname{elu}(x) + 1$ for "
               r"$x \ge 0$ but is the constant 1 (with zero gradient) for every $x < 0$, where "
               r"$\operatorname{elu}(x) + 1 = \exp(x)$.",
    domain=r"101 points in $[-30, 30]$: the two maps agree exactly on $x \ge 0$ and differ at "
           "every $x < 0$",
    box="corr-elu-performer")
def test_elu_feature_map_is_positive_and_differs_from_relu_plus_one():
    x = np.linspace(-30.0, 30.0, 101)
    phi = elu_feature_map(x)
    assert (phi > 0).all()
    relu_plus_one = np.maximum(0.0, x) + 1.0
    negative = x < 0
    # The two maps agree for x >= 0 but relu + 1 is the constant 1 for every negative x.
    assert_close(phi[~negative], relu_plus_one[~negative])
    assert (phi[negative] < relu_plus_one[negative]).all()


def test_elu_feature_map_does_not_overflow_for_large_inputs():
    with np.errstate(over="raise"):
        assert_close(elu_feature_map(np.array([1e300, -1e300])), np.array([1e300 + 1.0, 0.0]))


# ----------------------------------------------------------------------------- linear attention


def test_linear_attention_matches_torch_quadratic_form():
    q, k, v = random_qkv(B=2, H=4, L=6, S=9, D=5, D_v=3, H_kv=2, seed=1)
    assert_close(linear_attention(q, k, v), _torch_linear_attention(q, k, v), name="linear attention")


@SETTINGS
@given(shapes)
def test_linear_attention_equals_the_quadratic_form(shape):
    B, (H, H_kv), L, S, D, D_v, seed = shape
    q, k, v = random_qkv(B=B, H=H, L=L, S=S, D=D, D_v=D_v, H_kv=H_kv, seed=seed)
    assert_close(linear_attention(q, k, v), linear_attention_quadratic(q, k, v), name="out")


@SETTINGS
@given(shapes)
def test_causal_linear_attention_equals_the_causal_quadratic_form(shape):
    B, (H, H_kv), L, _, D, D_v, seed = shape
    q, k, v = random_qkv(B=B, H=H, L=L, D=D, D_v=D_v, H_kv=H_kv, seed=seed)
    causal = np.tril(np.ones((L, L), dtype=bool))
    expected = linear_attention_quadratic(q, k, v, mask=causal)
    assert_close(causal_linear_attention(q, k, v), expected, name="causal out")


def test_causal_linear_attention_matches_torch():
    q, k, v = random_qkv(B=1, H=2, L=8, D=4, D_v=5, seed=2)
    assert_close(causal_linear_attention(q, k, v), _torch_linear_attention(q, k, v, causal=True))


def test_last_causal_row_equals_the_noncausal_row():
    q, k, v = random_qkv(B=2, H=1, L=6, D=3, seed=3)
    assert_close(causal_linear_attention(q, k, v)[..., -1, :], linear_attention(q, k, v)[..., -1, :])


def test_linear_attention_accepts_plain_matrices():
    q, k, v = random_qkv(B=1, H=1, L=4, S=5, D=3, seed=4)
    assert_close(linear_attention(q[0, 0], k[0, 0], v[0, 0]), linear_attention(q, k, v)[0, 0])


@SETTINGS
@given(shapes)
def test_linear_attention_output_lies_in_the_convex_hull_of_the_values(shape):
    B, (H, H_kv), L, S, D, D_v, seed = shape
    q, k, v = random_qkv(B=B, H=H, L=L, S=S, D=D, D_v=D_v, H_kv=H_kv, seed=seed)
    out = linear_attention(q, k, v)  # (B, H, L, D_v)
    v_rep = np.repeat(v, H // H_kv, axis=1)  # (B, H, S, D_v)
    tol = 1e-12
    assert (out >= v_rep.min(axis=-2, keepdims=True) - tol).all()
    assert (out <= v_rep.max(axis=-2, keepdims=True) + tol).all()


def test_output_is_invariant_to_rescaling_the_feature_map():
    # With no epsilon in the denominator the kernel ratio is scale-free; the seed's
    # "+ 1e-6" would change this output by far more than rounding when the features are small.
    q, k, v = random_qkv(B=1, H=2, L=5, D=4, seed=5)
    tiny = linear_attention(q, k, v, feature_map=lambda x: 1e-9 * elu_feature_map(x))
    assert_close(tiny, linear_attention(q, k, v), name="rescaled feature map")


@pytest.mark.claim(
    "003 §5.3",
    "The linear-attention code with `phi = np.maximum(0, x) + 1` computes elu + 1 linear attention",
    "corrected",
    correction="ReLU + 1 features give a different attention output than elu + 1 features.",
    domain="a counterexample: $L = S = 6$, $D = 4$",
    box="corr-elu-performer")
def test_relu_plus_one_feature_map_gives_a_different_attention():
    q, k, v = random_qkv(B=1, H=1, L=6, D=4, seed=6)
    relu1 = linear_attention(q, k, v, feature_map=lambda x: np.maximum(0.0, x) + 1.0)
    assert np.max(np.abs(relu1 - linear_attention(q, k, v))) > 1e-3


def test_linear_attention_rejects_mismatched_head_dims():
    q, k, v = random_qkv(L=3, D=4)
    with pytest.raises(ValueError, match="head dim D"):
        linear_attention(q, k[..., :3], v)


def test_linear_attention_rejects_a_feature_map_with_a_nonpositive_normaliser():
    q, k, v = random_qkv(L=3, D=4)
    with pytest.raises(ValueError, match="normaliser"):
        linear_attention(q, k, v, feature_map=np.zeros_like)


def test_linear_attention_quadratic_rejects_negative_features():
    q, k, v = random_qkv(L=3, D=4)
    with pytest.raises(ValueError, match="non-negative"):
        linear_attention_quadratic(q, k, v, feature_map=lambda x: -elu_feature_map(x))


def test_causal_linear_attention_rejects_different_lengths():
    q, k, v = random_qkv(L=3, S=4, D=2)
    with pytest.raises(ValueError, match="L == S"):
        causal_linear_attention(q, k, v)


def test_feature_map_that_changes_leading_axes_is_rejected():
    q, k, v = random_qkv(L=3, D=2)
    with pytest.raises(ValueError, match="feature_map must map q"):
        linear_attention(q, k, v, feature_map=lambda x: np.ones(3))


# ----------------------------------------------------------------------------- random features


def _kernel_estimates(x, y, omega):
    """Per-feature estimates m * phi_i(x) phi_i(y), whose mean is phi(x) . phi(y)."""
    m = omega.shape[0]
    return m * random_feature_map(x, omega) * random_feature_map(y, omega)


@pytest.mark.parametrize("draw", [draw_gaussian_features, draw_orthogonal_features])
def test_random_features_estimate_the_exponential_kernel_without_bias(draw):
    rng = np.random.default_rng(7)
    D, m = 4, 200_000
    for trial in range(3):
        x, y = rng.standard_normal((2, D)) * 0.4
        omega = draw(m, D, seed=100 + trial)
        estimate = np.sum(random_feature_map(x, omega) * random_feature_map(y, omega))
        exact = np.exp(x @ y)
        # Exact standard deviation of the mean of m independent single-feature estimates.
        std = np.exp(x @ y) * np.sqrt((np.exp((x + y) @ (x + y)) - 1.0) / m)
        assert abs(estimate - exact) < 5 * std, (estimate, exact, std)
        # The sample spread agrees with that formula (i.i.d. case only).
        if draw is draw_gaussian_features:
            sample_std = _kernel_estimates(x, y, omega).std() / np.sqrt(m)
            assert abs(sample_std / std - 1.0) < 0.2


def test_random_features_are_positive_and_match_the_formula():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5))
    omega = draw_gaussian_features(7, 5, seed=1)
    phi = random_feature_map(x, omega)
    assert (phi > 0).all()
    for i in range(3):
        for j in range(7):
            direct = np.exp(omega[j] @ x[i] - x[i] @ x[i] / 2) / np.sqrt(7)
            assert abs(phi[i, j] - direct) <= 1e-14 * direct


def test_orthogonal_features_are_orthogonal_within_a_block():
    D = 6
    omega = draw_orthogonal_features(2 * D + 3, D, seed=3)
    assert omega.shape == (2 * D + 3, D)
    for block in (omega[:D], omega[D:2 * D], omega[2 * D:]):
        gram = block @ block.T
        off = gram - np.diag(np.diag(gram))
        assert np.max(np.abs(off)) < 1e-10 * np.max(np.diag(gram))


def test_orthogonal_feature_rows_have_gaussian_norms():
    # Each row is marginally N(0, I_D): E|w|^2 = D.
    D = 5
    omega = draw_orthogonal_features(40_000, D, seed=4)
    sq = np.sum(omega ** 2, axis=1)
    assert abs(sq.mean() - D) < 5 * np.sqrt(2 * D / sq.size)


def test_feature_draws_are_reproducible_from_the_seed():
    assert_close(draw_orthogonal_features(10, 3, seed=9), draw_orthogonal_features(10, 3, seed=9))
    assert not np.allclose(draw_gaussian_features(10, 3, seed=9), draw_gaussian_features(10, 3, seed=10))


def test_random_feature_map_rejects_wrong_projection_shape():
    with pytest.raises(ValueError, match=r"omega must have shape \(m, D\) with x's D=4"):
        random_feature_map(np.ones((2, 4)), np.ones((8, 3)))


def test_feature_draw_rejects_nonpositive_count():
    with pytest.raises(ValueError, match="m must be >= 1"):
        draw_orthogonal_features(0, 3, seed=0)


# ----------------------------------------------------------------------------- Performer


def test_performer_error_shrinks_as_the_number_of_features_grows():
    # Queries and keys of norm ~ 1.4 (the relative variance of one feature grows like
    # exp(|q + k|^2 / sqrt(D)), so unit-normal entries in D = 8 would need far more features).
    q, k, v = random_qkv(B=1, H=2, L=32, D=8, seed=11)
    q, k = 0.5 * q, 0.5 * k
    exact, _ = scaled_dot_product_attention(q, k, v)
    errors = {}
    for m in (64, 4096):
        errs = [np.sqrt(np.mean((performer_attention(q, k, v, n_features=m, seed=s) - exact) ** 2))
                for s in range(4)]
        errors[m] = np.mean(errs)
    # Monte Carlo error ~ 1/sqrt(m): a factor of 8 in theory; ask for a clear factor 3.
    assert errors[4096] < errors[64] / 3, errors


def test_performer_equals_linear_attention_with_the_unshifted_features():
    q, k, v = random_qkv(B=2, H=2, L=5, S=7, D=4, D_v=3, seed=12)
    m, seed, scale = 16, 5, 0.3
    omega = draw_orthogonal_features(m, 4, seed)
    phi = lambda x: random_feature_map(x * np.sqrt(scale), omega)  # noqa: E731
    assert_close(performer_attention(q, k, v, n_features=m, seed=seed, scale=scale),
                 linear_attention(q, k, v, feature_map=phi), name="performer")


def test_performer_does_not_overflow_for_large_scores():
    q, k, v = random_qkv(B=1, H=1, L=4, D=4, seed=13)
    out = performer_attention(q * 40, k * 40, v, n_features=32, seed=0)
    assert np.isfinite(out).all()


def test_performer_rejects_zero_features():
    q, k, v = random_qkv(L=3, D=4)
    with pytest.raises(ValueError, match="n_features must be >= 1"):
        performer_attention(q, k, v, n_features=0, seed=0)


# ----------------------------------------------------------------------------- flop counts


def _torch_flops(fn):
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.mark.claim(
    "000 Complexity Analysis",
    r"Time: $QK^\top$ $O(n m d_k)$, softmax $O(n m)$, $AV$ $O(n m d_v)$; total $O(n m (d_k + d_v))$",
    "verified",
    domain=r"$1 \le L, S, D, D_v \le 24$ ($L \ne S$, $D \ne D_v$ included) against torch's FLOP "
           "counter, hypothesis")
@SETTINGS
@given(L=st.integers(1, 24), S=st.integers(1, 24), D=st.integers(1, 24), D_v=st.integers(1, 24))
def test_attention_flops_match_torch_flop_counter(L, S, D, D_v):
    q, k, v = (torch.randn(n, d, dtype=torch.float64) for n, d in ((L, D), (S, D), (S, D_v)))

    def run():
        p = torch.softmax(q @ k.T, dim=-1)
        return p @ v

    assert attention_flops(L, S, D, D_v) == _torch_flops(run)


@pytest.mark.parametrize("L,S,D_phi,D_v", [(5, 7, 3, 4), (16, 16, 8, 8), (1, 9, 2, 6)])
def test_linear_attention_flops_match_torch_flop_counter(L, S, D_phi, D_v):
    pq, pk, v = (torch.rand(n, d, dtype=torch.float64) + 0.1 for n, d in ((L, D_phi), (S, D_phi), (S, D_v)))

    def run():
        kv = pk.T @ v  # (D_phi, D_v)
        z = pk.T @ torch.ones(S, 1, dtype=torch.float64)  # (D_phi, 1)
        return (pq @ kv) / (pq @ z)

    assert linear_attention_flops(L, S, D_phi, D_v) == _torch_flops(run)


@pytest.mark.claim(
    "002 §6.2",
    "Linear attention: $O(nd^2)$ instead of $O(n^2 d)$",
    "verified",
    domain=r"$1 \le n \le 200$, $1 \le d \le 64$, hypothesis: doubling $n$ quadruples softmax "
           "attention's FLOPs and doubles linear attention's")
@SETTINGS
@given(st.integers(1, 200), st.integers(1, 64))
def test_attention_flops_are_quadratic_and_linear_flops_linear_in_length(n, d):
    assert attention_flops(2 * n, 2 * n, d, d) == 4 * attention_flops(n, n, d, d)
    assert linear_attention_flops(2 * n, 2 * n, d, d) == 2 * linear_attention_flops(n, n, d, d)
    # The crossover: linear attention is cheaper exactly when n > d + 1.
    cheaper = linear_attention_flops(n, n, d, d) < attention_flops(n, n, d, d)
    assert cheaper == (n > d + 1)


@pytest.mark.claim(
    "003 §5.3",
    r"Linear attention: two products of $O(n d_\phi d_v)$ each, hence $O(nd)$",
    "corrected",
    correction=r"$O(n d_\phi d_v)$ is $O(n d^2)$ when $d_\phi$ and $d_v$ are of order $d$: linear "
               "in the length but quadratic in the head dimension.",
    domain=r"$1 \le n \le 10^5$, $1 \le d \le 512$, hypothesis: the count is $4 n d (d + 1)$ "
           "(the flop-counter test checks the count against torch), so doubling $d$ multiplies it by "
           "$2 (2d + 1) / (d + 1)$, close to 4",
    box="corr-linear-cost")
@SETTINGS
@given(n=st.integers(1, 100_000), d=st.integers(1, 512))
def test_linear_flops_grow_with_the_square_of_the_head_dim(n, d):
    # O(n d^2), not the O(n d) of one source: doubling d at fixed n nearly quadruples the cost.
    cost = linear_attention_flops(n, n, d, d)
    assert cost == 4 * n * d * (d + 1)
    ratio = linear_attention_flops(n, n, 2 * d, 2 * d) / cost
    assert ratio == pytest.approx(2 * (2 * d + 1) / (d + 1), rel=1e-12)
    assert 3.0 <= ratio < 4.0


def test_flop_counts_reject_nonpositive_sizes():
    with pytest.raises(ValueError, match="S must be >= 1"):
        attention_flops(4, 0, 2, 2)
    with pytest.raises(ValueError, match="D_phi must be >= 1"):
        linear_attention_flops(4, 4, 0, 2)


# ----------------------------------------------------------------------------- source claims


@pytest.mark.claim(
    "002 §6.2",
    r"Linear attention: $\operatorname{Attention}(Q, K, V) = \phi(Q)(\phi(K)^\top V)$",
    "corrected",
    correction="That is only the numerator: linear attention divides each row by "
               r"$\phi(q_i)^\top (\phi(K)^\top \mathbf{1})$, without which the weights do not sum "
               "to one and the output grows with the number of keys instead of averaging the "
               "values.",
    domain="$S = 10$, 100, 1000 keys at $L = 4$, $D = 4$: the normalised output stays in the range "
           "of the values, the numerator alone grows with $S$",
    box="corr-linear-normaliser")
@pytest.mark.claim(
    "003 §5.3",
    r"Linear attention: $\operatorname{Attention}(Q, K, V) = \phi(Q)(\phi(K)^\top V)$",
    "corrected",
    correction=r"The formula lacks the row normaliser $\phi(Q)(\phi(K)^\top \mathbf{1})$ (the "
               "source's code has it).",
    domain="$S = 10$, 100, 1000 keys at $L = 4$, $D = 4$: the normalised output stays in the range "
           "of the values, the numerator alone grows with $S$",
    box="corr-linear-normaliser")
def test_linear_attention_needs_its_normaliser():
    sizes = []
    for S in (10, 100, 1000):
        q, k, v = random_qkv(B=1, H=1, L=4, S=S, D=4, seed=S)
        numerator = elu_feature_map(q) @ (np.swapaxes(elu_feature_map(k), -1, -2) @ v)  # (1, 1, L, D)
        out = linear_attention(q, k, v)
        # Normalised: rows of weights sum to one, so the output stays in the range of the values.
        assert (np.abs(out) <= np.abs(v).max() + 1e-12).all()
        weights = elu_feature_map(q) @ np.swapaxes(elu_feature_map(k), -1, -2)  # (1, 1, L, S)
        assert_close(out, numerator / weights.sum(axis=-1, keepdims=True), name="normalised numerator")
        sizes.append(np.abs(numerator).max())
    # Without the normaliser the output leaves the range of the values and grows with S.
    assert sizes[0] > 3.0 and sizes[2] > 5 * sizes[0], sizes


@pytest.mark.claim(
    "003 §5.3",
    "Linear attention is a kernel approximation "
    r"$\softmax(q^\top k) \approx \phi(q)^\top \phi(k)$, e.g. "
    r"$\phi(x) = \operatorname{elu}(x) + 1$ (Performer)",
    "corrected",
    correction=r"$\operatorname{elu}(x) + 1$ is the feature map of the linear transformer "
               "(Katharopoulos et al., 2020); it defines a different kernel and does not "
               "approximate softmax attention. The Performer (Choromanski et al., 2021) uses "
               "positive random features whose inner product is an unbiased estimate of "
               r"$\exp(q^\top k)$, so its output approaches softmax attention as the number of "
               "features grows.",
    domain="$L = S = 64$, $D = 8$, moderate scores; 4096 random features, 3 draws",
    box="corr-elu-performer")
def test_elu_linear_attention_is_not_an_approximation_of_softmax_attention_but_performer_is():
    q, k, v = random_qkv(B=1, H=1, L=64, D=8, seed=4)
    q, k = 0.7 * q, 0.7 * k
    exact, _ = scaled_dot_product_attention(q, k, v)

    def rms(a):
        return float(np.sqrt(np.mean(a ** 2)))

    uniform = np.broadcast_to(v.mean(axis=-2, keepdims=True), exact.shape)
    elu_err = rms(linear_attention(q, k, v) - exact)
    # elu + 1 is about as far from softmax attention as plain averaging; nothing in it can shrink.
    assert elu_err > 0.5 * rms(uniform - exact)
    performer_err = np.mean([rms(performer_attention(q, k, v, n_features=4096, seed=s) - exact)
                             for s in range(3)])
    assert performer_err < elu_err / 2, (performer_err, elu_err)


@pytest.mark.claim(
    "002 §5.1",
    "Self-attention time: $O(nd^2)$ for the $Q$, $K$, $V$ projections and $O(n^2 d)$ for "
    r"$QK^\top$ and $AV$; total $O(n^2 d + nd^2)$",
    "verified",
    domain="several $(n, C, H)$ including $n < C$, $n = C$ and $n > C$, against torch's FLOP "
           "counter")
@pytest.mark.claim(
    "002 §5.1",
    r"For typical layers where $n \sim d$ the total is $O(n^2 d)$",
    "verified",
    domain="several $(n, C, H)$ including $n < C$, $n = C$ and $n > C$, against torch's FLOP "
           "counter")
@pytest.mark.claim(
    "004 Attention as Matrix Operations",
    r"For typical Transformers ($n \ll d$): small sequences ($n = 512$, $d = 768$): $nd^2$ "
    "dominates; long sequences ($n = 4096$, $d = 768$): $n^2 d$ dominates",
    "corrected",
    correction=r"Both examples are right, but $n \ll d$ is not the typical case (the second "
               "example has $n > d$): $n^2 d$ and $n d^2$ cross at $n = d$, and with the constants "
               r"of a layer ($8 n d^2$ for four projections, $4 n^2 d$ for $QK^\top$ and $AV$) at "
               "$n = 2d$; which term dominates depends on $n / d$.",
    domain="several $(n, C, H)$ including $n < C$, $n = C$ and $n > C$, against torch's FLOP "
           "counter",
    box="corr-n-vs-d")
def test_layer_flops_are_projections_plus_the_quadratic_core():
    from torch.utils.flop_counter import FlopCounterMode

    def measured(n, C, H):
        g = torch.Generator().manual_seed(n)
        X = torch.randn(n, C, generator=g, dtype=torch.float64)
        Wq, Wk, Wv, Wo = (torch.randn(C, C, generator=g, dtype=torch.float64) for _ in range(4))
        with FlopCounterMode(display=False) as counter:
            q, k, v = ((X @ W).reshape(n, H, C // H).transpose(0, 1) for W in (Wq, Wk, Wv))  # (H, n, D)
            p = torch.softmax(q @ k.transpose(-1, -2), dim=-1)  # (H, n, n)
            (p @ v).transpose(0, 1).reshape(n, C) @ Wo  # (n, C)
        return counter.get_total_flops()

    def projections(n, C):
        return 8 * n * C * C

    def core(n, C, H):
        return H * attention_flops(n, n, C // H, C // H)

    for n, C, H in [(10, 8, 2), (7, 12, 3), (33, 6, 1)]:
        assert measured(n, C, H) == projections(n, C) + core(n, C, H) == 8 * n * C**2 + 4 * n**2 * C
    d = 768
    assert 512 * d * d > 512**2 * d and projections(512, d) > core(512, d, 12)  # n = 512: nd^2 dominates
    assert 4096**2 * d > 4096 * d * d and core(4096, d, 12) > projections(4096, d)  # n = 4096: n^2 d
    assert 768**2 * d == 768 * d * d and core(2 * d, d, 12) == projections(2 * d, d)  # the crossovers
    # At n = d the two terms are of the same order: O(n^2 d + n d^2) = O(n^2 d) = O(n^3).
    assert core(d, d, 12) == projections(d, d) // 2

