/* Figs. 8.1 and 8.2, interactive: the online softmax of one row read block by block, and the
   tile schedule of the causal forward pass (which tiles are computed, masked or skipped) at a
   causal offset: query i sees key j when j <= i + offset. */
"use strict";
{
  const A = AttnFig;
  const W = 360, H = 130, G = 240;

  /* The kind of every (query tile, key tile) as attnmath.flash.causal_tile_schedule gave it
     when the book was built: F computed without a mask, M computed with the mask, S skipped.
     Each grid entry holds runs [first offset, rows] of equal schedules; a row is two base-36
     digits, the number of F tiles, then of M tiles, the rest S. */
  function tileKinds(tiles, l, s, q, k, offset) {
    const runs = tiles[[l, s, q, k].join(",")];
    let rows = runs[0][1];
    for (const [first, r] of runs) if (first <= offset) rows = r;
    const keyTiles = Math.ceil(s / k), out = [];
    for (let i = 0; i < rows.length; i += 2) {
      const full = parseInt(rows[i], 36), masked = parseInt(rows[i + 1], 36);
      out.push("F".repeat(full) + "M".repeat(masked) + "S".repeat(keyTiles - full - masked));
    }
    return out;
  }

  /* One step of the online softmax: read the next block of the row into the running state. */
  function readBlock(state, row, s, b) {
    const j0 = state.t * b;
    if (j0 >= s) return;
    const block = row.slice(j0, Math.min(s, j0 + b));
    const mNew = Math.max(state.m, ...block);
    state.alpha = Math.exp(state.m - mNew);
    state.ell = state.ell * state.alpha + block.reduce((a, x) => a + Math.exp(x - mNew), 0);
    state.m = mNew;
    state.maxes.push([j0, j0 + block.length, mNew]);
    state.t += 1;
  }

  function drawRow(fig) {
    const {plot, rd, state, data} = fig, s = fig.S.value(), b = fig.bk.value(), T = Math.ceil(s / b);
    plot.replaceChildren();
    const lo = Math.min(...data.row) - 0.5, hi = Math.max(...data.row) + 0.5;
    const x = A.scale(0, data.row.length, 20, W - 6), y = A.scale(lo, hi, H - 14, 6);
    A.svg("rect", {x: x(0), width: x(Math.min(s, state.t * b)) - x(0), y: 4, height: H - 16,
                   class: "attn-read"}, plot);
    for (let j = b; j < s; j += b) {
      A.svg("line", {x1: x(j), x2: x(j), y1: 4, y2: H - 12, class: "attn-faint"}, plot);
    }
    for (let j = 0; j < s; j++) {
      A.svg("circle", {cx: x(j + 0.5), cy: y(data.row[j]), r: 2, class: "attn-dot"}, plot);
    }
    for (const [a, e, m] of state.maxes) {  // the running maximum after each block read
      A.svg("line", {x1: x(a), x2: x(e), y1: y(m), y2: y(m), class: "attn-line"}, plot);
    }
    A.label(plot, 20, H - 1, "key j = 0");
    A.label(plot, x(s), H - 1, String(s - 1), "end");
    rd.t.set(state.t, state.t + " of " + T);
    rd.m.set(state.m, A.fmt(state.m, 5));
    rd.ell.set(state.ell, A.fmt(state.ell, 5));
    const lse = state.m + Math.log(state.ell);
    rd.lse.set(lse, A.fmt(lse, 5));
    rd.alpha.set(state.alpha, isNaN(state.alpha) ? "none yet" : A.fmt(state.alpha, 4));
    fig.next.disabled = state.t >= T;
  }

  function drawTiles(fig) {
    const {grid, rt} = fig, l = fig.L.value(), s = fig.S.value(), offset = fig.offset.value();
    const rows = tileKinds(fig.data.tiles, l, s, fig.bq.value(), fig.bk.value(), offset);
    const c = G / Math.max(rows.length, rows[0].length);
    grid.replaceChildren();
    rows.forEach((row, i) => [...row].forEach((kind, j) => {
      A.svg("rect", {x: 30 + j * c, y: 4 + i * c, width: c, height: c,
                     class: "attn-tile attn-tile-" + kind}, grid);
    }));
    // Where the mask cuts: query i sees key j when j <= i + offset, a line of slope 1 through
    // the grid in units of single queries and keys, drawn where it crosses the grid.
    const bq = fig.bq.value(), bk = fig.bk.value(), ex = c / bk, ey = c / bq;
    const y0 = Math.max(0, -(offset + 1)), y1 = Math.min(l, s - offset - 1);
    if (y1 > y0) {
      A.svg("line", {x1: 30 + (y0 + offset + 1) * ex, y1: 4 + y0 * ey, x2: 30 + (y1 + offset + 1) * ex,
                     y2: 4 + y1 * ey, class: "attn-cut"}, grid);
    }
    A.label(grid, 30, 4 + rows.length * c + 16, "key tiles →");  // under the grid, however many rows
    A.label(grid, 12, 4, "query tiles →", "start", {transform: "rotate(90 12 4)"});
    const all = rows.join(""), count = (k) => [...all].filter((x) => x === k).length;
    const named = offset === 0 && s === l ? "top-left and bottom-right" : offset === 0 ? "top-left"
      : offset === s - l ? "bottom-right" : "neither";
    rt.alignment.set(named, named);
    rt.computed.set(count("F") + count("M"), (count("F") + count("M")) + " of " + all.length);
    rt.masked.set(count("M"), String(count("M")));
    rt.skipped.set(count("S"), String(count("S")));
    rt.kinds.set(rows.join("/"), "solid: computed without a mask, faded: masked inside, outlined: skipped");
  }

  function controls(root, data, fig, reset) {
    const range = (a, b) => Array.from({length: b - a + 1}, (_, i) => a + i);
    const box = A.el("div", {class: "attn-controls"}, root);
    const last = data.lengths[data.lengths.length - 1];
    const tiles = () => drawTiles(fig);  // the queries, block_q and the offset leave the row alone
    // The offsets from -L (no query sees a key) to S - 1 (every query sees every key): beyond
    // them the mask is the same as at the end.
    const offsets = () => range(-fig.L.value(), fig.S.value() - 1);
    const lengths = (then) => () => { fig.offset.setValues(offsets()); then(); };
    fig.L = A.slider(box, "L", "queries L", data.lengths, last, String, lengths(tiles));
    fig.S = A.slider(box, "S", "keys S", data.lengths, last, String, lengths(reset));
    fig.bq = A.slider(box, "block_q", "block_q", data.blocks, data.blocks[0], String, tiles);
    fig.bk = A.slider(box, "block_k", "block_k", data.blocks, data.blocks[0], String, reset);
    const signed = (o) => (o > 0 ? "+" : o < 0 ? "−" : "") + Math.abs(o);
    fig.offset = A.slider(box, "offset", "causal offset", offsets(), 0, signed, tiles);
    const buttons = A.el("div", {class: "attn-control attn-buttons"}, box);
    fig.next = A.el("button", {type: "button", "data-key": "next"}, buttons, "next block");
    A.el("button", {type: "button", "data-key": "reset"}, buttons, "start again")
      .addEventListener("click", reset);
  }

  AttnFig.register("online", function (root, data) {
    const fig = {data: data};
    const reset = () => {
      fig.state = {t: 0, m: -Infinity, ell: 0, alpha: NaN, maxes: []};
      drawRow(fig);
      drawTiles(fig);
    };
    controls(root, data, fig, reset);
    fig.next.addEventListener("click", () => {
      readBlock(fig.state, data.row, fig.S.value(), fig.bk.value());
      drawRow(fig);
    });
    fig.plot = A.svg("svg", {viewBox: `0 0 ${W} ${H}`, class: "attn-plot", "aria-hidden": "true"}, root);
    const outs = A.el("div", {class: "attn-readouts"}, root);
    fig.rd = {
      t: A.readout(outs, "t", "blocks read"), m: A.readout(outs, "m", "running max m ="),
      ell: A.readout(outs, "ell", "running sum ℓ ="), lse: A.readout(outs, "lse", "m + log ℓ ="),
      alpha: A.readout(outs, "alpha", "last rescale e^(m_old − m) ="),
    };
    fig.grid = A.svg("svg", {viewBox: `0 0 ${G + 40} ${G + 30}`, class: "attn-plot attn-grid",
                             "aria-hidden": "true"}, root);
    const outs2 = A.el("div", {class: "attn-readouts"}, root);
    fig.rt = Object.fromEntries([["alignment", "alignment:"],
                                 ["computed", "tiles computed:"],
                                 ["masked", "of them masked inside:"], ["skipped", "skipped:"],
                                 ["kinds", "schedule"]].map(([k, l]) => [k, A.readout(outs2, k, l)]));
    reset();
  });
}
