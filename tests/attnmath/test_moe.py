"""Tests of attnmath.moe: routing, capacity, load balancing and the MoE layer's gradients."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.moe import (
    CapacityRouting,
    Routing,
    apply_capacity,
    expert_capacity,
    load_balancing_loss,
    moe_backward,
    moe_forward,
    moe_forward_renormalized,
    softmax_gating,
    top_k_route,
    top_k_route_renormalized,
)
from attnmath.testing import assert_close, check_gradient, numerical_gradient, to_torch

SETTINGS = settings(max_examples=30, deadline=None)

FORWARDS = {"plain": moe_forward, "renormalized": moe_forward_renormalized}


def _params(N=6, C=4, E=5, F=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C))
    w_g = rng.standard_normal((C, E))
    w1 = rng.standard_normal((E, C, F)) / np.sqrt(C)
    w2 = rng.standard_normal((E, F, C)) / np.sqrt(F)
    return x, w_g, w1, w2


def _router_margin(probs, k):
    """Smallest gap between the k-th and (k+1)-th probability of a row (inf when k = E)."""
    if k == probs.shape[1]:
        return np.inf
    p = -np.sort(-probs, axis=1)
    return float(np.min(p[:, k - 1] - p[:, k]))


def _assert_away_from_kinks(cache, k):
    # Central differences are only valid where the selection and the ReLUs do not switch.
    assert _router_margin(cache.probs, k) > 1e-4
    kept_pre = cache.h_pre[cache.kept]
    assert np.min(np.abs(kept_pre)) > 1e-4


def _torch_moe(x, w_g, w1, w2, k, *, renormalized, kept=None):
    """Oracle: the layer with torch.topk and a loop over (token, slot), differentiated by autograd."""
    tx, tg, t1, t2 = to_torch(x, w_g, w1, w2, requires_grad=True)
    N, C = x.shape
    probs = torch.softmax(tx @ tg, dim=-1)
    top_p, top_i = torch.topk(probs, k, dim=-1)
    gate = top_p / top_p.sum(-1, keepdim=True) if renormalized else top_p
    rows = []
    for n in range(N):
        acc = torch.zeros(C, dtype=torch.float64)
        for s in range(k):
            if kept is not None and not kept[n, s]:
                continue
            e = int(top_i[n, s])
            acc = acc + gate[n, s] * (torch.relu(tx[n] @ t1[e]) @ t2[e])
        rows.append(acc)
    return torch.stack(rows), top_i, (tx, tg, t1, t2)


# ----------------------------------------------------------------------------- gating and routing


@pytest.mark.claim(
    "003 §6.4",
    r"The gating network computes probabilities with a softmax, $G(x) = \softmax(x^\top W_g)$",
    "verified",
    domain=r"$1 \le N \le 12$ tokens, $1 \le C \le 6$, $1 \le E \le 10$ experts, router scales "
           "up to 30, against `torch.softmax`, hypothesis")
@SETTINGS
@given(N=st.integers(1, 12), C=st.integers(1, 6), E=st.integers(1, 10),
       scale=st.floats(0.1, 30.0), seed=st.integers(0, 2**16))
def test_softmax_gating_matches_torch(N, C, E, scale, seed):
    x, w_g, _, _ = _params(N=N, C=C, E=E, seed=seed)
    w_g = scale * w_g
    tx, tg = to_torch(x, w_g)
    assert_close(softmax_gating(x, w_g), torch.softmax(tx @ tg, dim=-1))


def test_softmax_gating_rejects_mismatched_widths():
    with pytest.raises(ValueError, match=r"w_g must have shape \(C=4, E\)"):
        softmax_gating(np.ones((3, 4)), np.ones((5, 2)))


@SETTINGS
@given(st.integers(1, 12), st.integers(1, 8), st.data(), st.integers(0, 10_000))
def test_top_k_route_matches_torch_topk(N, E, data, seed):
    k = data.draw(st.integers(1, E), label="k")
    probs = softmax_gating(*_params(N=N, C=3, E=E, seed=seed)[:2])
    values, indices = torch.topk(to_torch(probs), k, dim=-1)
    plain = top_k_route(probs, k)
    assert (plain.expert_index == indices.numpy()).all()
    assert_close(plain.gate, values)
    dispatch = np.zeros((N, E), dtype=bool)
    for n in range(N):
        dispatch[n, indices[n].numpy()] = True
    assert (plain.dispatch == dispatch).all()
    renorm = top_k_route_renormalized(probs, k)
    assert (renorm.expert_index == plain.expert_index).all()
    assert_close(renorm.gate, values / values.sum(-1, keepdim=True))


@SETTINGS
@given(st.integers(1, 12), st.integers(1, 8), st.data(), st.integers(0, 10_000))
def test_plain_gates_sum_to_at_most_one_and_renormalized_gates_to_one(N, E, data, seed):
    k = data.draw(st.integers(1, E), label="k")
    probs = softmax_gating(*_params(N=N, C=3, E=E, seed=seed)[:2])
    plain = top_k_route(probs, k).gate.sum(axis=1)
    assert (plain <= 1 + 1e-12).all()
    if k < E:
        assert (plain < 1).all()
    assert_close(top_k_route_renormalized(probs, k).gate.sum(axis=1), np.ones(N))


def test_renormalized_gates_are_the_softmax_of_the_chosen_logits():
    x, w_g, _, _ = _params(N=7, E=6, seed=2)
    logits = x @ w_g
    routing = top_k_route_renormalized(softmax_gating(x, w_g), 3)
    chosen = np.take_along_axis(logits, routing.expert_index, axis=1)
    expected = torch.softmax(to_torch(chosen), dim=-1)
    assert_close(routing.gate, expected)


def test_ties_go_to_the_lowest_expert_index():
    probs = np.array([[0.25, 0.25, 0.25, 0.25], [0.1, 0.3, 0.3, 0.3], [0.4, 0.1, 0.4, 0.1]])
    assert top_k_route(probs, 2).expert_index.tolist() == [[0, 1], [1, 2], [0, 2]]
    # Many equal values (where an unstable sort would shuffle them).
    wide = np.tile([0.5, 1.0], 40)[None, :] / 60.0
    assert top_k_route(wide, 30).expert_index.tolist() == [list(range(1, 80, 2)[:30])]


@pytest.mark.parametrize("k", [0, 5])
def test_k_outside_one_to_E_raises_naming_k_and_E(k):
    probs = np.full((2, 4), 0.25)
    with pytest.raises(ValueError, match=f"k={k} with E=4"):
        top_k_route(probs, k)
    with pytest.raises(ValueError, match=f"k={k} with E=4"):
        top_k_route_renormalized(probs, k)


def test_routing_is_a_named_tuple():
    r = top_k_route(np.array([[0.7, 0.2, 0.1]]), 1)
    assert isinstance(r, Routing) and r._fields == ("expert_index", "gate", "dispatch")


# ----------------------------------------------------------------------------- capacity


def _capacity_loop(expert_index, E, C):
    """Oracle: serve first choices before second choices, tokens in index order."""
    N, K = expert_index.shape
    used = [0] * E
    kept = np.zeros((N, K), dtype=bool)
    dropped = []
    for s in range(K):
        for n in range(N):
            e = expert_index[n, s]
            if used[e] < C:
                used[e] += 1
                kept[n, s] = True
            else:
                dropped.append((n, s))
    return kept, dropped


@SETTINGS
@given(st.integers(1, 20), st.integers(1, 6), st.data(), st.sampled_from([0.25, 0.5, 1.0, 1.25, 2.0]),
       st.integers(0, 10_000))
def test_capacity_matches_a_direct_loop(N, E, data, factor, seed):
    k = data.draw(st.integers(1, E), label="k")
    x, w_g, _, _ = _params(N=N, C=2, E=E, seed=seed)
    probs = softmax_gating(x, 3.0 * w_g)  # sharp routing: uneven loads
    routing = top_k_route(probs, k)
    capped = apply_capacity(routing, factor)
    C = math.ceil(factor * N * k / E - 1e-9)
    assert capped.capacity == C
    kept, dropped = _capacity_loop(routing.expert_index, E, C)
    assert (capped.kept == kept).all()
    assert capped.dropped.tolist() == [list(p) for p in dropped]
    assert_close(capped.gate, np.where(kept, routing.gate, 0.0))
    load = capped.dispatch.sum(axis=0)
    assert (load <= C).all()
    assert load.sum() == kept.sum()


def test_expert_capacity_reads_the_factor_as_a_decimal():
    assert expert_capacity(10, 1, 1, 1.1) == 11  # 1.1 * 10 in binary floating point exceeds 11
    assert expert_capacity(8, 1, 4, 1.25) == 3
    assert expert_capacity(6, 2, 4, 1.0) == 3


def test_a_generous_capacity_drops_nothing():
    probs = softmax_gating(*_params(N=9, E=3, seed=3)[:2])
    capped = apply_capacity(top_k_route(probs, 2), 3.0)
    assert isinstance(capped, CapacityRouting)
    assert capped.kept.all() and capped.dropped.shape == (0, 2)


def test_apply_capacity_rejects_a_nonpositive_factor():
    routing = top_k_route(np.full((2, 2), 0.5), 1)
    with pytest.raises(ValueError, match="capacity_factor must be > 0"):
        apply_capacity(routing, 0.0)


# ----------------------------------------------------------------------------- load balancing


def test_load_balancing_loss_is_one_under_uniform_routing():
    for E, K in ((4, 1), (4, 2), (8, 3)):
        N = 2 * E
        probs = np.full((N, E), 1.0 / E)
        expert_index = (np.arange(N)[:, None] + np.arange(K)[None, :]) % E  # each expert N K / E times
        assert load_balancing_loss(probs, expert_index) == pytest.approx(1.0, abs=1e-14)


def test_load_balancing_loss_is_E_when_everything_collapses_on_one_expert():
    E, N = 6, 10
    probs = np.zeros((N, E))
    probs[:, 2] = 1.0
    assert load_balancing_loss(probs, np.full((N, 1), 2)) == pytest.approx(E, abs=1e-14)


@SETTINGS
@given(st.integers(2, 6), st.integers(1, 4), st.integers(0, 10_000))
def test_load_balancing_loss_is_one_when_the_load_is_uniform_whatever_the_probabilities(E, reps, seed):
    N = E * reps
    probs = softmax_gating(*_params(N=N, C=3, E=E, seed=seed)[:2])
    expert_index = np.random.default_rng(seed).permutation(np.arange(N) % E)[:, None]
    assert load_balancing_loss(probs, expert_index) == pytest.approx(1.0, abs=1e-12)


@SETTINGS
@given(st.integers(2, 6), st.integers(1, 12), st.integers(0, 10_000))
def test_load_balancing_loss_is_one_when_the_probabilities_are_uniform_whatever_the_load(E, N, seed):
    expert_index = np.random.default_rng(seed).integers(0, E, size=(N, 1))
    assert load_balancing_loss(np.full((N, E), 1.0 / E), expert_index) == pytest.approx(1.0, abs=1e-12)


def test_load_balancing_loss_can_fall_below_one():
    # Argmax routing, yet f = (1/2, 1/2, 0) and P = (0.2, 0.4, 0.4): 3 (0.1 + 0.2) = 0.9.
    probs = np.array([[0.4, 0.3, 0.3], [0.0, 0.5, 0.5]])
    routing = top_k_route(probs, 1)
    assert routing.expert_index.ravel().tolist() == [0, 1]
    assert load_balancing_loss(probs, routing.expert_index) == pytest.approx(0.9, abs=1e-14)


def test_load_balancing_loss_matches_torch():
    probs = softmax_gating(*_params(N=11, E=5, seed=4)[:2])
    for k in (1, 2, 3):
        idx = top_k_route(probs, k).expert_index
        tp = to_torch(probs)
        f = torch.nn.functional.one_hot(torch.from_numpy(idx), 5).double().sum(dim=1).mean(dim=0) / k
        expected = 5 * torch.sum(f * tp.mean(dim=0))
        assert load_balancing_loss(probs, idx) == pytest.approx(float(expected), abs=1e-14)


def test_load_balancing_loss_rejects_out_of_range_experts():
    with pytest.raises(ValueError, match=r"\[0, E=3\)"):
        load_balancing_loss(np.full((2, 3), 1 / 3), np.array([[0], [3]]))


# ----------------------------------------------------------------------------- the layer: oracle


@pytest.mark.claim(
    "003 §6.4",
    r"Top-K routing: $\mathrm{Output} = \sum_{i \in \mathrm{TopK}(G(x))} G(x)_i E_i(x)$",
    "verified",
    domain=r"$1 \le N \le 8$ tokens, $1 \le C \le 5$, $1 \le E \le 6$ experts of hidden width "
           r"$1 \le F \le 4$, every $1 \le k \le E$, plain and renormalised gates, outputs and "
           "gradients against `torch.autograd`, hypothesis")
@SETTINGS
@given(N=st.integers(1, 8), C=st.integers(1, 5), E=st.integers(1, 6), F=st.integers(1, 4),
       variant=st.sampled_from(["plain", "renormalized"]), data=st.data())
def test_moe_layer_and_its_gradients_match_torch_autograd(N, C, E, F, variant, data):
    k = data.draw(st.integers(1, E), label="k")
    x, w_g, w1, w2 = _params(N=N, C=C, E=E, F=F, seed=data.draw(st.integers(0, 2**16), label="seed"))
    out, cache = FORWARDS[variant](x, w_g, w1, w2, k)
    t_out, t_idx, tensors = _torch_moe(x, w_g, w1, w2, k, renormalized=variant == "renormalized")
    assert (cache.expert_index == t_idx.numpy()).all()
    assert_close(out, t_out, name="out")
    dout = np.random.default_rng(k).standard_normal(out.shape)
    t_out.backward(to_torch(dout))
    grads = moe_backward(dout, cache)
    for name, mine, t in zip(("dx", "dw_g", "dw1", "dw2"), grads, tensors):
        assert_close(mine, t.grad, name=name)


@pytest.mark.parametrize("variant", ["plain", "renormalized"])
def test_moe_layer_with_capacity_matches_torch_autograd(variant):
    x, w_g, w1, w2 = _params(N=10, C=3, E=4, F=3, seed=20)
    w_g[:, 0] += 2.0  # crowd expert 0 so that it overflows
    out, cache = FORWARDS[variant](x, w_g, w1, w2, 2, capacity_factor=1.0)
    assert not cache.kept.all()
    t_out, _, tensors = _torch_moe(x, w_g, w1, w2, 2, renormalized=variant == "renormalized", kept=cache.kept)
    assert_close(out, t_out, name="out")
    dout = np.random.default_rng(0).standard_normal(out.shape)
    t_out.backward(to_torch(dout))
    for name, mine, t in zip(("dx", "dw_g", "dw1", "dw2"), moe_backward(dout, cache), tensors):
        assert_close(mine, t.grad, name=name)


# ----------------------------------------------------------------------------- the layer: central differences


@pytest.mark.parametrize("variant", ["plain", "renormalized"])
@pytest.mark.parametrize("capacity_factor", [None, 0.75])
def test_moe_backward_matches_central_differences(variant, capacity_factor):
    forward = FORWARDS[variant]
    x, w_g, w1, w2 = _params(N=6, C=4, E=4, F=3, seed=30)
    k = 2
    out, cache = forward(x, w_g, w1, w2, k, capacity_factor=capacity_factor)
    _assert_away_from_kinks(cache, k)
    r = np.random.default_rng(1).standard_normal(out.shape)
    grads = moe_backward(r, cache)

    def loss(**kw):
        args = {"x": x, "w_g": w_g, "w1": w1, "w2": w2} | kw
        return float(np.sum(forward(args["x"], args["w_g"], args["w1"], args["w2"], k,
                                    capacity_factor=capacity_factor)[0] * r))

    check_gradient(lambda a: loss(x=a), x, grads.dx, name="x")
    check_gradient(lambda a: loss(w_g=a), w_g, grads.dw_g, name="w_g")
    check_gradient(lambda a: loss(w1=a), w1, grads.dw1, name="w1")
    check_gradient(lambda a: loss(w2=a), w2, grads.dw2, name="w2")


# ----------------------------------------------------------------------------- how the router learns


def test_experts_that_receive_no_token_get_exactly_zero_gradient():
    x, w_g, w1, w2 = _params(N=4, C=3, E=8, F=8, seed=40)
    for forward in FORWARDS.values():
        out, cache = forward(x, w_g, w1, w2, 1)
        used = np.unique(cache.expert_index)
        unused = np.setdiff1d(np.arange(8), used)
        assert unused.size >= 4
        grads = moe_backward(np.ones_like(out), cache)
        assert (grads.dw1[unused] == 0).all() and (grads.dw2[unused] == 0).all()
        assert (np.abs(grads.dw1[used]).sum(axis=(1, 2)) > 0).all()


@pytest.mark.claim(
    "003 §6.4",
    "Mixture of experts activates only a subset of multiple expert networks",
    "verified",
    domain=r"$1 \le N \le 6$ tokens, $2 \le E \le 10$ experts, $1 \le k < E$, plain and "
           "renormalised gates, hypothesis: NaN weights in every expert no token chose leave the "
           "output unchanged, and each token uses exactly $k$ experts")
@SETTINGS
@given(N=st.integers(1, 6), E=st.integers(2, 10), data=st.data())
def test_experts_outside_the_top_k_are_never_evaluated(N, E, data):
    k = data.draw(st.integers(1, E - 1), label="k")
    x, w_g, w1, w2 = _params(N=N, C=3, E=E, F=5, seed=data.draw(st.integers(0, 2**16), label="seed"))
    for forward in FORWARDS.values():
        out, cache = forward(x, w_g, w1, w2, k)
        assert cache.expert_index.shape == (N, k)
        assert all(len(set(row)) == k for row in cache.expert_index.tolist())
        unused = np.setdiff1d(np.arange(E), cache.expert_index)
        w1_nan, w2_nan = w1.copy(), w2.copy()
        w1_nan[unused], w2_nan[unused] = np.nan, np.nan
        out_nan, _ = forward(x, w_g, w1_nan, w2_nan, k)
        assert_close(out_nan, out, rtol=0, atol=0)


def test_the_sparse_layer_equals_the_dense_mixture_with_gates_zero_off_the_top_k():
    x, w_g, w1, w2 = _params(N=7, C=4, E=6, F=3, seed=3)
    out, cache = moe_forward(x, w_g, w1, w2, 2)
    gates = np.zeros((7, 6))
    np.put_along_axis(gates, cache.expert_index, cache.gate, axis=1)
    assert ((gates != 0).sum(axis=1) == 2).all()
    dense = sum(gates[:, e:e + 1] * (np.maximum(x @ w1[e], 0.0) @ w2[e]) for e in range(6))
    assert_close(out, dense)


def test_renormalized_router_gets_no_gradient_on_unchosen_logits():
    # With x = I the router gradient dw_g is the logit gradient itself.
    C = E = 6
    _, w_g, w1, w2 = _params(N=C, C=C, E=E, F=8, seed=41)
    x = np.eye(C)
    out, cache = moe_forward_renormalized(x, w_g, w1, w2, 2)
    dlogits = moe_backward(np.random.default_rng(2).standard_normal(out.shape), cache).dw_g
    unchosen = ~top_k_route(cache.probs, 2).dispatch
    assert (dlogits[unchosen] == 0).all()
    assert (dlogits[~unchosen] != 0).all()
    # The plain layer's gates are probabilities over all E experts: every logit gets gradient.
    out, cache = moe_forward(x, w_g, w1, w2, 2)
    assert (moe_backward(np.ones_like(out), cache).dw_g != 0).all()


def test_top1_renormalized_router_gets_no_gradient_from_the_output():
    x, w_g, w1, w2 = _params(N=5, C=3, E=4, F=2, seed=42)
    out, cache = moe_forward_renormalized(x, w_g, w1, w2, 1)
    assert (moe_backward(np.ones_like(out), cache).dw_g == 0).all()


@pytest.mark.claim(
    "003 §6.4",
    "The challenge of MoE is the differentiability of the discrete selection, handled with a "
    "Straight-Through Estimator",
    "corrected",
    correction="Standard top-k MoE (Shazeer et al. 2017, GShard, Switch, Mixtral) uses no "
               "straight-through estimator: the selection is piecewise constant and is not "
               "differentiated; the router learns through the gates that multiply the chosen "
               "experts' outputs (the exact gradient wherever the selection does not tie) and "
               "through the load-balancing loss. A straight-through estimate differs from that "
               "gradient.",
    domain="a counterexample away from routing ties: $N = 6$, $C = 4$, $E = 5$, $k = 2$, against "
           "central differences",
    box="corr-straight-through")
def test_straight_through_estimate_is_not_the_gradient_of_top_k_moe():
    x, w_g, w1, w2 = _params(N=6, C=4, E=5, F=3, seed=43)
    k = 2
    out, cache = moe_forward(x, w_g, w1, w2, k)
    _assert_away_from_kinks(cache, k)
    r = np.random.default_rng(3).standard_normal(out.shape)
    numeric = numerical_gradient(lambda a: float(np.sum(moe_forward(x, a, w1, w2, k)[0] * r)), w_g)
    analytic = moe_backward(r, cache).dw_g
    assert_close(analytic, numeric, rtol=1e-6, atol=1e-8, name="dw_g")
    # Straight-through: the forward uses the hard top-k, the backward pretends every expert is
    # weighted by its probability (gradient through the unchosen experts' outputs too).
    t_hard, _, (tx, tg, t1, t2) = _torch_moe(x, w_g, w1, w2, k, renormalized=False)
    probs = torch.softmax(tx @ tg, dim=-1)
    dense = sum(probs[:, e:e + 1] * (torch.relu(tx @ t1[e]) @ t2[e]) for e in range(5))
    ste = t_hard.detach() + dense - dense.detach()
    assert_close(ste, out)  # same forward value
    ste.backward(to_torch(r))
    assert np.max(np.abs(tg.grad.numpy() - numeric)) > 0.05 * np.max(np.abs(numeric))


# ----------------------------------------------------------------------------- dropped tokens and bad input


def test_dropped_tokens_get_zero_output_and_kept_ones_are_unchanged():
    x, w_g, w1, w2 = _params(N=12, C=3, E=3, F=4, seed=50)
    full, _ = moe_forward(x, w_g, w1, w2, 1)
    capped, cache = moe_forward(x, w_g, w1, w2, 1, capacity_factor=0.5)
    dropped = ~cache.kept[:, 0]
    assert dropped.any()
    assert (capped[dropped] == 0).all()
    assert_close(capped[~dropped], full[~dropped])


def test_moe_forward_rejects_mismatched_expert_shapes():
    x, w_g, w1, w2 = _params(N=3, C=4, E=5, F=2)
    with pytest.raises(ValueError, match=r"w2 must have shape \(E=5, F=2, C=4\)"):
        moe_forward(x, w_g, w1, w2[:, :, :3], 1)
    with pytest.raises(ValueError, match=r"w1 must have shape \(E=5, C=4, F\)"):
        moe_forward_renormalized(x, w_g, w1[:4], w2, 1)


def test_moe_forward_rejects_k_larger_than_E():
    with pytest.raises(ValueError, match="k=6 with E=5"):
        moe_forward(*_params(N=3, C=4, E=5, F=2), 6)


def test_moe_backward_rejects_a_wrong_dout_shape():
    _, cache = moe_forward(*_params(N=3, C=4, E=5, F=2), 2)
    with pytest.raises(ValueError, match=r"dout must have the output's shape \(3, 4\)"):
        moe_backward(np.ones((3, 5)), cache)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("forward", [moe_forward, moe_forward_renormalized])
def test_moe_layer_returns_the_input_dtype_computed_in_at_least_float32(dtype, forward):
    rng = np.random.default_rng(9)
    N, C, E, F = 6, 4, 3, 5
    x, w_g = rng.standard_normal((N, C)), rng.standard_normal((C, E))
    w1, w2 = rng.standard_normal((E, C, F)) / 2, rng.standard_normal((E, F, C)) / 2
    args = [a.astype(dtype) for a in (x, w_g, w1, w2)]
    out, cache = forward(*args, 2)
    assert out.dtype == dtype
    grads = moe_backward(np.ones_like(out), cache)
    assert {g.dtype for g in grads} == {np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)}
    exact, _ = forward(*(a.astype(np.float64) for a in args), 2)
    # float16: the result of a float32 computation rounded once to half precision
    assert_close(out.astype(np.float64), exact, atol=0, rtol=float(np.finfo(dtype).eps) * 8 + 1e-6)


def test_renormalised_routing_refuses_a_row_without_probability_mass():
    with pytest.raises(ValueError, match="probs has a row whose top-k probabilities sum to 0"):
        top_k_route_renormalized(np.array([[0.0, 0.0, 0.0], [0.2, 0.3, 0.5]]), 2)
