"""The released notebooks' visible self-checks catch the common mistakes, and give no answer away.

Passing the visible checks predicts the grade: every kind of hidden case (``Case.kind`` in
``solutions/*/hidden_tests.py``) has a visible check of the same kind on other inputs. The proof is
a named mistake per kind: it fails at least one hidden case of that kind, and the visible check
that stops it names the same kind (``check.kind`` in the test cell; a check that names no kind
is of the kind "a visible self-check"). The kinds are read from the hidden tests themselves, so a
new kind fails :func:`test_every_hidden_kind_has_a_visible_check` until a mistake covers it.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import warnings

import pytest

import gradingkit as gk
from attngrade.notebooks import cell_grade_id
from attngrade.spec import check_outputs, compute_outputs, load_parts, make_cases

VISIBLE_KIND = "a visible self-check"  # what a check that sets no check.kind is


def _run(assignment: str, change: dict[str, tuple[str, str]] | None = None) -> tuple[str, dict]:
    """Run the release's code cells with the solution's answers (``change``: grade id -> (old, new)
    in that answer, or a list of such pairs); return ``"passed"`` or the first failing check's cell and message, and the
    namespace the cells left."""
    answers = gk.solution_answers(assignment)
    for gid, edits in (change or {}).items():
        for old, new in [edits] if isinstance(edits, tuple) else edits:
            assert answers[gid].count(old) == 1, (gid, old)
            answers[gid] = answers[gid].replace(old, new)
    namespace: dict = {}
    for cell in gk.release(assignment).cells:
        if cell.cell_type != "code":
            continue
        gid = cell_grade_id(cell)
        source = answers.get(gid, cell.source)
        source = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", source, flags=re.S)
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a mistake's overflow is expected
                exec(compile(source, gid or "cell", "exec"), namespace)  # noqa: S102 - our own notebooks
        except AssertionError as exc:
            return f"{gid}: {exc}", namespace
    return "passed", namespace


def _run_visible(assignment: str, change: dict[str, tuple[str, str]] | None = None) -> str:
    return _run(assignment, change)[0]


MISTAKES = [
    ("01_softmax", "softmax without keepdims", "test_stable_softmax",
     {"stable_softmax": ("np.max(work, axis=axis, keepdims=True)", "np.max(work, axis=axis)")}),
    ("01_softmax", "the Jacobian with its sign flipped", "test_softmax_jacobian",
     {"softmax_jacobian": ("np.diag(p) - np.outer(p, p)", "np.outer(p, p) - np.diag(p)")}),
    ("05_multihead", "heads scaled by sqrt(C) instead of sqrt(D)", "test_mha_forward",
     {"mha_forward": ("np.sqrt(q.shape[-1])", "np.sqrt(C)")}),
    ("05_multihead", "a backward missing 1/sqrt(D)", "gradient_check",
     {"mha_backward": ("scale = 1.0 / np.sqrt(q.shape[-1])", "scale = 1.0")}),
    ("07_efficiency", "a FLOP count off by a factor", "test_attention_costs",
     {"attention_costs": ("softmax_flops = 2 * n * n * d + 2 * n * n * d", "softmax_flops = 2 * n * n * d")}),
    ("02_attention", "scores divided by D instead of sqrt(D)", "test_attention",
     {"attention": ("/ np.sqrt(D)", "/ D")}),
    ("02_attention", "an inverted mask", "test_attention",
     {"attention": ("np.where(mask, scores, -np.inf)", "np.where(~mask, scores, -np.inf)")}),
    ("03_gradients", "dq missing 1/sqrt(D)", "test_attention_backward",
     {"attention_backward": ("dq = scale * (dZ @ k)", "dq = dZ @ k")}),
    ("03_gradients", "dk with its sign flipped", "test_attention_backward",
     {"attention_backward": ("dk = scale * (dZ.T @ q)", "dk = -scale * (dZ.T @ q)")}),
    ("03_gradients", "a masked backward missing 1/sqrt(D)", "test_masked_attention_backward",
     {"masked_attention_backward": ("return scale * (dZ @ k), scale * (dZ.T @ q), dv", "return dZ @ k, dZ.T @ q, dv")}),
    ("03_gradients", "a dropout dk missing 1/sqrt(D)", "test_dropout_attention_backward",
     {"dropout_attention_backward": ("scale * (dZ.T @ q), dv", "dZ.T @ q, dv")}),
    ("04_masking", "a causal mask without its diagonal", "test_causal_mask",
     {"causal_mask": ("np.arange(S)[None, :] <= query_position", "np.arange(S)[None, :] < query_position")}),
    ("04_masking", "an inverted causal mask", "test_causal_mask",
     {"causal_mask": ("np.arange(S)[None, :] <= query_position", "np.arange(S)[None, :] >= query_position")}),
    ("04_masking", "a bottom-right mask shifted the wrong way", "test_causal_mask",
     {"causal_mask": ('else S - L', 'else L - S')}),
    ("04_masking", "a padding mask off by one", "test_padding_mask",
     {"padding_mask": ("np.arange(S)[None, :] < lengths[:, None]", "np.arange(S)[None, :] <= lengths[:, None]")}),
    ("04_masking", "masked attention without the scale", "test_masked_attention",
     {"masked_attention": ("/ np.sqrt(q.shape[-1])", "")}),
    ("06_positional", "RoPE rotating the wrong way", "test_apply_rope",
     {"apply_rope": ("theta = base ** (", "theta = -base ** (")}),
    ("06_positional", "an ALiBi bias with the wrong sign", "test_alibi_bias",
     {"alibi_bias": ("return -alibi_slopes(H)", "return alibi_slopes(H)")}),
    ("08_flash", "flash forward without the scale", "test_flash_forward",
     {"flash_forward": ("scale = 1.0 / np.sqrt(D)", "scale = 1.0")}),
    ("08_flash", "a causal tile mask off by one", "test_flash_forward",
     {"flash_forward": ("allowed = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]",
                        "allowed = np.arange(j0, j1)[None, :] < np.arange(i0, i1)[:, None]")}),
    ("08_flash", "a flash backward dk missing 1/sqrt(D)", "test_flash_backward",
     {"flash_backward": ("dk[..., j0:j1, :] += (np.swapaxes(ds, -1, -2) @ q_i) * scale",
                         "dk[..., j0:j1, :] += np.swapaxes(ds, -1, -2) @ q_i")}),
    ("09_moe", "experts sorted least probable first", "test_top_k_gating",
     {"top_k_gating": ("np.argsort(-probs, axis=1", "np.argsort(probs, axis=1")}),
    ("09_moe", "a softmax over the tokens", "test_top_k_gating",
     {"top_k_gating": ("probs = e / e.sum(axis=1, keepdims=True)", "probs = e / e.sum(axis=0, keepdims=True)")}),
    ("10_theory", "a kernel divided by 2h instead of 2h^2", "test_gaussian_smoother",
     {"gaussian_smoother": ("(2.0 * bandwidth**2)", "(2.0 * bandwidth)")}),
    ("10_theory", "transposed weights", "test_linear_self_attention",
     {"linear_self_attention": ("z @ w_q.T, z @ w_k.T, z @ w_v.T", "z @ w_q, z @ w_k, z @ w_v")}),
    ("10_theory", "a gradient step missing 1/N", "test_icl_prediction",
     {"icl_prediction": ("lr / N * np.eye", "lr * np.eye")}),
    ("11_capstone", "layer norm with the unbiased variance", "test_layer_norm",
     {"layer_norm": ("((x - mu) ** 2).mean(axis=-1, keepdims=True)", "x.var(axis=-1, ddof=1, keepdims=True)")}),
    ("11_capstone", "a summed instead of averaged loss", "test_loss_and_accuracy",
     {"loss_and_accuracy": ("np.mean(lse - picked)", "np.sum(lse - picked)")}),
    ("13_serving", "blocks flattened across heads", "test_gather_sequence",
     {"gather_sequence": ("np.swapaxes(blocks, 0, 1).reshape(H_kv, len(table) * block_size, D)",
                          "blocks.reshape(H_kv, len(table) * block_size, D)")}),
    ("13_serving", "merged outputs not normalised", "test_merge_states",
     {"merge_states": ("out = acc / np.where(seen, total, 1.0)[..., None]", "out = acc")}),
    ("13_serving", "a merge without the max shift", "test_merge_states",
     {"merge_states": ("shift = np.where(np.isneginf(m), 0.0, m)", "shift = np.zeros_like(m)")}),
    ("13_serving", "latent scores scaled by sqrt(d_c)", "test_mla_absorbed",
     {"mla_absorbed": ("/ np.sqrt(D)", "/ np.sqrt(c_kv.shape[1])")}),
    ("13_serving", "int8 scales per token instead of per channel", "test_quantize_int8",
     {"quantize_int8_per_channel": ("np.abs(x).max(axis=0)", "np.abs(x).max(axis=1)")}),
    ("12_induction", "the previous token taken above the diagonal", "test_previous_token_score",
     {"previous_token_score": ("offset=-1", "offset=1")}),
    ("12_induction", "the earlier occurrence instead of the token after it", "test_induction_score",
     {"induction_score": ("target[i, j + 1] = True", "target[i, j] = True")}),
    ("12_induction", "induction scores averaged over every query", "test_induction_score",
     {"induction_score": ("[..., queries].mean(axis=-1)", ".mean(axis=-1)")}),
    ("12_induction", "crossing indices instead of steps", "test_phase_change",
     {"phase_change": ("crossings.append(int(steps[n]))", "crossings.append(n)")}),
    ("14_long_context", "interpolation multiplying the frequencies by s", "test_interpolated_frequencies",
     {"interpolated_frequencies": ("/ scale", "* scale")}),
    ("14_long_context", "an NTK base raised by s^D", "test_ntk_frequencies",
     {"ntk_frequencies": ("scale ** (D / (D - 2))", "scale ** D")}),
    ("14_long_context", "a YaRN ramp the wrong way round", "test_yarn",
     {"yarn": ("(1.0 - gamma) * theta / scale + gamma * theta",
               "gamma * theta / scale + (1.0 - gamma) * theta")}),
    ("14_long_context", "a YaRN factor with log10", "test_yarn",
     {"yarn": ("math.log(scale)", "math.log10(scale)")}),
    ("14_long_context", "a window one token too wide", "test_sink_cache_kept",
     {"sink_cache_kept": ("S - window)", "S - window - 1)")}),
    ("14_long_context", "a ring mask by local positions", "test_ring_attention",
     {"ring_attention": ("mask = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]",
                         "mask = np.tri(i1 - i0, j1 - j0, dtype=bool)")}),
]


# The words each message must use to name the mistake (the older checks above are not listed).
NAMED = {
    "scores divided by D instead of sqrt(D)": "divided by D instead of sqrt(D)", "an inverted mask": "inverted",
    "dq missing 1/sqrt(D)": "lacks the factor", "dk with its sign flipped": "sign is flipped",
    "a masked backward missing 1/sqrt(D)": "lacks the factor", "a dropout dk missing 1/sqrt(D)": "lacks the factor",
    "a causal mask without its diagonal": "off by one", "an inverted causal mask": "inverted",
    "a bottom-right mask shifted the wrong way": "bottom-right", "a padding mask off by one": "off by one",
    "masked attention without the scale": "not scaled", "RoPE rotating the wrong way": "wrong way",
    "an ALiBi bias with the wrong sign": "sign", "flash forward without the scale": "not scaled",
    "a causal tile mask off by one": "off by one", "a flash backward dk missing 1/sqrt(D)": "lacks the factor",
    "experts sorted least probable first": "wrong order", "a softmax over the tokens": "not over the tokens",
    "a kernel divided by 2h instead of 2h^2": "not by 2h^2", "transposed weights": "transposed",
    "a gradient step missing 1/N": "1/N is missing", "layer norm with the unbiased variance": "biased variance",
    "a summed instead of averaged loss": "not the sum",
    "blocks flattened across heads": "heads are mixed up", "merged outputs not normalised": "sum to one",
    "a merge without the max shift": "subtract the largest lse", "latent scores scaled by sqrt(d_c)": "1/sqrt(d_c)",
    "int8 scales per token instead of per channel": "one scale per channel",
    "the previous token taken above the diagonal": "below the diagonal",
    "the earlier occurrence instead of the token after it": "not the occurrence itself",
    "induction scores averaged over every query": "queries that have an earlier occurrence",
    "crossing indices instead of steps": "not their indices",
    "interpolation multiplying the frequencies by s": "multiplied by s",
    "an NTK base raised by s^D": "not by s^D", "a YaRN ramp the wrong way round": "keep their frequency",
    "a YaRN factor with log10": "natural log", "a window one token too wide": "exactly `window` tokens",
    "a ring mask by local positions": "global positions",
}


@pytest.mark.parametrize("assignment", sorted({m[0] for m in MISTAKES}))
def test_the_solution_passes_every_visible_check(assignment):
    assert _run_visible(assignment) == "passed"


@pytest.mark.parametrize("assignment, mistake, cell, change", MISTAKES, ids=[m[1] for m in MISTAKES])
def test_a_common_mistake_fails_a_visible_check(assignment, mistake, cell, change):
    message = _run_visible(assignment, change)
    assert message.startswith(f"{cell}: "), (mistake, message)
    assert NAMED.get(mistake, "") in message, (mistake, message)


def test_every_named_mistake_is_tried():
    assert set(NAMED) <= {m[1] for m in MISTAKES}


def test_no_visible_message_gives_the_flop_count_away():
    release = next(c for c in gk.release("07_efficiency").cells if cell_grade_id(c) == "test_attention_costs")
    for number in ("1_280_000", "1280000", "100_000_000", "100000000", "4 n^2 d", "422400", "422_400"):
        assert number not in release.source


# ----------------------------------------------------------------------------- every hidden kind

# Mistakes that each fail one kind of hidden case (the older mistakes above count too).
KIND_MISTAKES = [
    ("01_softmax", "the global-max softmax", "test_stable_softmax",
     {"stable_softmax": ("shifted = work - np.max(work, axis=axis, keepdims=True)", "shifted = work - np.max(work)")}),
    ("01_softmax", "no maximum subtracted", "test_stable_softmax",
     {"stable_softmax": ("shifted = work - np.max(work, axis=axis, keepdims=True)", "shifted = work")}),
    ("01_softmax", "1-D input made 2-D", "test_stable_softmax",
     {"stable_softmax": ("x = np.asarray(x)", "x = np.atleast_2d(x)")}),
    ("01_softmax", "only axis 0 or the last axis", "test_stable_softmax",
     {"stable_softmax": ("x = np.asarray(x)", "x = np.asarray(x)\n    axis = -1 if axis in (-1, x.ndim - 1) else 0")}),
    ("01_softmax", "a Jacobian of a squeezed softmax", "test_softmax_jacobian",
     {"softmax_jacobian": ("p = stable_softmax(np.asarray(z, dtype=np.float64))",
                           "p = np.squeeze(stable_softmax(np.asarray(z, dtype=np.float64)))")}),
    ("01_softmax", "a Jacobian for three logits only", "test_softmax_jacobian",
     {"softmax_jacobian": ("np.diag(p)", "np.eye(3) * p")}),
    ("01_softmax", "a Jacobian of the unstable softmax", "test_softmax_jacobian",
     {"softmax_jacobian": ("p = stable_softmax(np.asarray(z, dtype=np.float64))",
                           "z = np.asarray(z, dtype=np.float64)\n    p = np.exp(z) / np.exp(z).sum()")}),
    ("01_softmax", "a VJP that builds the Jacobian of every row", "test_softmax_vjp",
     {"softmax_vjp": ("inner = np.sum(p * g, axis=-1, keepdims=True)\n    return p * (g - inner)",
                      "out = np.empty(np.shape(p))\n    for i in np.ndindex(np.shape(p)[:-1]):\n"
                      "        out[i] = (np.diag(p[i]) - np.outer(p[i], p[i])).T @ g[i]\n    return out")}),
    ("01_softmax", "a VJP for batches only", "test_softmax_vjp",
     {"softmax_vjp": ("axis=-1, keepdims=True", "axis=1, keepdims=True")}),
    ("01_softmax", "a VJP for one row only", "test_softmax_vjp",
     {"softmax_vjp": ("inner = np.sum(p * g, axis=-1, keepdims=True)", "inner = np.sum(p * g)")}),
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
    ("13_serving", "whole blocks returned", "test_gather_sequence",
     {"gather_sequence": ("return tokens[:, :length, :]", "return tokens")}),
    ("13_serving", "a gather for a head dim of 1", "test_gather_sequence",
     {"gather_sequence": ("reshape(H_kv, len(table) * block_size, D)", "reshape(H_kv, len(table) * block_size, 1)")}),
    ("13_serving", "a gather that stacks the blocks", "test_gather_sequence",
     {"gather_sequence": ("blocks = pool[table]", "blocks = np.stack([pool[i] for i in table])")}),
    ("13_serving", "a merge of two states only", "test_merge_states",
     {"merge_states": ("total = sum(weights)", "total = weights[0] + weights[1]")}),
    ("13_serving", "a merge dividing by a zero total", "test_merge_states",
     {"merge_states": ("out = acc / np.where(seen, total, 1.0)[..., None]", "out = acc / total[..., None]")}),
    ("13_serving", "a merge giving an empty state weight", "test_merge_states",
     {"merge_states": ("weights = [np.exp(l - shift) for l in lses]",
                       "weights = [np.exp(np.where(np.isneginf(l), 0.0, l) - shift) for l in lses]")}),
    ("13_serving", "the non-absorbed MLA", "test_mla_absorbed",
     {"mla_absorbed": ("w_q_absorbed = np.einsum(\"hcd,hed->hce\", w_q, w_uk)  # (H, C, d_c)",
                       "k = np.einsum(\"sc,hcd->hsd\", c_kv, w_uk)\n"
                       "    w_q_absorbed = np.einsum(\"hcd,hed->hce\", w_q, w_uk)")}),
    ("02_attention", "dot products from the (n, n) matrix", "test_dot_product_stats",
     {"dot_product_stats": ('dots = np.einsum("nd,nd->n", q, k)', "dots = np.diag(q @ k.T)")}),
    ("06_positional", "offsets read from a full encoding", "test_pe_dot_by_offset",
     {"pe_dot_by_offset": ("return np.cos(k[..., None] * omega).sum(axis=-1)",
                           "E = sinusoidal_encoding(int(np.abs(k).max()) + 1, C, base)\n"
                           "    return (E[np.abs(k).astype(int)] @ E[0]).reshape(k.shape)")}),
    ("07_efficiency", "chunked attention in one chunk", "test_chunked_attention",
     {"chunked_attention": ("scale = 1.0 / np.sqrt(D)", "scale = 1.0 / np.sqrt(D)\n    chunk_size = L")}),
    ("07_efficiency", "chunked attention with an (L, S) bias", "test_chunked_attention",
     {"chunked_attention": [("scale = 1.0 / np.sqrt(D)",
                             "scale = 1.0 / np.sqrt(D)\n    bias = None if mask is None else np.where(mask, 0.0, -np.inf)"),
                            ("scores = np.where(mask[i0:i1], scores, -np.inf)", "scores = scores + bias[i0:i1]")]}),
    ("07_efficiency", "linear attention through the (L, S) kernel", "test_linear_attention",
     {"linear_attention": ("numerator = phi_q @ kv", "numerator = (phi_q @ np.swapaxes(phi_k, -1, -2)) @ v")}),
    ("07_efficiency", "causal linear attention through the masked (L, L) kernel", "test_causal_linear_attention",
     {"causal_linear_attention": ("phi_q, phi_k, v = phi(q), phi(k), np.asarray(v)",
                                  "phi_q, phi_k, v = phi(q), phi(k), np.asarray(v)\n"
                                  "    A = np.tril(phi_q @ np.swapaxes(phi_k, -1, -2))\n"
                                  "    return (A / A.sum(axis=-1, keepdims=True)) @ v")}),
    ("02_attention", "attention dividing by a zero total", "test_attention",
     {"attention": ("weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)", "weights = e / total")}),
    ("02_attention", "attention that special-cases an all-False mask only", "test_attention",
     {"attention": [("weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)", "weights = e / total"),
                    ("D = q.shape[-1]", "D = q.shape[-1]\n    if mask is not None and not np.any(mask):\n"
                     "        return np.zeros(q.shape[:-1] + v.shape[-1:])")]}),
    ("02_attention", "attention without the row maximum", "test_attention",
     {"attention": ("e = np.exp(scores - row_max)", "e = np.exp(scores)")}),
    ("05_multihead", "MHA without the row maximum", "test_mha_forward",
     {"mha_forward": ("    scores = scores - scores.max(axis=-1, keepdims=True)\n", "")}),
    ("05_multihead", "GQA without the row maximum", "test_gqa_forward",
     {"gqa_forward": ("p = np.exp(scores - scores.max(axis=-1, keepdims=True))", "p = np.exp(scores)")}),
    ("07_efficiency", "chunked attention without the row maximum", "test_chunked_attention",
     {"chunked_attention": ("weights = np.exp(scores - m)", "weights = np.exp(scores)")}),
    ("07_efficiency", "a decode step without the maximum", "test_decode_step_window",
     {"decode_step_window": ("weights = np.exp(scores - np.max(scores, axis=-1, keepdims=True))",
                             "weights = np.exp(scores)")}),
    ("10_theory", "an equivariance gap without the row maximum", "test_equivariance_gap",
     {"equivariance_gap": ("        scores = scores - scores.max(axis=-1, keepdims=True)\n", "")}),
    ("04_masking", "a bottom-right shift of |S - L|", "test_causal_mask",
     {"causal_mask": ("delta = 0 if alignment == \"top_left\" else S - L", "delta = 0 if alignment == \"top_left\" else abs(S - L)")}),
    ("04_masking", "a combined mask that ignores S", "test_combined_mask",
     {"combined_mask": ("    if S is None:\n        S = L\n", "    S = L\n")}),
    ("04_masking", "a combined mask that drops the alignment", "test_combined_mask",
     {"combined_mask": ("causal_mask(L, S, alignment=alignment)", "causal_mask(L, S)")}),
    ("05_multihead", "heads scaled by sqrt(C / H)", "test_mha_forward",
     {"mha_forward": ("/ np.sqrt(q.shape[-1])", "/ np.sqrt(C / H)")}),
    ("05_multihead", "MHA weights not normalised", "test_mha_forward",
     {"mha_forward": ("    p /= p.sum(axis=-1, keepdims=True)\n", "")}),
    ("05_multihead", "MHA with the causal mask left out", "test_mha_forward",
     {"mha_forward": ("np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)", "scores")}),
    ("02_attention", "additive scores for 2-D inputs only", "test_additive_scores",
     {"additive_scores": ("np.tanh(hq[..., :, None, :] + hk[..., None, :, :])", "np.tanh(hq[:, None, :] + hk[None, :, :])")}),
    ("07_efficiency", "chunked attention with k.T", "test_chunked_attention",
     {"chunked_attention": ("k_t = np.swapaxes(k, -1, -2)", "k_t = k.T")}),
    ("07_efficiency", "linear attention with phi(k).T", "test_linear_attention",
     {"linear_attention": ("kv = np.swapaxes(phi_k, -1, -2) @ v", "kv = phi_k.T @ v")}),
    ("07_efficiency", "a causal linear state without leading axes", "test_causal_linear_attention",
     {"causal_linear_attention": ("state = np.zeros(phi_q.shape[:-2] + (D_phi, D_v))", "state = np.zeros((D_phi, D_v))")}),
    ("06_positional", "an encoding that ignores the base", "test_sinusoidal_encoding",
     {"sinusoidal_encoding": ("omega = base ** (", "omega = 10000.0 ** (")}),
    ("06_positional", "RoPE that ignores the base", "test_apply_rope",
     {"apply_rope": ("theta = base ** (", "theta = 10000.0 ** (")}),
    ("06_positional", "ALiBi slopes counted from h = 0", "test_alibi_slopes",
     {"alibi_slopes": ("2.0 ** (-8.0 * (h + 1) / n)", "2.0 ** (-8.0 * h / n)")}),
    ("06_positional", "ALiBi slopes of one geometric sequence", "test_alibi_slopes",
     {"alibi_slopes": ("slopes = geometric(n) + geometric(2 * n)[0::2][: H - n]", "slopes = geometric(H)")}),
    ("06_positional", "an ALiBi bias with S = L", "test_alibi_bias",
     {"alibi_bias": ("    if S is None:\n        S = L\n", "    S = L\n")}),
    ("06_positional", "a PE dot product that ignores the base", "test_pe_dot_by_offset",
     {"pe_dot_by_offset": ("omega = base ** (", "omega = 10000.0 ** (")}),
    ("08_flash", "a flash forward without the running maximum", "test_flash_forward",
     {"flash_forward": [("shift = np.where(np.isfinite(m_new), m_new, 0.0)", "shift = np.zeros_like(m_new)"),
                        ("alpha = np.exp(m - shift)", "alpha = np.ones_like(m)"),
                        ("lse[..., i0:i1] = m + np.log(ell)", "lse[..., i0:i1] = np.log(ell)")]}),
    ("11_capstone", "layer norm without eps", "test_layer_norm",
     {"layer_norm": ("np.sqrt(var + eps)", "np.sqrt(var)")}),
    ("11_capstone", "layer norm with eps outside the square root", "test_layer_norm",
     {"layer_norm": ("np.sqrt(var + eps)", "(np.sqrt(var) + eps)")}),
    ("11_capstone", "layer norm whose eps is called epsilon", "test_layer_norm",
     {"layer_norm": [("def layer_norm(x, gamma, beta, eps=1e-5):", "def layer_norm(x, gamma, beta, epsilon=1e-5):"),
                     ("np.sqrt(var + eps)", "np.sqrt(var + epsilon)")]}),
    ("11_capstone", "layer norm with a keyword-only eps", "test_layer_norm",
     {"layer_norm": ("def layer_norm(x, gamma, beta, eps=1e-5):", "def layer_norm(x, gamma, beta, *, eps=1e-5):")}),
    ("11_capstone", "layer norm with the one-pass variance", "test_layer_norm",
     {"layer_norm": ("var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)",
                     "var = (x ** 2).mean(axis=-1, keepdims=True) - mu ** 2")}),
    ("11_capstone", "a loss without the log-sum-exp shift", "test_loss_and_accuracy",
     {"loss_and_accuracy": ("m = z.max(axis=-1, keepdims=True)", "m = np.zeros_like(z[:, :1])")}),
    ("09_moe", "gating without the maximum", "test_top_k_gating",
     {"top_k_gating": ("e = np.exp(logits - logits.max(axis=1, keepdims=True))", "e = np.exp(logits)")}),
    ("09_moe", "ties sent to the highest expert index", "test_top_k_gating",
     {"top_k_gating": ('order = np.argsort(-probs, axis=1, kind="stable")',
                      'order = np.argsort(probs, axis=1, kind="stable")[:, ::-1]')}),
    ("09_moe", "a capacity rounded down", "test_capacity_keep",
     {"capacity_keep": ("math.ceil(", "math.floor(")}),
    ("09_moe", "expert fractions over the tokens instead of the choices", "test_load_balancing_loss",
     {"load_balancing_loss": ("/ expert_index.size", "/ N")}),
    ("14_long_context", "interpolation that ignores the base", "test_interpolated_frequencies",
     {"interpolated_frequencies": ("return base ** (", "return 10000.0 ** (")}),
    ("14_long_context", "NTK scaling that ignores the base", "test_ntk_frequencies",
     {"ntk_frequencies": ("new_base = base * ", "new_base = 10000.0 * ")}),
    ("14_long_context", "YaRN that ignores the base", "test_yarn",
     {"yarn": ("theta = base ** (", "theta = 10000.0 ** (")}),
    ("14_long_context", "YaRN with fixed ramp thresholds", "test_yarn",
     {"yarn": ("np.clip((turns - beta_slow) / (beta_fast - beta_slow), 0.0, 1.0)", "np.clip((turns - 1.0) / 31.0, 0.0, 1.0)")}),
    ("14_long_context", "a window that may overlap the sinks", "test_sink_cache_kept",
     {"sink_cache_kept": ("np.arange(max(min(n_sink, S), S - window), S)", "np.arange(max(0, S - window), S)")}),
    ("14_long_context", "a cache that always keeps one sink", "test_sink_cache_kept",
     {"sink_cache_kept": ("sinks = np.arange(min(n_sink, S))", "sinks = np.arange(max(1, min(n_sink, S)))")}),
    ("14_long_context", "sinks kept past the end of the stream", "test_sink_cache_kept",
     {"sink_cache_kept": ("sinks = np.arange(min(n_sink, S))", "sinks = np.arange(n_sink)")}),
    ("12_induction", "a sequence of whole copies only", "test_repeated_sequence",
     {"repeated_sequence": ("tokens[1:] = segment[np.arange(L - 1) % T]", "tokens[1:] = np.tile(segment, (L - 1) // T)")}),
    ("12_induction", "a previous-token score on the first two axes", "test_previous_token_score",
     {"previous_token_score": ("np.diagonal(probs, offset=-1, axis1=-2, axis2=-1)", "np.diagonal(probs, offset=-1)")}),
    ("12_induction", "induction scores indexed on the first axis", "test_induction_score",
     {"induction_score": (".sum(axis=-1)[..., queries]", ".sum(axis=-1)[queries]")}),
    ("12_induction", "a phase change measured from the highest loss", "test_phase_change",
     {"phase_change": ("hi, lo = loss[0], loss.min()", "hi, lo = loss.max(), loss.min()")}),
    ("02_attention", "additive scores subtracting the key term", "test_additive_scores",
     {"additive_scores": ("hidden = np.tanh(hq[..., :, None, :] + hk[..., None, :, :])", "hidden = np.tanh(hq[..., :, None, :] - hk[..., None, :, :])")}),
    ("02_attention", "a scaled variance multiplied by D", "test_dot_product_stats",
     {"dot_product_stats": ("return float(np.mean(dots)), var, var / q.shape[-1]", "return float(np.mean(dots)), var, var * q.shape[-1]")}),
    ("02_attention", "entropies summed over the queries", "test_row_entropy",
     {"row_entropy": ("return -np.sum(np.where(positive, p * logs, 0.0), axis=-1)", "return -np.sum(np.where(positive, p * logs, 0.0), axis=0)")}),
    ("03_gradients", "a central difference that steps the same way twice", "test_numerical_attention_gradient",
     {"numerical_attention_gradient": ("x[idx] = old + eps", "x[idx] = old - eps")}),
    ("05_multihead", "an MHA central difference that steps the same way twice", "test_numerical_gradient",
     {"numerical_gradient": ("theta[i] = old + eps", "theta[i] = old - eps")}),
    ("05_multihead", "dx with the value term subtracted", "test_mha_backward",
     {"mha_backward": ("dx = dq @ w_q.T + dk @ w_k.T + dv @ w_v.T", "dx = dq @ w_q.T + dk @ w_k.T - dv @ w_v.T")}),
    ("05_multihead", "GQA weights normalised over the heads", "test_gqa_forward",
     {"gqa_forward": ("p /= p.sum(axis=-1, keepdims=True)", "p /= p.sum(axis=0, keepdims=True)")}),
    ("06_positional", "angles divided by the frequencies", "test_sinusoidal_encoding",
     {"sinusoidal_encoding": ("angles = np.arange(L)[:, None] * omega[None, :]", "angles = np.arange(L)[:, None] / omega[None, :]")}),
    ("10_theory", "a smoother without the log-kernel shift", "test_gaussian_smoother",
     {"gaussian_smoother": ("    logk = logk - logk.max(axis=1, keepdims=True)\n", "")}),
    ("10_theory", "a smoother that reads the first coordinate only", "test_gaussian_smoother",
     {"gaussian_smoother": ("np.sum(diff * diff, axis=-1)", "(diff * diff)[..., 0]")}),
    ("10_theory", "the rank before W_O", "test_multi_head_rank",
     {"multi_head_rank": ("np.linalg.matrix_rank(concat @ w_o)", "np.linalg.matrix_rank(concat)")}),
    ("03_gradients", "dropout scaled by 1/p instead of 1/(1 - p)", "test_dropout_attention_backward",
     {"dropout_attention_backward": ("factor = keep / (1.0 - p)", "factor = keep / p")}),
    ("05_multihead", "a numerical gradient that drops causal", "test_numerical_gradient",
     {"numerical_gradient": ('args["w_o"], H, causal)', 'args["w_o"], H)')}),
    ("07_efficiency", "a decode step with k.T", "test_decode_step_window",
     {"decode_step_window": ("np.swapaxes(k, -1, -2)", "k.T")}),
    ("08_flash", "causal key tiles that run past S", "test_flash_forward",
     {"flash_forward": ("j_stop = min(S, i1) if causal else S", "j_stop = i1 if causal else S")}),
    ("09_moe", "renormalised gates from unshifted logits", "test_renormalized_gates",
     {"renormalized_gates": ("expert_index, gate = top_k_gating(x, w_g, k)\n    return expert_index, gate / gate.sum(axis=1, keepdims=True)",
                             "expert_index, _ = top_k_gating(x, w_g, k)\n"
                             "    z = np.take_along_axis(np.asarray(x) @ np.asarray(w_g), expert_index, axis=1)\n"
                             "    return expert_index, np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)")}),
    ("05_multihead", "heads split as (B, H, L, D) directly", "test_split_heads",
     {"split_heads": ("x.reshape(B, L, H, C // H).transpose(0, 2, 1, 3)", "x.reshape(B, H, L, C // H)")}),
    ("05_multihead", "heads merged without the transpose", "test_merge_heads",
     {"merge_heads": ("x.transpose(0, 2, 1, 3).reshape(B, L, H * D)", "x.reshape(B, L, H * D)")}),
    ("07_efficiency", "chunked attention without the scale", "test_chunked_attention",
     {"chunked_attention": ("scale = 1.0 / np.sqrt(D)", "scale = 1.0")}),
    ("07_efficiency", "linear attention without the denominator", "test_linear_attention",
     {"linear_attention": ("return numerator / denominator", "return numerator")}),
    ("07_efficiency", "causal linear attention without the denominator", "test_causal_linear_attention",
     {"causal_linear_attention": ("out[..., t, :] = numerator / denominator[..., None]", "out[..., t, :] = numerator")}),
    ("07_efficiency", "a decode step with unnormalised weights", "test_decode_step_window",
     {"decode_step_window": ("(weights / np.sum(weights, axis=-1, keepdims=True)) @ v", "weights @ v")}),
    ("09_moe", "a capacity one slot too large", "test_capacity_keep",
     {"capacity_keep": ("if used[e] < capacity:", "if used[e] <= capacity:")}),
    ("09_moe", "a balancing loss without the factor E", "test_load_balancing_loss",
     {"load_balancing_loss": ("float(E * np.dot(", "float(np.dot(")}),
    ("10_theory", "an equivariance gap against the unpermuted output", "test_equivariance_gap",
     {"equivariance_gap": ("out_perm - out[..., perm, :]", "out_perm - out")}),
    ("12_induction", "a repeated sequence shifted by one", "test_repeated_sequence",
     {"repeated_sequence": ("segment[np.arange(L - 1) % T]", "segment[np.arange(1, L) % T]")}),
    ("13_serving", "blocks gathered in sorted order", "test_gather_sequence",
     {"gather_sequence": ("blocks = pool[table]", "blocks = pool[np.sort(table)]")}),
    ("04_masking", "padding and causal combined by OR", "test_combined_mask",
     {"combined_mask": ("padding_mask(lengths, S) & causal_mask(", "padding_mask(lengths, S) | causal_mask(")}),
    ("11_capstone", "a feed-forward layer with |x| for ReLU", "test_feed_forward",
     {"feed_forward": ("np.maximum(x @ w_1 + b_1, 0.0)", "np.abs(x @ w_1 + b_1)")}),
    ("06_positional", "a PE dot product summed over the offsets", "test_pe_dot_by_offset",
     {"pe_dot_by_offset": ("np.cos(k[..., None] * omega).sum(axis=-1)", "np.cos(k[..., None] * omega).sum(axis=0)")}),
    ("09_moe", "gates multiplied by their sum", "test_renormalized_gates",
     {"renormalized_gates": ("gate / gate.sum(axis=1, keepdims=True)", "gate * gate.sum(axis=1, keepdims=True)")}),
    ("11_capstone", "an encoder block shifting scores by the maximum over the batch", "test_encoder_block",
     {"encoder_block": ("p = np.exp(scores - scores.max(axis=-1, keepdims=True))",
                        "p = np.exp(scores - scores.max(axis=0, keepdims=True))")}),
    ("13_serving", "int8 scales of zero", "test_quantize_int8",
     {"quantize_int8_per_channel": ("scale = np.where(amax > 0, amax / 127.0, 1.0)", "scale = amax / 127.0")}),
]

# Hidden kinds that no named mistake covers yet: (assignment, test cell) -> kinds. The coverage test
# fails when a kind is covered (remove it here) and when a new kind appears (cover it, or list it).
GAPS: dict[tuple[str, str], set[str]] = {
    ("01_softmax", "test_stable_softmax"): {"float32 input, rows of ±1e4"},
    ("02_attention", "test_attention"): {
        "another shape, no mask", "another shape, with a mask", "float32 input",
        "scores in the thousands, with a mask",
    },
    ("02_attention", "test_dot_product_stats"): {"random vectors", "vectors with a nonzero mean"},
    ("02_attention", "test_row_entropy"): {
        "a single key", "masked rows and keys", "softmax rows of another shape",
    },
    ("03_gradients", "test_attention_backward"): {"another shape", "nearly one-hot attention rows"},
    ("03_gradients", "test_masked_attention_backward"): {
        "a mask that masks nothing", "causal mask", "every key masked",
        "large scores, a fully masked row and key", "random mask",
    },
    ("03_gradients", "test_numerical_attention_gradient"): {
        "eps passed by keyword", "gradient with respect to k", "gradient with respect to q",
        "gradient with respect to v",
    },
    ("03_gradients", "test_dropout_attention_backward"): {"a fully dropped row", "dropout rate zero"},
    ("04_masking", "test_causal_mask"): {
        "causal, bottom-right, as many keys as queries", "causal, bottom-right, more keys than queries",
        "causal, top-left, as many keys as queries", "causal, top-left, fewer keys than queries",
        "causal, top-left, more keys than queries",
    },
    ("04_masking", "test_padding_mask"): {
        "lengths as an int32 array", "lengths as an int64 array", "lengths including zero",
        "several lengths",
    },
    ("04_masking", "test_combined_mask"): {
        "padding and causal, bottom-right, as many keys as queries",
        "padding and causal, bottom-right, fewer keys than queries",
        "padding and causal, top-left, as many keys as queries",
    },
    ("04_masking", "test_masked_attention"): {
        "a padding mask that broadcasts", "causal, bottom-right, fewer keys than queries",
        "causal, top-left, fewer keys than queries", "float16 input", "float32 input",
        "padding and causal combined", "random mask", "scores below the mask fill value",
        "scores in the thousands",
    },
    ("05_multihead", "test_split_heads"): {"another shape and head count", "float32 input"},
    ("05_multihead", "test_merge_heads"): {"another shape"},
    ("05_multihead", "test_mha_forward"): {
        "causal, one head", "causal, several heads, one token", "not causal, several heads",
        "not causal, several heads, one token",
    },
    ("05_multihead", "test_numerical_gradient"): {
        "a visible self-check", "gradient with respect to w_k", "gradient with respect to w_k, causal",
        "gradient with respect to w_o", "gradient with respect to w_o, causal",
        "gradient with respect to w_q", "gradient with respect to w_v",
        "gradient with respect to w_v, causal", "gradient with respect to x",
        "gradient with respect to x, causal",
    },
    ("05_multihead", "test_mha_backward"): {
        "causal, one head", "causal, several heads", "causal, several heads, one token",
        "head widths other than C / H", "not causal, one head", "not causal, several heads",
        "not causal, several heads, one token",
    },
    ("05_multihead", "test_gqa_forward"): {
        "causal, several heads, grouped key-value heads",
        "causal, several heads, one key-value head per head",
        "causal, several heads, one token, grouped key-value heads",
        "not causal, several heads, grouped key-value heads",
        "not causal, several heads, one key-value head per head",
        "not causal, several heads, one token, grouped key-value heads",
    },
    ("06_positional", "test_sinusoidal_encoding"): {"another length and width"},
    ("06_positional", "test_alibi_bias"): {"another head count and length"},
    ("06_positional", "test_pe_dot_by_offset"): {"other offsets and width"},
    ("07_efficiency", "test_chunked_attention"): {
        "another shape and chunk size, a mask with a fully masked row", "float32 input",
    },
    ("07_efficiency", "test_linear_attention"): {"float32 input", "large positive scores"},
    ("07_efficiency", "test_causal_linear_attention"): {"float32 input"},
    ("07_efficiency", "test_attention_costs"): {"other lengths, width and bytes per element"},
    ("08_flash", "test_online_softmax"): {"a larger maximum in every block", "rows of +-1e4, float32 input"},
    ("08_flash", "test_flash_forward"): {"float32 input, causal", "scores in the thousands, causal"},
    ("08_flash", "test_flash_backward"): {"another shape and tile size, causal"},
    ("09_moe", "test_top_k_gating"): {"another router and k", "uniform rows"},
    ("09_moe", "test_renormalized_gates"): {
        "another router and k", "experts with exactly tied probabilities", "uniform rows",
    },
    ("09_moe", "test_capacity_keep"): {"a single expert", "every token sent to the same experts"},
    ("09_moe", "test_load_balancing_loss"): {"unused experts"},
    ("10_theory", "test_gaussian_smoother"): {"queries on the keys", "two equidistant nearest keys"},
    ("10_theory", "test_linear_self_attention"): {"another shape", "the gradient-descent construction"},
    ("10_theory", "test_icl_prediction"): {"another shape"},
    ("10_theory", "test_equivariance_gap"): {
        "another shape, causal", "another shape, no mask", "band mask", "padding mask",
    },
    ("10_theory", "test_multi_head_rank"): {"a visible self-check", "another shape", "rank-one values"},
    ("11_capstone", "test_layer_norm"): {"another shape", "float32 input"},
    ("11_capstone", "test_feed_forward"): {"another shape and hidden width"},
    ("11_capstone", "test_encoder_block"): {
        "a mask per head, large scores", "another shape, causal mask", "another shape, no mask",
        "another shape, padding mask",
    },
    ("11_capstone", "test_loss_and_accuracy"): {"float32 input", "random logits"},
    ("12_induction", "test_repeated_sequence"): {
        "a longer sequence", "a segment of one token", "a segment with repeated tokens",
        "a sequence of BOS alone", "a sequence shorter than the segment", "the segment exactly twice",
    },
    ("12_induction", "test_previous_token_score"): {
        "a head that attends to the first token", "another pattern", "two positions", "uniform attention",
    },
    ("12_induction", "test_induction_score"): {
        "a segment repeated several times", "another repeated sequence", "tokens that occur many times",
        "two positions",
    },
    ("12_induction", "test_phase_change"): {
        "a noisy curve", "a sharp drop", "a slow drop", "an early drop",
        "unevenly spaced steps, a loss that rises again",
    },
    ("13_serving", "test_gather_sequence"): {"a visible self-check", "blocks of one token"},
    ("13_serving", "test_mla_absorbed"): {"another shape", "scores in the hundreds"},
    ("13_serving", "test_quantize_int8"): {"another shape and channel scales", "outlier channels"},
    ("14_long_context", "test_interpolated_frequencies"): {
        "a factor of 1, no extension", "another head dim and factor",
    },
    ("14_long_context", "test_ntk_frequencies"): {
        "a factor of 1, no extension", "another head dim and factor",
    },
    ("14_long_context", "test_yarn"): {"another head dim, factor and context"},
    ("14_long_context", "test_sink_cache_kept"): {"a long stream"},
    ("14_long_context", "test_ring_attention"): {
        "a causal mask", "an uneven split", "another length and number of workers", "float32 input",
        "large scores", "one worker",
    },
}

ALL_MISTAKES = [m for m in MISTAKES] + KIND_MISTAKES


def _hidden_kinds(assignment: str) -> dict[str, set[str]]:
    parts = load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py")
    return {gid: {case.kind for case in make_cases(part)} for gid, part in parts.items()}


def _named_kind(message: str) -> str:
    found = re.match(r"\S+: Part \d+ failed \[([^\]]+)\]:", message)
    return found.group(1) if found else VISIBLE_KIND


@functools.lru_cache(maxsize=None)
def _verdict(index: int) -> tuple[str, str, bool]:
    """For mistake ``index``: its visible message, the kind that message names, and whether the
    mistake fails a hidden case of that kind."""
    assignment, _name, cell, change = ALL_MISTAKES[index]
    message, namespace = _run(assignment, change)
    kind = _named_kind(message)
    part = load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py").get(cell)
    if part is None:  # caught by a cell that grades nothing (05's gradient check)
        return message, kind, False
    cases = [case for case in make_cases(part) if case.kind == kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        outcomes = compute_outputs(namespace[part.function], cases)
    fails = any(not check_outputs(part, [c], [o])[0] for c, o in zip(cases, outcomes))
    return message, kind, fails


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(MISTAKES), len(ALL_MISTAKES)), ids=[m[1] for m in KIND_MISTAKES])
def test_a_mistake_fails_the_hidden_kind_its_visible_check_names(index):
    assignment, name, cell, _change = ALL_MISTAKES[index]
    message, kind, fails = _verdict(index)
    assert message.startswith(f"{cell}: "), (name, message)
    assert kind in _hidden_kinds(assignment)[cell], f"{name}: the visible check names {kind!r}, not a hidden kind"
    assert fails, f"{name}: caught by the visible check of {kind!r} but passes every hidden case of that kind"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", gk.ASSIGNMENTS)
def test_every_hidden_kind_has_a_visible_check(assignment):
    covered = set()
    for index, (a, _name, cell, _change) in enumerate(ALL_MISTAKES):
        if a == assignment:
            _message, kind, fails = _verdict(index)
            if fails:
                covered.add((cell, kind))
    missing = {}
    for cell, kinds in _hidden_kinds(assignment).items():
        left = {kind for kind in kinds if (cell, kind) not in covered}
        if left:
            missing[(assignment, cell)] = left
    expected = {key: value for key, value in GAPS.items() if key[0] == assignment}
    assert missing == expected
