/* Shared pieces of the interactive figures (book/_ext/attnmath_interactive.py): sliders with
   spoken values, read-outs that keep the exact number they show, and SVG helpers. Each figure's
   script calls AttnFig.register(name, draw); draw(root, data, ui) runs once per block. */
"use strict";
{
  const SVG = "http://www.w3.org/2000/svg";
  const figures = {};
  let uid = 0;

  function el(tag, attrs, parent, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  function svg(tag, attrs, parent) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }

  /* A native range input (arrow keys work) over the values `values`, with a label, a visible
     value and aria-valuetext; onChange(value) runs on every move. setValues(values) gives it
     other values and keeps its value, or takes the nearest. */
  function slider(parent, key, label, values, start, format, onChange) {
    const id = "attn-" + key + "-" + (++uid);
    const box = el("div", {class: "attn-control"}, parent);
    el("label", {for: id}, box, label);
    const input = el("input", {type: "range", id: id, min: 0, max: values.length - 1, step: 1,
                               value: Math.max(0, values.indexOf(start)), "data-key": key}, box);
    const shown = el("output", {for: id}, box);
    const show = () => {
      const value = values[Number(input.value)];
      const text = format(value);
      shown.textContent = text;
      input.setAttribute("aria-valuetext", text);
      input.dataset.value = String(value);
      return value;
    };
    show();
    input.addEventListener("input", () => onChange(show()));
    const setValues = (next) => {
      const now = values[Number(input.value)];
      const nearest = next.reduce((a, v) => (Math.abs(v - now) < Math.abs(a - now) ? v : a));
      values = next;
      input.max = String(values.length - 1);
      input.value = String(values.indexOf(nearest));
      show();
    };
    return {input: input, value: () => values[Number(input.value)], setValues: setValues};
  }

  /* SVG text in the small type at (x, y); anchor: "start", "middle" or "end". */
  function label(parent, x, y, text, anchor, extra) {
    const attrs = {x: x, y: y, class: "attn-small", "text-anchor": anchor || "start"};
    const node = svg("text", Object.assign(attrs, extra || {}), parent);
    node.textContent = text;
    return node;
  }

  /* A group of radio buttons; onChange(value) on every change. */
  function choice(parent, key, label, options, start, onChange) {
    const box = el("fieldset", {class: "attn-control attn-choice", "data-key": key}, parent);
    el("legend", {}, box, label);
    const name = "attn-" + key + "-" + (++uid);
    const inputs = options.map(([value, text]) => {
      const lab = el("label", {}, box);
      const input = el("input", {type: "radio", name: name, value: value}, lab);
      lab.appendChild(document.createTextNode(" " + text));
      input.checked = value === start;
      input.addEventListener("change", () => onChange(value));
      return input;
    });
    return {value: () => inputs.find((i) => i.checked).value};
  }

  /* A labelled read-out: set(value, text) shows text and keeps value in data-value. */
  function readout(parent, key, label) {
    const box = el("div", {class: "attn-readout"}, parent);
    el("span", {class: "attn-readout-label"}, box, label + " ");
    const value = el("span", {class: "attn-readout-value", "data-key": key}, box);
    return {set: (v, text) => { value.dataset.value = String(v); value.textContent = text; }};
  }

  /* x to `digits` significant digits, trailing zeros dropped; small and large as a·10ⁿ. */
  function fmt(x, digits) {
    if (!isFinite(x)) return x > 0 ? "∞" : x < 0 ? "−∞" : "NaN";
    const strip = (t) => t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t;
    let s = x.toPrecision(digits);
    if (x !== 0 && Math.abs(x) < 1e-3) s = x.toExponential(digits - 1);
    if (!s.includes("e")) return strip(s).replace("-", "−");
    const [m, e] = s.split("e");
    return strip(m).replace("-", "−") + "·10" +
      String(Number(e)).replace("-", "⁻").replace(/\d/g, (d) => "⁰¹²³⁴⁵⁶⁷⁸⁹"[Number(d)]);
  }

  /* Linear or log scale from [lo, hi] to [a, b]. */
  function scale(lo, hi, a, b, log) {
    const f = log ? Math.log10 : (v) => v;
    const l = f(lo), h = f(hi);
    return (v) => a + (b - a) * (f(v) - l) / (h - l);
  }

  function start() {
    document.querySelectorAll(".attn-interactive[data-figure]").forEach((root) => {
      const draw = figures[root.dataset.figure];
      if (!draw || root.dataset.ready) return;
      const data = JSON.parse(root.querySelector("script.attn-data").textContent);
      draw(root, data);
      root.dataset.ready = "1";
    });
  }

  window.AttnFig = {
    el: el, svg: svg, label: label, slider: slider, choice: choice, readout: readout, fmt: fmt, scale: scale,
    register: (name, draw) => {
      figures[name] = draw;
      if (document.readyState !== "loading") start();
    },
  };
  document.addEventListener("DOMContentLoaded", start);
}
