"""Interactive figures: a reader moves the parameter a chapter is about and watches the figure.

A chapter places one next to its static figure with

.. code-block:: markdown

    ```{interactive} temperature
    ```

The directive writes a block that stays hidden without JavaScript (the static figure above it,
with its alt text, is then the whole figure; the print styles hide the block, so the PDF shows
the static figures), the data the figure needs as JSON inside the page, computed here from
``attnmath`` when the page is written, and a short description for screen readers. Each page with
such a block loads ``_static/interactive/interactive.js`` (sliders, read-outs, SVG helpers), the
figure's own script and ``interactive.css``; nothing else, and nothing from another site.

Where the page computes (the softmax of figure ``temperature``, the online softmax of
``online``, the roofline arithmetic of ``roofline``) the JSON holds only the inputs, and
tests/browser/test_interactive.py drives the controls and compares what the page shows with
``attnmath``. Where the computation is the library's own rule (the tile schedule of ``online``,
from :func:`attnmath.flash.causal_tile_schedule`) or heavier (``sinks``, ``scaling``) the JSON
holds a grid computed here, and the sliders step through the grid's points only: nothing is
interpolated.
"""

from __future__ import annotations

import html
import json
import math

import numpy as np
from docutils import nodes
from sphinx.util.docutils import SphinxDirective

#: The rows of the online-softmax figure: the chapter's row of logits (book/08_flash.md).
ONLINE_ROW_SEED, ONLINE_ROW_LEN, ONLINE_ROW_PEAK = 3, 64, (44, 7.0)
#: The grid of the tile schedule: query and key lengths, tile sizes (a divisor and a
#: non-divisor of the lengths), and every causal offset of the slider.
TILE_LENGTHS = (16, 40, 64)
TILE_BLOCKS = (8, 12)
TILE_OFFSETS = range(-64, 65)
#: The roofline figure's model (a dense decoder, so that attnmath.serving.step_cost applies)
#: and the key/value head counts of its switch: multi-head, grouped-query, multi-query, and
#: multi-head latent attention (no key/value heads: one latent per token).
ROOFLINE_MODEL = "Llama-2-7B"
ROOFLINE_KV_HEADS = {"MHA": 32, "GQA": 8, "MQA": 1, "MLA": 0}
#: The published model whose latent widths d_c and d_rope the MLA setting takes (DeepSeek-AI
#: 2024: d_c = 512, d_rope = 64).
ROOFLINE_MLA_MODEL = "DeepSeek-V2"
#: The grid of the sinks figure: the chapter's head (book/14_long_context.md) over fewer positions.
SINK_POSITIONS, SINK_DIM = 96, 8
SINK_WINDOWS = (4, 8, 16, 32)
SINK_COUNTS = (0, 1, 2, 4)
#: The RoPE part of the sinks figure: head dim, base, trained context, scale factors.
ROPE_D, ROPE_BASE, ROPE_CONTEXT = 128, 10000.0, 4096
ROPE_SCALES = (2, 4, 8, 16, 32)
#: The sqrt(D) figure: one sampled row of this many keys for each head dim.
SCALING_KEYS = 16
SCALING_DIMS = tuple(2 ** p for p in range(1, 11))
SCALING_ROWS = 256  # rows averaged for the mean entropy and largest weight


def online_row() -> np.ndarray:
    """The row of logits the online-softmax figure reads block by block."""
    row = np.random.default_rng(ONLINE_ROW_SEED).normal(scale=1.5, size=ONLINE_ROW_LEN)
    row[ONLINE_ROW_PEAK[0]] = ONLINE_ROW_PEAK[1]
    return row


def roofline_shape(variant: str):
    """The roofline figure's model with the attention of ``variant``: the key/value heads of
    MHA, GQA or MQA, or MLA with DeepSeek-V2's latent widths on the model's other dimensions."""
    from attnmath.serving import PUBLISHED_MODELS

    if variant not in ROOFLINE_KV_HEADS:
        raise ValueError(f"variant must be one of {sorted(ROOFLINE_KV_HEADS)}, got {variant!r}")
    shape = PUBLISHED_MODELS[ROOFLINE_MODEL]._replace(attention=variant,
                                                       H_kv=ROOFLINE_KV_HEADS[variant])
    if variant == "MLA":
        latent = PUBLISHED_MODELS[ROOFLINE_MLA_MODEL]
        shape = shape._replace(d_c=latent.d_c, d_rope=latent.d_rope)
    return shape


def tile_rows(schedule) -> str:
    """A tile schedule (:func:`attnmath.flash.causal_tile_schedule`) as two base-36 digits per
    query tile: how many key tiles are full, then how many masked; the rest are skipped (a row
    is always full tiles, then masked ones, then skipped ones)."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    for row in schedule:
        full, masked = int((row == "full").sum()), int((row == "masked").sum())
        if list(row) != ["full"] * full + ["masked"] * masked + ["skipped"] * (len(row) - full - masked):
            raise ValueError(f"a row of the schedule is not full, masked, skipped in order: {row}")
        out.append(digits[full] + digits[masked])
    return "".join(out)


def tile_schedules() -> dict:
    """``"L,S,block_q,block_k"`` -> runs ``[first offset, rows]`` of equal schedules over
    :data:`TILE_OFFSETS`: each offset's schedule is the run's whose first offset is the
    largest not above it."""
    from attnmath.flash import causal_tile_schedule

    grid = {}
    for L in TILE_LENGTHS:
        for S in TILE_LENGTHS:
            for bq in TILE_BLOCKS:
                for bk in TILE_BLOCKS:
                    runs: list = []
                    for offset in TILE_OFFSETS:
                        rows = tile_rows(causal_tile_schedule(L, S, block_q=bq, block_k=bk,
                                                              causal_alignment=offset))
                        if not runs or runs[-1][1] != rows:
                            runs.append([offset, rows])
                    grid[f"{L},{S},{bq},{bk}"] = runs
    return grid


def sink_head(n: int = SINK_POSITIONS, d: int = SINK_DIM, seed: int = 0):
    """The chapter's sink head: queries, keys, values and the score bias (a sink score of 6 on
    token 0, a recency penalty of 0.3 per step back, a zero value on the sink)."""
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((3, n, d)) * 0.3
    v[0] = 0.0
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return q, k, v, np.where(j == 0, 6.0, -0.3 * (i - j))


def sink_errors(window: int, n_sink: int) -> np.ndarray:
    """Per query position, the norm of the difference between attention restricted to the sinks
    plus a window and full causal attention, for the sink head."""
    from attnmath.attention import scaled_dot_product_attention
    from attnmath.long_context import sink_window_mask

    q, k, v, bias = sink_head()
    full, _ = scaled_dot_product_attention(q, k, v, bias=bias, causal=True)
    mask = sink_window_mask(len(q), n_sink=n_sink, window=window)
    out, _ = scaled_dot_product_attention(q, k, v, bias=bias, mask=mask)
    return np.linalg.norm(out - full, axis=-1)


def rope_methods(scale: float) -> dict[str, np.ndarray]:
    """The frequencies of plain RoPE and of the three ways of scaling it by ``scale``."""
    from attnmath.long_context import (interpolated_frequencies, ntk_frequencies,
                                       yarn_frequencies)
    from attnmath.positional import sinusoidal_frequencies

    return {"plain": sinusoidal_frequencies(ROPE_D, base=ROPE_BASE),
            "interpolation": interpolated_frequencies(ROPE_D, scale, base=ROPE_BASE),
            "NTK-aware": ntk_frequencies(ROPE_D, scale, base=ROPE_BASE),
            "YaRN": yarn_frequencies(ROPE_D, scale, ROPE_CONTEXT, base=ROPE_BASE)}


def rope_leaving(scale: float) -> dict[str, np.ndarray]:
    """For each method, which pairs leave the arc they covered in training when the context is
    ``scale`` times the trained one: pairs that never completed a turn in training
    (:func:`rope_trained_turns` under 1) and now turn further than they did
    (:func:`rope_stretch` over 1)."""
    slow = rope_trained_turns() < 1
    return {name: slow & (factor > 1 + 1e-9) for name, factor in rope_stretch(scale).items()}


def rope_stretch(scale: float) -> dict[str, np.ndarray]:
    """For each method, how far each pair turns over a context ``scale`` times the trained one,
    in units of the arc it covered in training (turns over ``scale`` L with the method's
    frequencies over turns over L with plain RoPE's): 1 for a pair that stays on its trained
    arc, ``scale`` for a pair of plain RoPE. Where plain RoPE's pair went round its whole circle
    in training (:func:`rope_trained_turns` at least 1) every angle was seen, and no factor
    leaves it."""
    from attnmath.long_context import rope_rotations

    methods = rope_methods(scale)
    trained = rope_trained_turns()
    return {name: rope_rotations(theta, int(scale * ROPE_CONTEXT)) / trained
            for name, theta in methods.items()}


def rope_trained_turns() -> np.ndarray:
    """The turns of each pair of plain RoPE over the trained context."""
    from attnmath.long_context import rope_rotations
    from attnmath.positional import sinusoidal_frequencies

    return rope_rotations(sinusoidal_frequencies(ROPE_D, base=ROPE_BASE), ROPE_CONTEXT)


def scaling_scores(D: int) -> np.ndarray:
    """One sampled row of unscaled scores q . k_j, q and k_j with independent unit entries."""
    rng = np.random.default_rng(D)
    q = rng.standard_normal(D)
    k = rng.standard_normal((SCALING_KEYS, D))
    return k @ q


def _round(x, digits: int = 4) -> list:
    return [float(f"{v:.{digits}g}") for v in np.asarray(x, dtype=float).ravel()]


def temperature_data() -> dict:
    return {"logits": [1.0, 2.0, 3.0, 4.0], "log10_tau": {"min": -1.0, "max": 1.0, "step": 0.05}}


def online_data() -> dict:
    return {"row": online_row().tolist(), "lengths": TILE_LENGTHS, "blocks": TILE_BLOCKS,
            "tiles": tile_schedules()}


def roofline_variant(variant: str) -> dict:
    """The numbers the page needs for one attention kind, from attnmath.serving:
    ``weights`` the matmul weights (read once per step), ``per_key`` the FLOPs per sequence of
    one more cached token (the difference of two step costs), ``per_token`` the numbers one
    token adds to the cache; a decode step then costs ``2 weights B + per_key B (S + 1)``
    FLOPs and ``(weights + B (S + 1) per_token) itemsize`` bytes."""
    from attnmath.serving import decoder_param_count, kv_bytes_per_token, step_cost

    shape = roofline_shape(variant)
    per_key = (step_cost(shape, B=1, L=1, S=1).flops - step_cost(shape, B=1, L=1, S=0).flops)
    return {"weights": decoder_param_count(shape).matmul, "per_key": per_key,
            "per_token": kv_bytes_per_token(shape, itemsize=1),
            "label": (f"MLA (latent {shape.d_c} + {shape.d_rope})" if variant == "MLA"
                      else f"{variant} ({shape.H_kv})")}


def roofline_data() -> dict:
    from attnmath.serving import H100_SXM_BF16_FLOPS, H100_SXM_HBM_BYTES_PER_S

    return {"model": ROOFLINE_MODEL, "variants": {v: roofline_variant(v) for v in ROOFLINE_KV_HEADS},
            "peak": H100_SXM_BF16_FLOPS, "bandwidth": H100_SXM_HBM_BYTES_PER_S}


def sinks_data() -> dict:
    errors = {f"{w},{n}": _round(sink_errors(w, n), 3) for w in SINK_WINDOWS for n in SINK_COUNTS}
    leaving = {str(s): {name: "".join("1" if x else "0" for x in mask)
                        for name, mask in rope_leaving(s).items()} for s in ROPE_SCALES}
    stretch = {str(s): {name: _round(factor, 3) for name, factor in rope_stretch(s).items()}
               for s in ROPE_SCALES}
    return {"windows": SINK_WINDOWS, "sinks": SINK_COUNTS, "errors": errors,
            "scales": ROPE_SCALES, "leaving": leaving, "stretch": stretch,
            "trained": _round(rope_trained_turns(), 3),
            "rope": {"D": ROPE_D, "L": ROPE_CONTEXT}}


def scaling_curve():
    """Mean entropy and mean largest weight over many sampled rows, for each head dim."""
    from attnmath.scaling import saturation_curve

    return saturation_curve(SCALING_DIMS, n_keys=SCALING_KEYS, n_queries=SCALING_ROWS, seed=0)


def scaling_data() -> dict:
    from attnmath.scaling import attention_entropy, max_weight
    from attnmath.softmax import softmax

    curve, rows = scaling_curve(), {}
    for n, D in enumerate(SCALING_DIMS):
        scores = scaling_scores(D)
        rows[str(D)] = {}
        for name, s in (("scaled", scores / math.sqrt(D)), ("unscaled", scores)):
            p = softmax(s)
            rows[str(D)][name] = {"p": _round(p, 4), "entropy": float(attention_entropy(p)),
                                  "max": float(max_weight(p)),
                                  "mean_entropy": float(getattr(curve, f"entropy_{name}")[n]),
                                  "mean_max": float(getattr(curve, f"max_weight_{name}")[n])}
    return {"dims": SCALING_DIMS, "keys": SCALING_KEYS, "rows_averaged": SCALING_ROWS,
            "rows": rows}


#: name -> (data, what moving the controls shows: the block's description for screen readers).
FIGURES = {
    "temperature": (temperature_data, "Interactive version of the temperature figure: a slider "
                    "sets the temperature and four fields set the logits; the bars show the "
                    "softmax, sharper as the temperature falls, flatter as it rises, and equal "
                    "for tied logits."),
    "online": (online_data, "Interactive version of the online softmax and the tile schedule: "
               "sliders set the number of queries and keys, the tile sizes and the causal "
               "offset (query i sees key j when j is at most i plus the offset); a button reads "
               "the next block of the row and shows the running maximum and the rescaled "
               "running sum, and the grid shows which tiles the library's forward pass "
               "computes, masks inside or skips at that offset."),
    "roofline": (roofline_data, "Interactive roofline: sliders set the batch, the cached tokens "
                 "and the bits per number, a switch the attention (multi-head, grouped-query, "
                 "multi-query, or multi-head latent attention with DeepSeek-V2's latent "
                 "widths); the decode step's point moves along the roof and the read-outs say "
                 "whether it is memory-bound."),
    "sinks": (sinks_data, "Interactive sinks and sliding window: sliders set the window, the "
              "number of sink tokens and the context scale factor s; the first plot shows the "
              "output error by position, which jumps once token 0 leaves a window without "
              "sinks; the second shows, for each RoPE pair, how many times its trained arc it "
              "turns over a context s times the trained one under each scaling: s for plain "
              "RoPE, 1 for interpolation, from s down to 1 for NTK-aware scaling, and 1 for "
              "YaRN on every pair that never completed a turn in training."),
    "scaling": (scaling_data, "Interactive scaling by the square root of the head dimension: a "
                "slider sets the head dimension and a switch turns the scaling off; the bars "
                "show one sampled row of attention weights, which goes one-hot without the "
                "scaling as the dimension grows, and its entropy."),
}


class interactive_figure(nodes.General, nodes.Element):
    """An interactive figure's block; written only by the HTML builders."""


def visit_html(self, node):
    name = node["figure"]
    data = json.dumps(FIGURES[name][0](), separators=(",", ":")).replace("</", "<\\/")
    label = html.escape(FIGURES[name][1])
    self.body.append(
        f'<div class="attn-interactive attn-{name}" data-figure="{name}" role="group" '
        f'aria-label="{label}" hidden>'
        f'<script type="application/json" class="attn-data">{data}</script></div>'
        # Shown (with its space reserved by interactive.css) before the page is first painted;
        # never shown without JavaScript, nor in the PDF, which copies pages without running
        # their scripts.
        '<script>document.currentScript.previousElementSibling.hidden=false;</script>')
    raise nodes.SkipNode


def skip(self, node):
    raise nodes.SkipNode


class InteractiveDirective(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self):
        name = self.arguments[0]
        if name not in FIGURES:
            raise self.error(f"interactive: unknown figure {name!r}; known: {sorted(FIGURES)}")
        return [interactive_figure(figure=name)]


def add_assets(app, pagename, templatename, context, doctree):
    """The scripts and styles of the figures on this page, on this page only."""
    if doctree is None:
        return
    names = sorted({n["figure"] for n in doctree.findall(interactive_figure)})
    if not names:
        return
    app.add_css_file("interactive/interactive.css")
    app.add_js_file("interactive/interactive.js", loading_method="defer")
    for name in names:
        app.add_js_file(f"interactive/{name}.js", loading_method="defer")


def setup(app):
    app.add_node(interactive_figure, html=(visit_html, None), latex=(skip, None),
                 text=(skip, None), man=(skip, None), texinfo=(skip, None))
    app.add_directive("interactive", InteractiveDirective)
    app.connect("html-page-context", add_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
