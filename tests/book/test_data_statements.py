"""The book's statements about its own data, each checked against the same data.

A sentence, caption or alt text that describes a figure, a table or a recorded run ("falls as
... grows", "sits between", "an order of magnitude below") is registered here with a ``claim``
marker of the source kind ``book`` (``tests/claims.py``): ``quote`` is the chapter's words, and
the test reads the record the chapter reads (``book/data/...``) or makes the library call the
figure plots, with the figure's own settings, and checks what the words say. The appendix
"Claims and errata" lists these statements under each chapter, and the chapter's sentence must
still say what the marker quotes (``tests/test_claims.py``). Every test here takes well under a
second.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "book" / "data"


@lru_cache(maxsize=None)
def record(name: str) -> dict:
    """A record under ``book/data`` (read once per test run)."""
    return json.loads((DATA / name).read_text())


# 1 Softmax ---------------------------------------------------------------------------------------

@pytest.mark.claim(
    "book: figure fig-softmax-temperature (right)",
    "The weight of the logit 3 against another logit $x$ falls towards one half as $x$ approaches 3; "
    "at $\\tau = 1/2$ it stays near one until $x$ is close to 3 and falls steepest there, at "
    "$\\tau = 2$ it starts lower and falls at a similar rate over the whole range",
    "verified", chapter="01_softmax",
    quote="at low temperature it stays near one until the other logit is close to 3 and then drops steeply",
    domain="the figure's temperatures $1/2$, $1$, $2$ and its 100 values of $x$ from $-2$ to $2.9$")
def test_softmax_weight_of_the_maximum_against_the_temperature():
    from attnmath.softmax import softmax

    other = np.linspace(-2, 2.9, 100)  # the figure's grid
    weight, slope = {}, {}
    for tau in (0.5, 1.0, 2.0):
        pairs = np.stack([np.full_like(other, 3.0), other], axis=-1)
        weight[tau] = softmax(pairs, axis=-1, temperature=tau)[:, 0]
        slope[tau] = -np.diff(weight[tau]) / np.diff(other)
        assert (slope[tau] > 0).all() and abs(weight[tau][-1] - 0.5) < 0.06  # falls towards one half
    assert weight[0.5][other <= 1.5].min() > 0.95, "low temperature: near one until close to 3"
    assert slope[0.5].argmax() == len(other) - 2, "and steepest at the end, next to 3"
    assert slope[0.5].max() > 3 * slope[2.0].max(), "low temperature drops more steeply"
    assert weight[2.0][0] < weight[1.0][0] < weight[0.5][0] and weight[2.0][0] < 0.93, "high starts lower"
    assert slope[2.0].min() > 0.25 * slope[2.0].max(), "high temperature: gradual over the whole range"


# 2 Scaled dot-product attention ------------------------------------------------------------------

@pytest.mark.claim(
    "book: figure fig-dot-product-variance (left)",
    "The sample variance of $q \\cdot k$ grows like $D$ and that of $q \\cdot k/\\sqrt{D}$ stays at 1",
    "verified", chapter="02_attention",
    quote="the sample variance of q·k (10 000 pairs per point) grows like D, and that of q·k/√D stays at 1",
    domain="the figure's head dimensions $D = 1, 4, \\dots, 1024$, 10 000 pairs each, its seeds; within 5 %")
def test_attention_dot_product_variance_figure():
    from attnmath.scaling import dot_product_variance

    for d in (1, 4, 16, 64, 256, 1024):
        stats = dot_product_variance(d, n_samples=10_000, seed=d)
        assert abs(stats.var / d - 1) < 0.05 and abs(stats.scaled_var - 1) < 0.05, d


@pytest.mark.claim(
    "book: figure fig-saturation",
    "Without the scaling the mean largest weight of a softmax row rises to nearly 1 and its entropy "
    "falls to nearly 0 as $D$ grows; with it both stay flat from $D = 4$ on, the entropy close to "
    "$\\log S - 1/2$",
    "verified", chapter="02_attention",
    quote="With it, the largest weight and the entropy hardly change from D = 4 on",
    domain="the figure's data: 64 keys, 256 rows, $D = 1, 4, \\dots, 1024$, seed 0; flat: within 20 % "
           "of the value at $D = 4$; close: within 0.1 nats")
def test_attention_saturation_figure():
    from attnmath.scaling import saturation_curve

    c = saturation_curve([1, 4, 16, 64, 256, 1024], n_keys=64, n_queries=256, seed=0)
    assert np.all(np.diff(c.max_weight_unscaled) > 0) and c.max_weight_unscaled[-1] > 0.9
    assert np.all(np.diff(c.entropy_unscaled) < 0) and c.entropy_unscaled[-1] < 0.25
    for values in (c.max_weight_scaled[1:], c.entropy_scaled[1:]):
        assert np.abs(values / values[0] - 1).max() < 0.2
    assert np.abs(c.entropy_scaled[1:] - (np.log(64) - 0.5)).max() < 0.1
    assert c.max_weight_scaled[1:].max() < 0.15, "low"


@pytest.mark.claim(
    "book: figure fig-gradient-vanishing",
    "With the scaling, mean and median of the softmax Jacobian's norm stay put; without it the median "
    "collapses, many orders of magnitude below, while the mean rises a little up to $D = 16$ and then "
    "falls roughly like $1/\\sqrt{D}$",
    "verified", chapter="02_attention",
    quote="The unscaled mean rises a little up to D equals 16 and then falls, roughly along the gray line",
    domain="the figure's data: 64 keys, 1000 rows, $D = 4, 16, \\dots, 4096$, seed 8; stay put: within "
           "15 %; roughly: a log-log slope between $-0.6$ and $-0.3$ from $D = 64$ on")
def test_attention_gradient_figure():
    from attnmath.scaling import gradient_magnitude_curve

    dims = np.array([4, 16, 64, 256, 1024, 4096])
    gc = gradient_magnitude_curve(dims, n_keys=64, n_queries=1000, seed=8)
    for values in (gc.scaled, gc.scaled_median):
        assert np.abs(values / values[0] - 1).max() < 0.15
    assert gc.unscaled.argmax() <= 1 and np.all(np.diff(gc.unscaled[1:]) < 0)
    slope = np.polyfit(np.log(dims[2:]), np.log(gc.unscaled[2:]), 1)[0]
    assert -0.6 < slope < -0.3, slope
    assert gc.unscaled_median[-1] < 1e-5 * gc.scaled_median[-1], "many orders of magnitude below"
