"""The interactive figures (book/_ext/attnmath_interactive.py) as a reader moves them.

Each test drives a figure's controls through a grid of settings in headless Chromium and
compares the numbers the page shows (each read-out keeps the exact number it shows in
``data-value``) with ``attnmath``: the softmax, the online softmax and the tile schedule of the
flash forward pass, and the roofline arithmetic are computed by the page's own scripts; the
sinks, RoPE and sqrt(D) figures show a grid computed from the library when the book was built,
which the tests recompute here. Further tests check that the controls work by keyboard and are
read out, that the figures fit a phone's width in the dark theme inside the height reserved for
them, that a page carries at most 50 kB for them, and that without JavaScript and in print the
static figure is what remains. Each figure is photographed at two settings
(``interactive-<figure>-<setting>.png`` in the artifacts folder).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
import attnmath_interactive as fig  # noqa: E402  (book/_ext: what the build put in the pages)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book"))
import figstyle  # noqa: E402  (book/figstyle.py: the recorded tile schedule)
from conftest import darken, read_with  # noqa: E402  (tests/browser/conftest.py)
from attnmath.chunked import online_logsumexp  # noqa: E402
from attnmath.long_context import rope_rotations  # noqa: E402
from attnmath.scaling import attention_entropy, max_weight  # noqa: E402
from attnmath.serving import H100_SXM_BF16_FLOPS, H100_SXM_HBM_BYTES_PER_S, roofline, step_cost  # noqa: E402

pytestmark = pytest.mark.slow

PAGES = {"temperature": "book/01_softmax.html", "scaling": "book/02_attention.html",
         "online": "book/08_flash.html", "roofline": "book/13_serving.html",
         "sinks": "book/14_long_context.html"}
STATIC = {"temperature": "fig-softmax-temperature", "scaling": "fig-saturation",
          "online": "fig-flash-tile-schedule", "roofline": "fig-serving-roofline",
          "sinks": "fig-attention-sinks"}
PHONE = {"width": 375, "height": 812}
BUDGET = 50_000  # bytes a page may carry for its interactive figures (scripts, styles, data)

# Move a slider to the value `want` as a reader's arrow keys would leave it (the input event).
_SET = """([input, want]) => {
  for (let i = Number(input.min); i <= Number(input.max); i++) {
    input.value = String(i);
    input.dispatchEvent(new Event('input', {bubbles: true}));
    if (Number(input.dataset.value) === want) return true;
  }
  return false;
}"""
# Every interactive figure of a page as loaded (read in each page's snapshot): its name, whether
# it was drawn, its height and the height its style sheet reserves for it.
FIGURES = read_with("interactive figures", """() => Array.from(document.querySelectorAll('.attn-interactive'))
  .map((e) => ({name: e.dataset.figure, ready: e.getAttribute('data-ready'),
                height: e.getBoundingClientRect().height, reserved: parseFloat(getComputedStyle(e).minHeight)}))""")
_READ = """(root) => Object.fromEntries(Array.from(root.querySelectorAll('.attn-readout-value'))
  .map((e) => [e.dataset.key, e.dataset.value]))"""


class Figure:
    """One interactive figure of a loaded page. The figure and each slider are looked up once
    (a figure draws into its own elements and never replaces its controls)."""

    def __init__(self, visit, name: str):
        self.page = visit.page
        self.root = visit.page.locator(f".attn-interactive[data-figure={name}]")
        assert self.root.count() == 1, f"{name}: the page has {self.root.count()} such figures"
        assert self.root.get_attribute("data-ready") == "1", f"{name}: the figure was not drawn"
        self.handle = self.root.element_handle()
        self._sliders: dict[str, object] = {}

    def set(self, key: str, value) -> None:
        if key not in self._sliders:
            self._sliders[key] = self.root.locator(f"input[type=range][data-key={key}]").element_handle()
        assert self.page.evaluate(_SET, [self._sliders[key], float(value)]), f"slider {key} has no value {value}"

    def slider_values(self, key: str) -> list[float]:
        """Every value of slider ``key``, as a reader steps through it (the slider is left where
        it was)."""
        return self.page.evaluate("""(input) => {
          const start = input.value, values = [];
          for (let i = Number(input.min); i <= Number(input.max); i++) {
            input.value = String(i);
            input.dispatchEvent(new Event('input', {bubbles: true}));
            values.push(Number(input.dataset.value));
          }
          input.value = start;
          input.dispatchEvent(new Event('input', {bubbles: true}));
          return values;
        }""", self.root.locator(f"input[type=range][data-key={key}]").element_handle())

    def choose(self, key: str, value: str) -> None:
        self.root.locator(f"fieldset[data-key={key}] input[value={value}]").check()

    def read(self) -> dict[str, str]:
        return self.page.evaluate(_READ, self.handle)

    def read_texts(self) -> list[str]:
        """What the read-outs say."""
        return self.root.locator(".attn-readout-value").all_inner_texts()

    def number(self, key: str) -> float:
        return float(self.read()[key])

    def shoot(self, artifacts: Path, name: str) -> Path:
        path = artifacts / f"interactive-{name}.png"
        self.root.scroll_into_view_if_needed()
        self.root.screenshot(path=str(path))
        return path


def _open(reader, name: str, **kwargs) -> Figure:
    visit = reader.open(PAGES[name], **kwargs)
    assert not visit.problems, visit.problems
    return Figure(visit, name)


def test_temperature_shows_the_softmax_of_the_logits(reader, artifacts):
    from attnmath.softmax import softmax

    f = _open(reader, "temperature")
    taus = (-1.0, -0.5, -0.05, 0.0, 0.3, 1.0)  # log10 of the temperature
    for logits in ((1, 2, 3, 4), (2, 7, 7, 1), (0, 0, 0, 0), (-3.5, 5, 5, 5), (100, -100, 0, 50)):
        for i, z in enumerate(logits):
            f.root.locator(f"input[data-key=z{i}]").fill(str(z))
        for e in taus:
            f.set("tau", e)
            read = f.read()
            shown = np.array([float(read[f"p{i}"]) for i in range(4)])
            want = softmax(np.array(logits, dtype=float), temperature=10.0 ** e)
            np.testing.assert_allclose(shown, want, rtol=1e-12, atol=1e-300,
                                       err_msg=f"logits {logits}, tau 10^{e}")
            for a in range(4):  # tied logits get exactly equal weights, at every temperature
                for b in range(a):
                    if logits[a] == logits[b]:
                        assert shown[a] == shown[b], (logits, e)
        if logits == (1, 2, 3, 4):
            f.set("tau", -1.0)
            f.shoot(artifacts, "temperature-cold")
            f.set("tau", 1.0)
            f.shoot(artifacts, "temperature-hot")


def test_online_softmax_steps_match_the_library(reader, artifacts):
    f = _open(reader, "online")
    row = fig.online_row()
    for S, block in ((16, 8), (16, 12), (40, 12), (64, 8), (40, 8), (64, 12)):
        f.set("S", S)
        f.set("block_k", block)
        blocks = math.ceil(S / block)
        assert f.read()["t"] == "0" and f.number("m") == -math.inf
        for t in range(1, blocks + 1):
            before = f.number("m")
            f.root.locator("button[data-key=next]").click()
            read = row[:min(S, t * block)]
            m, lse = read.max(), online_logsumexp(read, block_size=block)
            shown = f.read()
            assert shown["t"] == str(t)
            assert float(shown["m"]) == m, (S, block, t)
            np.testing.assert_allclose(float(shown["lse"]), lse, rtol=1e-13, err_msg=f"{S}, {block}, {t}")
            np.testing.assert_allclose(float(shown["ell"]), math.exp(lse - m), rtol=1e-12)
            np.testing.assert_allclose(float(shown["alpha"]), math.exp(before - m), rtol=1e-13)
            if S == 64 and block == 8 and t in (2, 6):
                f.shoot(artifacts, f"online-step{t}")
        assert f.root.locator("button[data-key=next]").is_disabled()
        f.root.locator("button[data-key=reset]").click()


def _library_schedule(L: int, S: int, block_q: int, block_k: int, offset: int) -> str:
    """The kind of every tile as flash_attention_forward runs it, recorded from a run of it
    (book/figstyle.py, which draws chapter 8's static figure from the same record)."""
    kinds = figstyle.flash_tile_schedule(L, S, block_q, block_k, causal_alignment=offset).kinds
    letter = {"full": "F", "masked": "M", "skipped": "S"}
    return "/".join("".join(letter[kinds[i, j]] for j in range(math.ceil(S / block_k)))
                    for i in range(math.ceil(L / block_q)))


def test_tile_schedule_at_every_offset_matches_the_flash_forward_pass(reader, artifacts):
    f = _open(reader, "online")
    offsets = fig.TILE_OFFSETS
    for L, S, bq, bk in ((64, 64, 8, 8), (16, 64, 12, 8), (64, 16, 8, 12), (40, 40, 12, 12),
                         (40, 64, 8, 12), (16, 40, 12, 12)):
        for key, value in (("L", L), ("S", S), ("block_q", bq), ("block_k", bk)):
            f.set(key, value)
        # The slider runs from -L (no query sees a key) to S - 1 (every query sees every key):
        # its ends and their neighbours, the two named alignments, and a spread of the others.
        assert f.slider_values("offset") == list(range(-L, S)), (L, S)
        assert set(_library_schedule(L, S, bq, bk, -L)) == {"S", "/"} and set(
            _library_schedule(L, S, bq, bk, S - 1)) == {"F", "/"}
        for offset in sorted({-L, -L + 1, S - 2, S - 1, 0, S - L, -3, 5}
                             | set(range(-L, S, 9))):
            f.set("offset", offset)
            shown = f.read()
            want = _library_schedule(L, S, bq, bk, offset)
            assert offsets[0] <= offset < offsets[-1] + 1
            assert shown["kinds"] == want, (L, S, bq, bk, offset)
            assert int(shown["skipped"]) == want.count("S")
            assert int(shown["computed"]) == want.count("F") + want.count("M")
            assert int(shown["masked"]) == want.count("M")
            named = {0: "top-left", S - L: "bottom-right"}.get(offset, "neither")
            assert shown["alignment"] == ("top-left and bottom-right" if offset == 0 == S - L
                                          else named), (L, S, offset)
    f.set("L", 40)
    f.set("S", 64)
    f.set("block_q", 8)
    f.set("block_k", 8)
    for offset in (0, 24):
        f.set("offset", offset)
        f.shoot(artifacts, f"online-offset{offset}")


def test_every_tile_schedule_of_the_page_is_the_librarys():
    # The grid the build wrote into the page, decoded as the page decodes it, for every setting
    # of the sliders: causal_tile_schedule itself (the browser test above checks the page).
    from attnmath.flash import causal_tile_schedule

    grid = fig.tile_schedules()
    codes = {"full": "F", "masked": "M", "skipped": "S"}
    for L, S, bq, bk in ((a, b, c, d) for a in fig.TILE_LENGTHS for b in fig.TILE_LENGTHS
                         for c in fig.TILE_BLOCKS for d in fig.TILE_BLOCKS):
        runs = grid[f"{L},{S},{bq},{bk}"]
        for offset in fig.TILE_OFFSETS:
            rows = [r for first, r in runs if first <= offset][-1]
            key_tiles = math.ceil(S / bk)
            decoded = ["F" * int(rows[i], 36) + "M" * int(rows[i + 1], 36) for i in range(0, len(rows), 2)]
            decoded = [row + "S" * (key_tiles - len(row)) for row in decoded]
            want = causal_tile_schedule(L, S, block_q=bq, block_k=bk, causal_alignment=offset)
            assert decoded == ["".join(codes[x] for x in row) for row in want], (L, S, bq, bk, offset)


def test_roofline_point_matches_step_cost(reader, artifacts):
    f = _open(reader, "roofline")
    ridge = H100_SXM_BF16_FLOPS / H100_SXM_HBM_BYTES_PER_S
    bounds, mla_bounds = set(), set()
    assert list(fig.ROOFLINE_KV_HEADS) == ["MHA", "GQA", "MQA", "MLA"]  # the switch, in order
    for variant in fig.ROOFLINE_KV_HEADS:
        f.choose("variant", variant)
        shape = fig.roofline_shape(variant)
        assert shape.attention == variant
        for bits in (8, 16, 32):
            f.set("bits", bits)
            for B, S in ((1, 4096), (16, 128), (256, 131072), (1024, 128), (1024, 32768)):
                f.set("B", B)
                f.set("S", S)
                cost = step_cost(shape, B=B, L=1, S=S, itemsize=bits // 8)
                shown = f.read()
                assert float(shown["flops"]) == cost.flops and float(shown["bytes"]) == cost.bytes
                np.testing.assert_allclose(float(shown["intensity"]), cost.intensity, rtol=1e-14)
                np.testing.assert_allclose(float(shown["tflops"]), roofline(cost.intensity) / 1e12,
                                           rtol=1e-14)
                assert shown["bound"] == ("memory" if cost.intensity < ridge else "compute")
                bounds.add(shown["bound"])
                if variant == "MLA":
                    mla_bounds.add(shown["bound"])
    assert bounds == {"memory", "compute"}  # the grid moves the decode point across the ridge
    # With a long cache MLA's decode step does ten times the work per byte of GQA's: one more
    # cached token costs H (4 d_c + 2 d_R) FLOPs per (d_c + d_R) numbers read, against
    # 4 H D per 2 H_kv D.
    assert mla_bounds == {"memory", "compute"}
    mla, gqa = (step_cost(fig.roofline_shape(v), B=1024, L=1, S=32768) for v in ("MLA", "GQA"))
    assert mla.intensity > 10 * gqa.intensity
    f.choose("variant", "MHA")
    f.set("bits", 16)
    f.set("B", 1)
    f.set("S", 4096)
    f.shoot(artifacts, "roofline-mha-batch1")
    f.choose("variant", "MQA")
    f.set("B", 1024)
    f.set("S", 128)
    f.shoot(artifacts, "roofline-mqa-batch1024")
    f.choose("variant", "MLA")
    f.set("S", 32768)
    f.shoot(artifacts, "roofline-mla-batch1024")


def test_sinks_errors_and_rope_arcs_match_the_library(reader, artifacts):
    from attnmath.long_context import sink_window_mask
    from attnmath.testing import sdpa_oracle

    f = _open(reader, "sinks")
    q, k, v, bias = fig.sink_head()
    full = sdpa_oracle(q, k, v, bias=bias, causal=True)
    for w in fig.SINK_WINDOWS:
        f.set("window", w)
        at = {}
        for n_sink in fig.SINK_COUNTS:
            f.set("n_sink", n_sink)
            mask = sink_window_mask(len(q), n_sink=n_sink, window=w)
            errors = np.linalg.norm(sdpa_oracle(q, k, v, bias=bias, mask=mask) - full, axis=-1)
            shown = f.read()
            for key, want in (("before", errors[w - 1]), ("at", errors[w]), ("worst", errors[w:].max())):
                np.testing.assert_allclose(float(shown[key]), want, rtol=6e-3, atol=1e-13,
                                           err_msg=f"{key}, w {w}, sinks {n_sink}")
            at[n_sink] = float(shown["at"]), float(shown["worst"])
        # The jump: once token 0 leaves a window without sinks the error is orders of magnitude
        # larger than with any number of sinks kept.
        assert at[0][1] > 100 * max(at[n][1] for n in fig.SINK_COUNTS if n > 0), (w, at)
        assert at[0][0] > 0.1 and float(f.read()["before"]) < 1e-12, (w, at)
    for s in fig.ROPE_SCALES:
        f.set("scale", s)
        shown = f.read()
        methods = fig.rope_methods(s)
        trained = rope_rotations(methods["plain"], fig.ROPE_CONTEXT)
        for name, theta in methods.items():
            longer = rope_rotations(theta, int(s * fig.ROPE_CONTEXT))
            want = "".join("1" if (r < 1 and x > r * (1 + 1e-9)) else "0"
                           for r, x in zip(trained, longer))
            assert shown[f"leave-{name}"] == want, (s, name)
        # prop-yarn-seen: interpolation and YaRN stay on their arcs; plain RoPE leaves every
        # pair that never completed a turn.
        assert set(shown["leave-interpolation"]) == {"0"} and set(shown["leave-YaRN"]) == {"0"}
        assert shown["leave-plain"] == "".join("1" if r < 1 else "0" for r in trained)
    f.set("window", 16)
    for n_sink in (0, 1):
        f.set("n_sink", n_sink)
        f.shoot(artifacts, f"sinks-window16-sinks{n_sink}")


def test_scaling_rows_match_the_library(reader, artifacts):
    from attnmath.softmax import softmax

    from attnmath.scaling import saturation_curve

    f = _open(reader, "scaling")
    curve = saturation_curve(fig.SCALING_DIMS, n_keys=fig.SCALING_KEYS,
                             n_queries=fig.SCALING_ROWS, seed=0)
    mean = {}
    for n, D in enumerate(fig.SCALING_DIMS):
        f.set("D", D)
        scores = fig.scaling_scores(D)
        for mode, s in (("scaled", 1 / math.sqrt(D)), ("unscaled", 1.0)):
            f.choose("scaled", mode)
            p = softmax(scores * s)
            shown = f.read()
            np.testing.assert_allclose(float(shown["entropy"]), attention_entropy(p), rtol=1e-12,
                                       atol=1e-15, err_msg=f"D {D}, {mode}")
            np.testing.assert_allclose(float(shown["max"]), max_weight(p), rtol=1e-12)
            for key in ("entropy", "max_weight"):
                want = getattr(curve, f"{key}_{mode}")[n]
                got = float(shown["mean_max" if key == "max_weight" else "mean_entropy"])
                np.testing.assert_allclose(got, want, rtol=1e-14, err_msg=f"mean {key}, D {D}")
            mean[D, mode] = float(shown["mean_entropy"]), float(shown["mean_max"])
    top = fig.SCALING_DIMS[-1]
    # Without the scaling the rows of the largest D are nearly one-hot and their entropy has
    # collapsed; with it the entropy stays near log S - 1/2 at every D.
    assert mean[top, "unscaled"][0] < 0.1 * mean[top, "scaled"][0]
    assert mean[top, "unscaled"][1] > 0.9
    for D in fig.SCALING_DIMS[1:]:
        assert abs(mean[D, "scaled"][0] - (math.log(fig.SCALING_KEYS) - 0.5)) < 0.25
    for mode in ("scaled", "unscaled"):
        f.set("D", top)
        f.choose("scaled", mode)
        f.shoot(artifacts, f"scaling-D{top}-{mode}")


def test_controls_work_by_keyboard_and_are_read_out(reader):
    for name in PAGES:
        f = _open(reader, name)
        sliders = f.root.locator("input[type=range]")
        assert sliders.count() >= 1
        for i in range(sliders.count()):
            s = sliders.nth(i)
            label = f.page.locator(f"label[for='{s.get_attribute('id')}']")
            assert label.count() == 1 and label.inner_text().strip(), f"{name}: a slider has no label"
            before, text = s.input_value(), s.get_attribute("aria-valuetext")
            assert text, f"{name}: slider {label.inner_text()} has no aria-valuetext"
            readouts = f.read_texts()
            s.focus()
            key = "ArrowLeft" if before == s.get_attribute("max") else "ArrowRight"
            f.page.keyboard.press(key)
            assert s.input_value() != before, f"{name}: {key} did not move {label.inner_text()}"
            assert s.get_attribute("aria-valuetext") != text
            assert s.get_attribute("aria-valuetext") == f.root.locator(
                f"output[for='{s.get_attribute('id')}']").inner_text()
            assert f.read_texts() != readouts, f"{name}: {label.inner_text()} changed nothing shown"


# Every control of a figure moved through its range, one control at a time from the figure as
# loaded, each put back afterwards: every value of a slider, every option of a switch, a few
# values of a number field, a button clicked until it is disabled (or, for one that starts
# again, clicked after the button before it). After each setting, what the figure shows: its
# drawings (coordinates to a tenth of a unit) and the texts of its read-outs.
_SWEEP = """(root) => {
  const fire = (e, type) => e.dispatchEvent(new Event(type, {bubbles: true}));
  const tenth = (t) => t.replace(/-?\\d*\\.\\d+/g, (x) => String(Math.round(Number(x) * 10) / 10));
  const shown = () => JSON.stringify([
    Array.from(root.querySelectorAll('svg')).map((s) => tenth(s.innerHTML)),
    Array.from(root.querySelectorAll('.attn-readout-value')).map((e) => e.textContent)]);
  const name = (e) => (e.matches('fieldset') ? e.querySelector('legend').textContent
    : e.labels && e.labels[0] ? e.labels[0].textContent
    : e.getAttribute('aria-label') || e.textContent).trim();
  const sweeps = [];
  root.querySelectorAll('input[type=range]').forEach((input) => {
    const start = input.value, settings = [];
    for (let i = Number(input.min); i <= Number(input.max); i++) {
      input.value = String(i);
      fire(input, 'input');
      settings.push([input.getAttribute('aria-valuetext'), shown()]);
    }
    input.value = start;
    fire(input, 'input');
    sweeps.push({control: name(input), settings});
  });
  root.querySelectorAll('fieldset').forEach((box) => {
    const radios = Array.from(box.querySelectorAll('input[type=radio]'));
    const start = radios.find((r) => r.checked), settings = [];
    for (const r of radios) {
      r.checked = true;
      fire(r, 'change');
      settings.push([r.value, shown()]);
    }
    start.checked = true;
    fire(start, 'change');
    sweeps.push({control: name(box), settings});
  });
  root.querySelectorAll('input[type=number]').forEach((input) => {
    const start = input.value, settings = [];
    for (const v of [start, '-2', '0.5', '3', '6.5'].filter((v, i, all) => all.indexOf(v) === i)) {
      input.value = v;
      fire(input, 'input');
      settings.push([v, shown()]);
    }
    input.value = start;
    fire(input, 'input');
    sweeps.push({control: name(input), settings});
  });
  const buttons = Array.from(root.querySelectorAll('button'));
  buttons.forEach((button, i) => {
    const settings = [['before', shown()]];
    if (i > 0) {  // a button that starts again: after the one before it moved the figure
      buttons[0].click();
      settings[0] = ['after ' + name(buttons[0]), shown()];
      button.click();
      settings.push(['clicked', shown()]);
    } else {
      for (let n = 1; !button.disabled && n < 1000; n++) {
        button.click();
        settings.push([n + ' clicks', shown()]);
      }
    }
    if (buttons.length > 1) buttons[buttons.length - 1].click();
    sweeps.push({control: name(button), settings});
  });
  return sweeps;
}"""


def same_drawings(sweeps: list[dict]) -> list[str]:
    """For each control of ``sweeps`` (``_SWEEP``'s result), the settings at which the figure
    shows what it showed at an earlier setting of that control."""
    found = []
    for sweep in sweeps:
        first: dict[str, str] = {}
        for setting, state in sweep["settings"]:
            if state in first:
                found.append(f"{sweep['control']}: {first[state]} and {setting}")
            first.setdefault(state, setting)
    return found


def test_every_control_changes_what_the_figure_shows(reader):
    """Each control of each interactive figure, moved through its range, draws a different
    figure at each of its settings: none is inert anywhere in its range."""
    for name in PAGES:
        f = _open(reader, name)
        sweeps = f.page.evaluate(_SWEEP, f.handle)
        kinds = f.root.locator("input, button").count() - f.root.locator("input[type=radio]").count() \
            + f.root.locator("fieldset").count()
        assert len(sweeps) == kinds, f"{name}: {len(sweeps)} of its {kinds} controls were moved"
        assert all(len(sweep["settings"]) >= 2 for sweep in sweeps), (name, sweeps)
        assert not same_drawings(sweeps), f"{name}: controls that leave the figure as it was: " \
            f"{same_drawings(sweeps)}"


def test_an_inert_control_is_found(browser):
    """The sweep finds a slider that changes nothing, and one that changes only some of its
    steps; it passes a slider that changes the figure at every step."""
    page = browser.new_page()
    try:
        page.set_content("""<div id="fig"><svg><rect id="bar" width="1" height="1"/></svg>
          <span class="attn-readout-value">0</span>
          <label for="a">inert</label><input type="range" id="a" min="0" max="3" value="0">
          <label for="b">coarse</label><input type="range" id="b" min="0" max="3" value="0">
          <label for="c">live</label><input type="range" id="c" min="0" max="3" value="0"></div>
          <script>
            const bar = document.getElementById('bar');
            document.getElementById('b').addEventListener('input', (e) =>
              bar.setAttribute('height', String(1 + Math.floor(Number(e.target.value) / 2))));
            document.getElementById('c').addEventListener('input', (e) =>
              bar.setAttribute('width', String(1.5 + Number(e.target.value))));
          </script>""")
        found = same_drawings(page.evaluate(_SWEEP, page.query_selector("#fig")))
    finally:
        page.close()
    assert [f.split(":")[0] for f in found] == ["inert"] * 3 + ["coarse"] * 2, found


@pytest.mark.parametrize("name", list(PAGES))
def test_fits_a_phone_in_dark_mode_without_moving_the_page(reader, snapshots, name):
    visit = reader.open(PAGES[name], viewport=PHONE)
    darken(visit.page)
    box = visit.page.evaluate("""(name) => {
      const e = document.querySelector(`.attn-interactive[data-figure=${name}]`);
      const kids = Array.from(e.children).filter((c) => c.tagName !== 'SCRIPT');
      const bottom = Math.max(...kids.map((c) => c.getBoundingClientRect().bottom));
      const lum = (c) => { const [r, g, b] = c.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
        const linear = (v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
        return [r, g, b].map((v) => linear(v / 255))
          .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0); };
      let bg = 'rgb(255, 255, 255)';
      for (let n = e; n; n = n.parentElement) {
        const c = getComputedStyle(n).backgroundColor;
        if (!c.startsWith('rgba(0, 0, 0, 0)') && c !== 'transparent') { bg = c; break; }
      }
      const fg = getComputedStyle(e.querySelector('.attn-plot')).color;
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      return {scroll: e.scrollWidth, client: e.clientWidth, right: e.getBoundingClientRect().right,
              width: window.innerWidth, used: bottom - e.getBoundingClientRect().top,
              height: e.getBoundingClientRect().height, contrast: (a + 0.05) / (b + 0.05),
              reserved: parseFloat(getComputedStyle(e).minHeight)};
    }""", name)
    assert box["scroll"] <= box["client"] and box["right"] <= box["width"], box
    # The drawing fits the height the style sheet reserved before the script drew it.
    assert box["used"] <= box["height"] <= box["reserved"] + 1, box
    assert box["contrast"] >= 4.5, f"{name}: text contrast {box['contrast']:.1f} in the dark theme"
    # At the desktop width too (the page's snapshot, a load of its own).
    desktop = snapshots.get(PAGES[name])
    assert not desktop.problems, desktop.problems
    drawn = [f for f in desktop.data[FIGURES] if f["name"] == name]
    assert len(drawn) == 1 and drawn[0]["ready"] == "1", f"{name}: {drawn} at 1280 px"
    assert drawn[0]["height"] <= drawn[0]["reserved"] + 1, (name, drawn[0])


@pytest.mark.parametrize("name", list(PAGES))
def test_a_page_carries_at_most_50_kB_for_its_figures(site, name):
    html = (site.root / PAGES[name]).read_text()
    start = html.index(f'<div class="attn-interactive attn-{name}"')
    block = html[start:html.index("</script></div>", start) + len("</script></div>")]
    files = ["interactive.js", "interactive.css", f"{name}.js"]
    assert all(f"_static/interactive/{file}" in html for file in files)
    others = set(PAGES) - {name}
    assert not any(f"_static/interactive/{other}.js" in html for other in others)
    total = len(block.encode()) + sum((site.root / "_static" / "interactive" / file).stat().st_size
                                      for file in files)
    assert total <= BUDGET, f"{name}: {total} bytes"


def test_without_javascript_and_in_print_the_static_figure_remains(browser, site):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        for name, label in STATIC.items():
            page.goto(site.url(PAGES[name]), wait_until="load")
            assert not page.locator(f".attn-interactive[data-figure={name}]").is_visible()
            image = page.locator(f"#{label} img")
            assert image.is_visible() and len(image.get_attribute("alt") or "") > 40
    finally:
        context.close()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(site.url(PAGES["temperature"]), wait_until="load")
        root = page.locator(".attn-interactive[data-figure=temperature]")
        assert root.is_visible()
        page.emulate_media(media="print")
        assert not root.is_visible()
    finally:
        context.close()
