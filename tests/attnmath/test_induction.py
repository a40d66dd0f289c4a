"""Tests of attnmath.induction: the repeated-segment data, the head scores, the model, training.

The scores are checked on hand-built attention patterns (perfect previous-token, induction and
sink heads, uniform causal attention, whose scores have closed forms) and against brute-force
loops; the model against attnmath's NumPy attention; the training by a reduced, seeded re-run
that must show the signatures of the committed run, and the committed data against the code.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.attention import scaled_dot_product_attention
from attnmath.induction import (
    BOS,
    AttentionOnlyTransformer,
    InductionConfig,
    copying_score,
    first_token_score,
    induction_score,
    load_run,
    mean_attention_distance,
    ov_circuit,
    phase_change,
    predictable_mask,
    previous_token_score,
    repeated_batch,
    repeated_sequence,
    train_induction,
)
from attnmath.testing import assert_close

SETTINGS = settings(max_examples=40, deadline=None)
DATA = Path(__file__).resolve().parents[2] / "book" / "data" / "induction.npz"

#: The reduced retraining: same task and model family, smaller and shorter (seconds on one core).
REDUCED = InductionConfig(V=32, T=12, min_T=6, C=32, H=2, steps=900, batch=32, lr=3e-3,
                          log_every=25, eval_batch=32, seed=0)


def _random_pattern(rng, shape, L):
    """Random causal attention patterns (rows are softmax distributions over j <= i)."""
    scores = rng.standard_normal((*shape, L, L)) * 2.0
    scores = np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _uniform_causal(L):
    return np.tril(np.ones((L, L))) / np.arange(1, L + 1)[:, None]


# --------------------------------------------------------------------------------------------
# data


@SETTINGS
@given(segment=st.lists(st.integers(1, 50), min_size=1, max_size=12), extra=st.integers(-5, 30))
def test_repeated_sequence_is_bos_then_the_segment_periodically(segment, extra):
    T = len(segment)
    L = max(1, 2 * T + 1 + extra)
    tokens = repeated_sequence(segment, L)
    assert tokens.shape == (L,) and tokens.dtype == np.int64
    assert tokens[0] == BOS
    for i in range(1, L):
        assert tokens[i] == segment[(i - 1) % T]
    twice = repeated_sequence(segment)
    assert twice.shape == (2 * T + 1,)
    assert (twice[1:T + 1] == segment).all() and (twice[T + 1:] == segment).all()


@SETTINGS
@given(B=st.integers(0, 6), V=st.integers(2, 40), data=st.data(), seed=st.integers(0, 2**32))
def test_repeated_batch_shapes_repeat_bos_and_mask(B, V, data, seed):
    T = data.draw(st.integers(1, V - 1), label="T")
    min_T = data.draw(st.one_of(st.none(), st.integers(1, T)), label="min_T")
    batch = repeated_batch(B, T, V, seed, min_T=min_T)
    L = 2 * T + 1
    assert batch.tokens.shape == (B, L) and batch.tokens.dtype == np.int64
    assert batch.periods.shape == (B,) and batch.mask.shape == (B, L - 1)
    lo = T if min_T is None else min_T
    for b in range(B):
        row, p = batch.tokens[b], int(batch.periods[b])
        assert lo <= p <= T
        assert row[0] == BOS and (row[1:] >= 1).all() and (row[1:] <= V - 1).all()
        segment = row[1:p + 1]
        assert len(set(segment.tolist())) == p, "segment tokens are distinct"
        assert (row[1 + p:] == row[1:L - p]).all(), "the repeat is exact, period p"
        assert (batch.mask[b] == predictable_mask(p, L)).all()
    again = repeated_batch(B, T, V, seed, min_T=min_T)
    assert (again.tokens == batch.tokens).all(), "the same seed gives the same batch"


@SETTINGS
@given(T=st.integers(1, 10), extra=st.integers(0, 25), seed=st.integers(0, 1000))
def test_predictable_positions_are_those_whose_token_occurred_before(T, extra, seed):
    L = 2 * T + 1 + extra
    segment = np.random.default_rng(seed).permutation(np.arange(1, 40))[:T]
    tokens = repeated_sequence(segment, L)
    mask = predictable_mask(T, L)
    assert mask.shape == (L - 1,)
    for i in range(L - 1):
        earlier = [j for j in range(1, i) if tokens[j] == tokens[i]]
        # marked iff the current token occurred before; then its successor there is the next token
        assert mask[i] == bool(earlier), i
        for j in earlier:
            assert tokens[j + 1] == tokens[i + 1]


def test_data_rejects_bad_sizes():
    with pytest.raises(ValueError, match="T must be <= V - 1"):
        repeated_batch(2, 8, 8, 0)
    with pytest.raises(ValueError, match="min_T"):
        repeated_batch(2, 4, 8, 0, min_T=5)
    with pytest.raises(ValueError, match="segment"):
        repeated_sequence([0, 1, 2])  # 0 is BOS
    with pytest.raises(TypeError, match="segment"):
        repeated_sequence([1.5, 2.0])


# --------------------------------------------------------------------------------------------
# head scores on hand-built patterns


@SETTINGS
@given(L=st.integers(2, 30))
def test_perfect_previous_token_head_scores_one(L):
    A = np.zeros((L, L))
    A[0, 0] = 1.0
    A[np.arange(1, L), np.arange(L - 1)] = 1.0
    assert previous_token_score(A) == pytest.approx(1.0)
    assert first_token_score(A) == pytest.approx(1.0 / (L - 1))  # only query 1 looks at 0


@SETTINGS
@given(L=st.integers(2, 30))
def test_sink_head_scores_one_on_the_first_token(L):
    A = np.zeros((L, L))
    A[:, 0] = 1.0
    assert first_token_score(A) == pytest.approx(1.0)
    assert previous_token_score(A) == pytest.approx(1.0 / (L - 1))


@SETTINGS
@given(T=st.integers(1, 15))
def test_uniform_causal_attention_scores_are_harmonic_means(T):
    tokens = repeated_sequence(np.arange(1, T + 1))
    L = tokens.shape[0]
    A = _uniform_causal(L)
    expected = sum(1.0 / (i + 1) for i in range(1, L)) / (L - 1)
    assert previous_token_score(A) == pytest.approx(expected)
    assert first_token_score(A) == pytest.approx(expected)
    queries = range(T + 1, 2 * T + 1)
    assert induction_score(A, tokens) == pytest.approx(np.mean([1.0 / (i + 1) for i in queries]))


@SETTINGS
@given(T=st.integers(1, 15), sink=st.floats(0.0, 0.9))
def test_perfect_induction_head_scores_one(T, sink):
    tokens = repeated_sequence(np.arange(1, T + 1) * 2)
    L = 2 * T + 1
    A = np.zeros((L, L))
    A[:T + 1, 0] = 1.0  # no earlier occurrence yet: park the weight on BOS
    for i in range(T + 1, L):
        A[i, i - T + 1] = 1.0
    assert induction_score(A, tokens) == pytest.approx(1.0)
    # weight moved to the sink lowers the score in proportion
    B_ = A.copy()
    B_[T + 1:] *= 1.0 - sink
    B_[T + 1:, 0] += sink
    assert induction_score(B_, tokens) == pytest.approx(1.0 - sink)


@SETTINGS
@given(T=st.integers(2, 12), H=st.integers(1, 3), seed=st.integers(0, 10_000))
def test_induction_score_on_a_repeat_is_the_offset_diagonal(T, H, seed):
    rng = np.random.default_rng(seed)
    tokens = repeated_sequence(rng.permutation(np.arange(1, 30))[:T])
    L = 2 * T + 1
    A = _random_pattern(rng, (2, H), L)
    diag = np.diagonal(A, offset=-(T - 1), axis1=-2, axis2=-1)  # A[i, i - T + 1], i >= T - 1
    expected = diag[..., 2:].mean(axis=-1)  # queries i = T + 1 .. 2T
    assert_close(induction_score(A, tokens), expected)


@SETTINGS
@given(L=st.integers(2, 16), V=st.integers(2, 5), seed=st.integers(0, 10_000))
def test_induction_score_matches_a_loop_on_any_tokens(L, V, seed):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, V, size=L)
    A = _random_pattern(rng, (3,), L)
    per_query = []
    for i in range(L):
        targets = {j + 1 for j in range(i) if tokens[j] == tokens[i]}
        if targets:
            per_query.append(A[:, i, sorted(targets)].sum(axis=-1))
    if not per_query:
        with pytest.raises(ValueError, match="no repeated token"):
            induction_score(A, tokens)
        return
    assert_close(induction_score(A, tokens), np.mean(per_query, axis=0))


@SETTINGS
@given(L=st.integers(2, 20), seed=st.integers(0, 10_000))
def test_scores_of_random_patterns_are_loops_over_rows(L, seed):
    A = _random_pattern(np.random.default_rng(seed), (2, 3), L)
    prev = np.mean([A[..., i, i - 1] for i in range(1, L)], axis=0)
    first = np.mean([A[..., i, 0] for i in range(1, L)], axis=0)
    dist = np.mean([sum(A[..., i, j] * (i - j) for j in range(i + 1)) for i in range(1, L)], axis=0)
    assert_close(previous_token_score(A), prev)
    assert_close(first_token_score(A), first)
    assert_close(mean_attention_distance(A), dist)


@SETTINGS
@given(L=st.integers(2, 30))
def test_attention_distance_of_previous_token_self_and_uniform_heads(L):
    prev = np.eye(L, k=-1)
    prev[0, 0] = 1.0
    assert mean_attention_distance(prev) == pytest.approx(1.0)
    assert mean_attention_distance(np.eye(L)) == pytest.approx(0.0)
    expected = np.mean([i / 2 for i in range(1, L)])
    assert mean_attention_distance(_uniform_causal(L)) == pytest.approx(expected)


def test_scores_reject_non_square_patterns():
    with pytest.raises(ValueError, match="probs"):
        previous_token_score(np.ones((3, 4)))
    with pytest.raises(ValueError, match="L >= 2"):
        first_token_score(np.ones((1, 1)))
    with pytest.raises(ValueError, match="tokens"):
        induction_score(np.ones((3, 3)), [1, 2])


# --------------------------------------------------------------------------------------------
# copying score


@SETTINGS
@given(V=st.integers(1, 12), c=st.floats(0.01, 100.0))
def test_copying_score_of_scaled_identity_is_its_sign(V, c):
    assert copying_score(c * np.eye(V)) == pytest.approx(1.0)
    assert copying_score(-c * np.eye(V)) == pytest.approx(-1.0)


@SETTINGS
@given(V=st.integers(2, 12))
def test_copying_score_of_a_cyclic_shift_is_zero(V):
    # attending to token a raises the logit of a + 1: eigenvalues are the V-th roots of unity
    M = np.roll(np.eye(V), 1, axis=1)
    assert copying_score(M) == pytest.approx(0.0, abs=1e-12)


@SETTINGS
@given(V=st.integers(2, 10), seed=st.integers(0, 10_000))
def test_copying_score_is_trace_over_eigenvalue_moduli(V, seed):
    M = np.random.default_rng(seed).standard_normal((V, V))
    lam = np.linalg.eigvals(M)
    assert copying_score(M) == pytest.approx(np.trace(M) / np.abs(lam).sum())
    assert -1.0 - 1e-12 <= copying_score(M) <= 1.0 + 1e-12


def test_copying_score_rejects_zero_and_non_square():
    with pytest.raises(ValueError, match="zero eigenvalues"):
        copying_score(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="square"):
        copying_score(np.ones((2, 3)))


def test_model_ov_circuits_are_the_heads_effect_on_the_logits():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(V=7, n_ctx=5, C=8, H=2).double()
    mha = model.layers[1]
    C, D = 8, 4
    M = model.head_ov_circuits(1)  # (H, V, V)
    for h in range(2):
        for a in range(7):
            e = model.embed.weight[a]  # (C,)
            v = e @ mha.in_proj_weight[2 * C + h * D:2 * C + (h + 1) * D].T  # (D,)
            out = mha.out_proj.weight[:, h * D:(h + 1) * D] @ v  # (C,)
            logits = model.unembed(out)  # (V,)
            assert_close(M[h, a], logits.detach().numpy())
    W = [np.random.default_rng(1).standard_normal(s) for s in [(5, 3), (3, 2), (2, 3), (3, 5)]]
    assert_close(ov_circuit(*W), W[0] @ W[1] @ W[2] @ W[3])
    with pytest.raises(ValueError, match="W_U"):
        ov_circuit(W[0], W[1], W[2], np.ones((3, 4)))


# --------------------------------------------------------------------------------------------
# the model against attnmath's NumPy attention


@pytest.mark.parametrize("n_layers, H", [(1, 1), (2, 2), (3, 4)])
def test_model_is_embeddings_plus_causal_attention_layers(n_layers, H):
    torch.manual_seed(n_layers)
    V, n_ctx, C = 11, 9, 8
    model = AttentionOnlyTransformer(V, n_ctx, C, H, n_layers).double()
    tokens = repeated_batch(3, 4, V, 5).tokens  # (3, 9)
    logits, patterns = model(torch.from_numpy(tokens), need_weights=True)
    assert patterns.shape == (n_layers, 3, H, n_ctx, n_ctx)
    assert_close(model(torch.from_numpy(tokens)).detach().numpy(), logits.detach().numpy())
    p = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    D = C // H
    x = p["embed.weight"][tokens] + p["pos.weight"][None, :n_ctx]  # (B, L, C)
    for layer in range(n_layers):
        w = p[f"layers.{layer}.in_proj_weight"]  # (3C, C)
        q, k, v = (
            (x @ w[i * C:(i + 1) * C].T).reshape(3, n_ctx, H, D).transpose(0, 2, 1, 3)
            for i in range(3)
        )  # (B, H, L, D) each
        out, cache = scaled_dot_product_attention(q, k, v, causal=True)
        assert_close(patterns[layer].detach().numpy(), cache.probs, rtol=1e-9, atol=1e-12)
        heads = out.transpose(0, 2, 1, 3).reshape(3, n_ctx, C)  # (B, L, C)
        x = x + heads @ p[f"layers.{layer}.out_proj.weight"].T
    assert_close(logits.detach().numpy(), x @ p["unembed.weight"].T, rtol=1e-9, atol=1e-12)


def test_model_rejects_long_or_float_tokens():
    model = AttentionOnlyTransformer(5, 4, 4, 2)
    with pytest.raises(ValueError, match="n_ctx"):
        model(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(TypeError, match="tokens"):
        model(torch.zeros(1, 3))


# --------------------------------------------------------------------------------------------
# phase change


@SETTINGS
@given(t0=st.integers(200, 800), width=st.floats(5.0, 80.0), hi=st.floats(1.0, 5.0),
       lo=st.floats(0.0, 0.5))
def test_phase_change_finds_the_crossings_of_a_sigmoid_drop(t0, width, hi, lo):
    steps = np.arange(0, 1001)
    loss = lo + (hi - lo) / (1.0 + np.exp((steps - t0) / width))
    pc = phase_change(steps, loss)
    # the sigmoid crosses lo + q (hi' - lo') at t0 + width ln(1/q - 1), hi' ~ hi, lo' ~ lo
    for got, q in zip(pc, (0.9, 0.5, 0.1)):
        level = loss.min() + q * (loss[0] - loss.min())
        exact = t0 + width * math.log((hi - lo) / (level - lo) - 1.0)
        assert abs(got - exact) <= 1.0, (q, got, exact)
    assert pc.start < pc.mid < pc.end


def test_phase_change_rejects_flat_and_unordered_curves():
    with pytest.raises(ValueError, match="does not drop"):
        phase_change([0, 1, 2], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="increasing"):
        phase_change([0, 2, 1], [3.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="plateau"):
        phase_change([0, 1, 2], [3.0, 2.0, 1.0], plateau=2)


# --------------------------------------------------------------------------------------------
# training


def test_training_is_deterministic_and_leaves_torch_state_alone():
    cfg = InductionConfig(V=8, T=3, min_T=2, C=8, H=2, steps=6, batch=4, log_every=3,
                          eval_batch=4, seed=3)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    threads = torch.get_num_threads()
    a, b = train_induction(cfg), train_induction(cfg)
    assert (torch.get_rng_state() == before).all(), "the caller's torch RNG is untouched"
    assert torch.get_num_threads() == threads
    assert a.steps.tolist() == [0, 3, 6]
    for name in ("loss_total", "loss_first", "loss_repeat", "prev", "induction", "first",
                 "copying"):
        assert (getattr(a, name) == getattr(b, name)).all(), name
    assert a.prev.shape == (3, 2, 2)
    with pytest.raises(TypeError, match="config"):
        train_induction({"V": 8})
    with pytest.raises(ValueError, match="min_T"):
        train_induction(InductionConfig(T=4, min_T=5))


def _signatures(steps, loss_first, loss_repeat, prev, induction, V, total_steps):
    """The signatures of an induction head, shared by the retraining and the committed data."""
    # the repeated half becomes predictable; the first copy stays near chance (ln V)
    assert loss_repeat[0] > 0.9 * math.log(V)
    assert loss_first[-1] > 0.9 * math.log(V)
    assert loss_repeat[-1] < 0.1 * loss_first[-1]
    # a previous-token head in layer 1 and an induction head in layer 2 (not the reverse)
    assert prev[-1, 0].max() > 0.3 > prev[-1, 1].max()
    assert induction[-1, 1].max() > 0.8 > induction[-1, 0].max()
    # a phase change: most of the drop happens within a short window of the run
    pc = phase_change(steps, loss_repeat)
    assert pc.end - pc.start <= 0.25 * total_steps, pc
    # the induction score jumps in the same window as the loss
    best = induction[:, 1].max(axis=1)
    jump = steps[int(np.argmax(best > 0.5 * best[-1]))]
    log_step = steps[1] - steps[0]
    assert pc.start - 2 * log_step <= jump <= pc.end + 2 * log_step, (jump, pc)
    return pc


@pytest.fixture(scope="module")
def reduced_run():
    """The reduced retraining, once per module (a few seconds on one core)."""
    return train_induction(REDUCED)


@pytest.mark.slow
@pytest.mark.claim(
    "004 Attention Matrix Patterns",
    "Early layers attend locally (along the diagonal, to adjacent words) and learn syntax; late "
    "layers attend long-range and learn semantics (coreference)",
    "clarified",
    correction="In a two-layer attention-only model trained on repeated random tokens, layer 1 "
               "learns a local previous-token head and layer 2 a long-range induction head, so "
               "the local-to-global order appears, with no syntax or semantics in the data: the "
               "local head is the first step of an in-context copying algorithm, and the order "
               "follows from composition (a layer-2 key can read what layer 1 wrote, not the "
               "reverse). 'Syntax' and 'coreference' are labels for what heads of models "
               "trained on language track, which this experiment cannot test.",
    domain=r"a reduced seeded retraining ($V = 32$, $6 \le T \le 12$, $C = 32$, $2 \times 2$ "
           "heads) and the committed run (`book/data/induction.npz`)",
    box="clar-local-global")
@pytest.mark.claim(
    "000 Learning Dynamics",
    "Early training: attention weights often uniform, gradual specialization; late training: "
    "sharp attention patterns emerge",
    "clarified",
    correction="Attention starts near uniform and ends sharp, but the specialisation of the "
               "induction head is not gradual: after a plateau its score jumps within a short "
               "window, together with the drop of the loss on the repeated half (a phase "
               "change, as Olsson et al. 2022 report).",
    domain=r"a reduced seeded retraining ($V = 32$, $6 \le T \le 12$, $C = 32$, $2 \times 2$ "
           "heads) and the committed run",
    box="clar-phase-change")
@pytest.mark.claim(
    "001 Multi-Head Attention",
    "Each head can learn different relationships (syntax, semantics, coreference, etc.)",
    "clarified",
    correction="Heads do come to track different relations: in the two-layer model trained here "
               "one head attends to the previous token and another to the token after an earlier "
               "copy of the current one (an induction head), with the weights of the other heads "
               "elsewhere. That the relations of a language model's heads are syntax, semantics or "
               "coreference is read off models trained on language; a model trained on random "
               "tokens cannot test those labels.",
    domain=r"a reduced seeded retraining ($V = 32$, $6 \le T \le 12$, $C = 32$, $2 \times 2$ "
           "heads): the previous-token and induction scores of every head",
    chapter="12_induction",
    box="clar-local-global")
def test_reduced_retraining_forms_an_induction_head_in_a_phase_change(reduced_run):
    run = reduced_run
    # near-uniform attention at initialisation: first-token weight close to the uniform value
    L = 2 * REDUCED.T + 1
    uniform = first_token_score(_uniform_causal(L))
    assert np.all(np.abs(run.first[0] - uniform) < 0.1)
    _signatures(run.steps, run.loss_first, run.loss_repeat, run.prev, run.induction,
                REDUCED.V, REDUCED.steps)
    # the induction head copies: its OV circuit raises the logit of the attended token
    h = int(np.argmax(run.induction[-1, 1]))
    assert run.copying[-1, 1, h] > 0.5


@pytest.mark.slow
@pytest.mark.claim(
    "004 Summary",
    "Interpretability: can visualize learned attention patterns",
    "clarified",
    correction="The weights show where a head looks, not what it writes: flipping the sign of "
               "the induction head's output map leaves every attention pattern unchanged and "
               "turns the repeated-half loss from near zero to far above chance.",
    domain="the reduced seeded retraining, layer-2 heads",
    box="clar-patterns")
def test_same_attention_pattern_opposite_effect(reduced_run):
    model = copy.deepcopy(reduced_run.model).eval()
    batch = repeated_batch(32, REDUCED.T, REDUCED.V, 99, min_T=REDUCED.min_T)
    tokens = torch.from_numpy(batch.tokens)

    def repeat_loss():
        with torch.no_grad():
            logits, patterns = model(tokens, need_weights=True)
            nll = torch.nn.functional.cross_entropy(
                logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
        return float(nll.numpy()[batch.mask].mean()), patterns.numpy()

    before, patterns = repeat_loss()
    with torch.no_grad():
        model.layers[1].out_proj.weight.neg_()  # every layer-2 head writes the opposite
    after, flipped = repeat_loss()
    assert_close(flipped, patterns, rtol=0, atol=0)
    assert before < 0.2 and after > math.log(REDUCED.V)


@pytest.mark.claim(
    "000 Learning Dynamics",
    "Early training: attention weights often uniform, gradual specialization; late training: "
    "sharp attention patterns emerge",
    "clarified",
    correction="Attention starts near uniform and ends sharp, but the specialisation of the "
               "induction head is not gradual: after a plateau its score jumps within a short "
               "window, together with the drop of the loss on the repeated half (a phase "
               "change, as Olsson et al. 2022 report).",
    domain="the committed run (book/data/induction.npz)",
    box="clar-phase-change")
def test_committed_run_is_consistent_with_the_code():
    config, data, model = load_run(DATA)
    assert set(json.loads(json.dumps(config.__dict__))) == {f.name for f in fields(InductionConfig)}
    N = data["steps"].shape[0]
    assert data["steps"][0] == 0 and data["steps"][-1] == config.steps
    for name in ("loss_total", "loss_first", "loss_repeat"):
        assert data[name].shape == (N,)
    for name in ("prev", "induction", "first", "copying"):
        assert data[name].shape == (N, config.n_layers, config.H)
    L = 2 * config.T + 1
    tokens = data["example_tokens"]
    assert tokens.shape == (L,)
    assert (tokens == repeated_batch(1, config.T, config.V,
                                     np.random.default_rng(config.seed + 1)).tokens[0]).all()
    assert data["example_patterns"].shape == (config.n_layers, config.H, L, L)
    # the stored weights reproduce the stored patterns and the last scores
    with torch.no_grad():
        _, patterns = model(torch.from_numpy(tokens)[None], need_weights=True)
    assert_close(patterns[:, 0].numpy(), data["example_patterns"], rtol=0, atol=1e-5)
    copying = np.array([[copying_score(M) for M in model.head_ov_circuits(layer)]
                        for layer in range(config.n_layers)])
    assert_close(copying, data["copying"][-1], rtol=1e-6, atol=1e-6)
    pc = _signatures(data["steps"], data["loss_first"], data["loss_repeat"], data["prev"],
                     data["induction"], config.V, config.steps)
    assert pc.end < config.steps
    # on the example, the scores of the figures' heads agree with the curves' last values
    A = data["example_patterns"].astype(np.float64)
    assert induction_score(A[1], tokens).max() > 0.8
    assert previous_token_score(A[0]).max() > 0.3
