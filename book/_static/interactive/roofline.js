/* Fig. 13.1, interactive: one decode step of a dense decoder on the roofline of an H100 SXM,
   with multi-head, grouped-query, multi-query or multi-head latent attention. FLOPs and bytes
   as attnmath.serving.step_cost counts them (L = 1 new token; MLA in its absorbed form). */
AttnFig.register("roofline", function (root, data) {
  "use strict";
  const A = AttnFig;
  const pow2 = (a, b) => Array.from({length: b - a + 1}, (_, i) => Math.pow(2, a + i));
  const controls = A.el("div", {class: "attn-controls"}, root);
  const B = A.slider(controls, "B", "batch B", pow2(0, 10), 1, String, () => draw());
  const S = A.slider(controls, "S", "cached tokens S", pow2(7, 17), 4096, String, () => draw());
  const bits = A.slider(controls, "bits", "bits per number", [8, 16, 32], 16,
                        String, () => draw());
  const variant = A.choice(controls, "variant", "attention",
                           Object.entries(data.variants).map(([k, v]) => [k, v.label]),
                           "MHA", () => draw());
  const W = 360, H = 200, lo = 0.1, hi = 1e4;
  const plot = A.svg("svg", {viewBox: `0 0 ${W} ${H + 30}`, class: "attn-plot", "aria-hidden": "true"}, root);
  const ridge = data.peak / data.bandwidth;
  const x = A.scale(lo, hi, 56, W - 8, true), y = A.scale(data.bandwidth * lo, data.peak * 2, H, 6, true);
  const roof = [[lo, data.bandwidth * lo], [ridge, data.peak], [hi, data.peak]];
  A.svg("polyline", {points: roof.map(([i, f]) => `${x(i)},${y(f)}`).join(" "),
                     class: "attn-line attn-roof"}, plot);
  A.svg("line", {x1: x(ridge), x2: x(ridge), y1: 6, y2: H, class: "attn-faint attn-dotted"}, plot);
  const ticks = [[0.1, "0.1"], [1, "1"], [10, "10"], [100, "100"], [1000, "10³"], [10000, "10⁴"]];
  ticks.forEach(([t, label]) => {
    A.label(plot, x(t), H + 14, label, "middle");
  });
  [[1e12, "1"], [1e13, "10"], [1e14, "100"], [1e15, "1000"]].forEach(([f, label]) => {
    A.svg("line", {x1: x(lo) - 4, x2: x(lo), y1: y(f), y2: y(f), class: "attn-line"}, plot);
    A.label(plot, x(lo) - 6, y(f) + 4, label, "end");
  });
  A.svg("line", {x1: x(lo), x2: x(lo), y1: 6, y2: H, class: "attn-faint"}, plot);
  A.label(plot, 12, H / 2, "attainable TFLOP/s", "middle", {transform: `rotate(-90 12 ${H / 2})`});
  A.label(plot, W - 8, y(data.peak) + 12, A.fmt(data.peak / 1e12, 3) + " TFLOP/s", "end");
  A.label(plot, W / 2, H + 28, "FLOP per byte", "middle");
  A.label(plot, x(ridge) + 4, 16, "ridge");
  const point = A.svg("circle", {r: 5, class: "attn-point"}, plot);
  const outs = A.el("div", {class: "attn-readouts"}, root);
  const rd = {
    flops: A.readout(outs, "flops", "FLOPs ="), bytes: A.readout(outs, "bytes", "bytes ="),
    intensity: A.readout(outs, "intensity", "intensity ="),
    tflops: A.readout(outs, "tflops", "attainable TFLOP/s ="),
    bound: A.readout(outs, "bound", "bound by"), ms: A.readout(outs, "ms", "step time (ms) ="),
  };

  function draw() {
    const b = B.value(), s = S.value(), item = bits.value() / 8;
    const v = data.variants[variant.value()];
    const keys = s + 1;  // L = 1: the new query sees S cached tokens and itself
    const flops = 2 * v.weights * b + v.per_key * b * keys;
    const bytes = v.weights * item + b * keys * v.per_token * item;
    const intensity = flops / bytes;
    const attainable = Math.min(data.peak, data.bandwidth * intensity);
    point.setAttribute("cx", x(Math.min(hi, Math.max(lo, intensity))));
    point.setAttribute("cy", y(attainable));
    rd.flops.set(flops, A.fmt(flops, 4));
    rd.bytes.set(bytes, A.fmt(bytes, 4));
    rd.intensity.set(intensity, A.fmt(intensity, 4));
    rd.tflops.set(attainable / 1e12, A.fmt(attainable / 1e12, 4));
    rd.bound.set(intensity < ridge ? "memory" : "compute", intensity < ridge ? "memory" : "compute");
    const ms = 1e3 * Math.max(flops / data.peak, bytes / data.bandwidth);
    rd.ms.set(ms, A.fmt(ms, 4));
  }
  draw();
});
