/* Fig. 1.1, interactive: softmax(z / τ) of four editable logits as τ moves. */
AttnFig.register("temperature", function (root, data) {
  "use strict";
  const A = AttnFig;
  const r = data.log10_tau;
  const exps = [];
  for (let e = r.min; e <= r.max + 1e-9; e += r.step) exps.push(Math.round(e * 100) / 100);
  const controls = A.el("div", {class: "attn-controls"}, root);
  const z = data.logits.slice();
  const tau = A.slider(controls, "tau", "temperature τ", exps, 0,
                       (e) => A.fmt(Math.pow(10, e), 3), () => draw());
  const fields = A.el("div", {class: "attn-control attn-logits"}, controls);
  A.el("span", {}, fields, "logits z");
  z.forEach((v, i) => {
    const input = A.el("input", {type: "number", step: "0.5", value: v, "data-key": "z" + i,
                                 "aria-label": "logit " + (i + 1)}, fields);
    input.addEventListener("input", () => {
      const x = Number(input.value);
      if (input.value !== "" && isFinite(x)) { z[i] = x; draw(); }
    });
  });
  const W = 320, H = 150, pad = 24;
  const plot = A.svg("svg", {viewBox: `0 0 ${W} ${H + 36}`, class: "attn-plot", "aria-hidden": "true"}, root);
  const bars = z.map((_, i) => {
    const x = pad + i * (W - 2 * pad) / z.length + 8;
    const w = (W - 2 * pad) / z.length - 16;
    const bar = A.svg("rect", {x: x, width: w, class: "attn-bar"}, plot);
    const label = A.svg("text", {x: x + w / 2, y: H + 30, "text-anchor": "middle"}, plot);
    const value = A.svg("text", {x: x + w / 2, "text-anchor": "middle", class: "attn-small"}, plot);
    return {bar: bar, label: label, value: value};
  });
  A.svg("line", {x1: pad, x2: W - pad, y1: H + 12, y2: H + 12, class: "attn-axis"}, plot);
  const outs = A.el("div", {class: "attn-readouts"}, root);
  const read = z.map((_, i) => A.readout(outs, "p" + i, "p" + (i + 1) + " ="));

  function softmax(v, t) {
    const m = Math.max(...v);
    const e = v.map((x) => Math.exp((x - m) / t));
    const s = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / s);
  }

  function draw() {
    const t = Math.pow(10, tau.value());
    const p = softmax(z, t);
    p.forEach((pi, i) => {
      const h = pi * (H - 10);
      bars[i].bar.setAttribute("y", H + 12 - h);
      bars[i].bar.setAttribute("height", h);
      bars[i].label.textContent = "z" + (i + 1) + " = " + A.fmt(z[i], 3);
      bars[i].value.setAttribute("y", H + 6 - h);
      bars[i].value.textContent = A.fmt(pi, 3);
      read[i].set(pi, A.fmt(pi, 4));
    });
  }
  draw();
});
