// Typesets TeX formulas with MathJax's own server-side package (npm "mathjax-full", the
// version in package.json): the book's when it is built (book/_ext/attnmath_mathjax.py), so that
// a page's mathematics is in its HTML at first paint, and the task text of attngrade's feedback
// pages, so that a page sent alone shows its formulas without MathJax.
//
// Called by lib/mathjax_node (run_mathjax): reads one JSON object on stdin,
//   {"macros": {"R": "\\mathbb{R}", ...}, "fontURL": "...", "formulas": [[tex, display], ...]}
// and writes one JSON object on stdout,
//   {"html": [CommonHTML markup of each formula, or null], "errors": [message or null],
//    "css": the stylesheet for every character used}.
// The TeX packages are those the book's client-side MathJax loads (input/tex with autoload),
// without noundefined's red text: an undefined macro is an error here too.
"use strict";

const { mathjax } = require("mathjax-full/js/mathjax.js");
const { TeX } = require("mathjax-full/js/input/tex.js");
const { CHTML } = require("mathjax-full/js/output/chtml.js");
const { liteAdaptor } = require("mathjax-full/js/adaptors/liteAdaptor.js");
const { RegisterHTMLHandler } = require("mathjax-full/js/handlers/html.js");
const { AssistiveMmlHandler } = require("mathjax-full/js/a11y/assistive-mml.js");
const { AllPackages } = require("mathjax-full/js/input/tex/AllPackages.js");

const LEFT_OUT = new Set(["autoload", "require", "noundefined", "noerrors", "physics"]);

function typeset(request) {
  const adaptor = liteAdaptor();
  AssistiveMmlHandler(RegisterHTMLHandler(adaptor));
  const tex = new TeX({
    packages: AllPackages.filter((name) => !LEFT_OUT.has(name)),
    macros: request.macros || {},
    formatError: (jax, err) => { throw err; },
  });
  const chtml = new CHTML({ fontURL: request.fontURL, adaptiveCSS: true });
  const doc = mathjax.document("", { InputJax: tex, OutputJax: chtml });
  const html = [];
  const errors = [];
  for (const [source, display] of request.formulas) {
    try {
      const node = doc.convert(source, { display: Boolean(display) });
      html.push(adaptor.outerHTML(node));
      errors.push(null);
    } catch (err) {
      html.push(null);
      errors.push(String(err && err.message ? err.message : err));
    }
  }
  return { html, errors, css: adaptor.textContent(chtml.styleSheet(doc)) };
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  process.stdout.write(JSON.stringify(typeset(JSON.parse(input))));
});
