/* Figs. 14.3 and 14.1, interactive: the output error of a sink head restricted to sinks plus a
   sliding window, and which RoPE pairs leave their trained arcs when the context is scaled.
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

  function drawArcs(fig) {
    const {strips, leave, names, s, data} = fig;
    const rows = data.leaving[String(s.value())];
    strips.replaceChildren();
    names.forEach((m, r) => {
      const bits = rows[m], c = (W - 100) / bits.length;
      A.label(strips, 94, r * 22 + 15, m, "end");
      [...bits].forEach((b, i) => A.svg("rect", {x: 100 + i * c, y: r * 22 + 4, width: c, height: 16,
                                                 class: b === "1" ? "attn-leave" : "attn-stay"}, strips));
      const count = [...bits].filter((b) => b === "1").length;
      leave[m].set(bits, count + " of " + bits.length + " pairs leave their trained arc");
    });
    const {D, L} = data.rope;
    A.label(strips, 100, names.length * 22 + 18, `pairs 0 to ${D / 2 - 1}, D = ${D}, trained on L = ${L}`);
  }

  AttnFig.register("sinks", function (root, data) {
    const fig = {data: data};
    const controls = A.el("div", {class: "attn-controls"}, root);
    fig.w = A.slider(controls, "window", "window w", data.windows, 16, String, () => drawErrors(fig));
    fig.n = A.slider(controls, "n_sink", "sink tokens", data.sinks, 0, String, () => drawErrors(fig));
    fig.s = A.slider(controls, "scale", "context scale s", data.scales, 8, String, () => drawArcs(fig));
    fig.plot = A.svg("svg", {viewBox: `0 0 ${W} ${H + 28}`, class: "attn-plot", "aria-hidden": "true"}, root);
    const outs = A.el("div", {class: "attn-readouts"}, root);
    fig.rd = {
      before: A.readout(outs, "before", "error at position w − 1:"),
      at: A.readout(outs, "at", "at position w (token 0 has left a plain window):"),
      worst: A.readout(outs, "worst", "largest from w on:"),
    };
    const names = fig.names = Object.keys(data.leaving[String(data.scales[0])]);
    fig.strips = A.svg("svg", {viewBox: `0 0 ${W} ${names.length * 22 + 22}`, class: "attn-plot",
                                 "aria-hidden": "true"}, root);
    const outs2 = A.el("div", {class: "attn-readouts"}, root);
    fig.leave = Object.fromEntries(names.map((m) => [m, A.readout(outs2, "leave-" + m, m + ":")]));

    drawErrors(fig);
    drawArcs(fig);
  });
}
