/* Figs. 14.3 and 14.1, interactive: the output error of a sink head restricted to sinks plus a
   sliding window, and how far each RoPE pair turns, against its trained arc, when the context
   is scaled.
   Every number shown was computed by attnmath when the page was built; the sliders step through
   the computed grid only. */
"use strict";
{
  const A = AttnFig;
  const W = 360, H = 150, floor = 1e-16;

  function drawErrors(fig) {
    const {plot, rd, w, n, data} = fig;
    const e = data.errors[w.value() + "," + n.value()];
    const x = A.scale(0, e.length - 1, 36, W - 6), y = A.scale(floor, 1, H, 6, true);
    plot.replaceChildren();
    const ticks = [[1e-16, "10⁻¹⁶"], [1e-12, "10⁻¹²"], [1e-8, "10⁻⁸"], [1e-4, "10⁻⁴"], [1, "1"]];
    for (const [t, label] of ticks) {
      A.svg("line", {x1: 36, x2: W - 6, y1: y(t), y2: y(t), class: "attn-faint"}, plot);
      A.label(plot, 32, y(t) + 3, label, "end");
    }
    A.svg("line", {x1: x(w.value()), x2: x(w.value()), y1: 6, y2: H, class: "attn-marker attn-dotted"}, plot);
    A.svg("polyline", {points: e.map((v, i) => `${x(i)},${y(Math.max(floor, v))}`).join(" "),
                       class: "attn-line"}, plot);
    A.label(plot, W / 2, H + 24, "query position (error below 10⁻¹⁶ drawn at 10⁻¹⁶)", "middle");
    const k = w.value();
    rd.before.set(e[k - 1], A.fmt(e[k - 1], 3));
    rd.at.set(e[k], A.fmt(e[k], 3));
    const worst = Math.max(...e.slice(k));
    rd.worst.set(worst, A.fmt(worst, 3));
  }

  /* How far each RoPE pair turns over a context s times the trained one, in units of its
     trained arc (log scale, 1 to the largest s): plain RoPE turns s times as far on every pair,
     interpolation stays at 1, NTK-aware scaling falls from s on the fastest pair to 1 on the
     slowest, YaRN keeps its fast pairs and interpolates its slow ones. Shaded: the pairs that
     went round their whole circle in training, where no angle is new. */
  const SH = 120;
  function drawStretch(fig) {
    const {strips, leave, names, s, data} = fig;
    const rows = data.stretch[String(s.value())], n = data.trained.length;
    const x = A.scale(0, n - 1, 40, W - 8), y = A.scale(1, Math.max(...data.scales), SH, 8, true);
    strips.replaceChildren();
    const seen = data.trained.filter((r) => r >= 1).length;
    A.svg("rect", {x: x(0), y: 8, width: x(seen - 0.5) - x(0), height: SH - 8, class: "attn-read"}, strips);
    A.label(strips, x(seen / 2), 22, "every angle seen", "middle");
    for (const t of data.scales.concat([1])) {
      A.svg("line", {x1: 40, x2: W - 8, y1: y(t), y2: y(t), class: "attn-faint"}, strips);
      A.label(strips, 36, y(t) + 4, "×" + t, "end");
    }
    let key = 40;  // the legend's next entry: a sample of the line, then the name
    names.forEach((m, k) => {
      A.svg("polyline", {points: rows[m].map((v, i) => `${x(i)},${y(Math.max(1, v))}`).join(" "),
                         class: "attn-line attn-m" + k}, strips);
      A.svg("line", {x1: key, x2: key + 16, y1: SH + 34, y2: SH + 34, class: "attn-line attn-m" + k}, strips);
      A.label(strips, key + 20, SH + 38, m);
      key += 32 + 5.6 * m.length;
      const bits = data.leaving[String(s.value())][m], out = [...bits].filter((b) => b === "1").length;
      const far = Math.max(1, ...rows[m].filter((_, i) => bits[i] === "1"));
      leave[m].set(bits, out + " of " + n + " pairs leave their trained arc"
                   + (out ? ", the farthest by " + A.fmt(far, 3) + "×" : ""));
    });
    const {D, L} = data.rope;
    A.label(strips, W / 2, SH + 16, `pair i, 0 to ${D / 2 - 1} (D = ${D}, trained on L = ${L})`, "middle");
  }

  AttnFig.register("sinks", function (root, data) {
    const fig = {data: data};
    const controls = A.el("div", {class: "attn-controls"}, root);
    fig.w = A.slider(controls, "window", "window w", data.windows, 16, String, () => drawErrors(fig));
    fig.n = A.slider(controls, "n_sink", "sink tokens", data.sinks, 0, String, () => drawErrors(fig));
    fig.s = A.slider(controls, "scale", "context scale s", data.scales, 8, String, () => drawStretch(fig));
    fig.plot = A.svg("svg", {viewBox: `0 0 ${W} ${H + 28}`, class: "attn-plot", "aria-hidden": "true"}, root);
    const outs = A.el("div", {class: "attn-readouts"}, root);
    fig.rd = {
      before: A.readout(outs, "before", "error at position w − 1:"),
      at: A.readout(outs, "at", "at position w (token 0 has left a plain window):"),
      worst: A.readout(outs, "worst", "largest from w on:"),
    };
    const names = fig.names = Object.keys(data.leaving[String(data.scales[0])]);
    fig.strips = A.svg("svg", {viewBox: `0 0 ${W} ${SH + 44}`, class: "attn-plot",
                                 "aria-hidden": "true"}, root);
    const outs2 = A.el("div", {class: "attn-readouts"}, root);
    fig.leave = Object.fromEntries(names.map((m) => [m, A.readout(outs2, "leave-" + m, m + ":")]));

    drawErrors(fig);
    drawStretch(fig);
  });
}
