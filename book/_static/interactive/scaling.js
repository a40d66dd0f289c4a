/* Figs. 2.1 and 2.2, interactive: one sampled row of attention weights as the head dimension D
   grows, with and without the 1/√D scaling. The weights, entropy and largest weight were
   computed by attnmath when the page was built, for each D of the slider. */
AttnFig.register("scaling", function (root, data) {
  "use strict";
  const A = AttnFig;
  const controls = A.el("div", {class: "attn-controls"}, root);
  const D = A.slider(controls, "D", "head dimension D", data.dims, 64, String, () => draw());
  const mode = A.choice(controls, "scaled", "scores",
                        [["scaled", "q·k / √D"], ["unscaled", "q·k (no scaling)"]], "scaled",
                        () => draw());
  const W = 360, H = 140;
  const plot = A.svg("svg", {viewBox: `0 0 ${W} ${H + 20}`, class: "attn-plot", "aria-hidden": "true"}, root);
  const outs = A.el("div", {class: "attn-readouts"}, root);
  const rd = {
    entropy: A.readout(outs, "entropy", "entropy ="),
    uniform: A.readout(outs, "uniform", "uniform row: log " + data.keys + " ="),
    max: A.readout(outs, "max", "largest weight ="),
    meanEntropy: A.readout(outs, "mean_entropy", `mean entropy of ${data.rows_averaged} sampled rows =`),
    meanMax: A.readout(outs, "mean_max", "their mean largest weight ="),
  };
  rd.uniform.set(Math.log(data.keys), A.fmt(Math.log(data.keys), 4));

  function draw() {
    const row = data.rows[String(D.value())][mode.value()];
    const c = (W - 20) / row.p.length;
    plot.replaceChildren();
    row.p.forEach((p, j) => {
      const h = p * (H - 6);
      A.svg("rect", {x: 10 + j * c + 2, y: H - h, width: c - 4, height: h, class: "attn-bar"}, plot);
    });
    A.svg("line", {x1: 10, x2: W - 10, y1: H, y2: H, class: "attn-axis"}, plot);
    A.label(plot, W / 2, H + 16, `weights of ${data.keys} keys (one sampled row)`, "middle");
    rd.entropy.set(row.entropy, A.fmt(row.entropy, 4));
    rd.max.set(row.max, A.fmt(row.max, 4));
    rd.meanEntropy.set(row.mean_entropy, A.fmt(row.mean_entropy, 4));
    rd.meanMax.set(row.mean_max, A.fmt(row.mean_max, 4));
  }
  draw();
});
