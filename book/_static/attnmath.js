// This script runs in the page's head, after MathJax's configuration.

// An inline formula wider than its line (on a phone) scrolls by itself instead of being cut
// off; narrower ones keep their ordinary place on the text's baseline. See attnmath.css.
const attnmathMarkWide = () => {
  document.querySelectorAll("mjx-container:not([display])").forEach((math) => {
    const block = math.parentElement.closest("p, li, dd, dt, td, th, div, figcaption");
    const line = block ? block.clientWidth : window.innerWidth;
    math.classList.remove("attnmath-wide");
    math.classList.toggle("attnmath-wide", math.getBoundingClientRect().width > line);
  });
};

// A code block wider than its column scrolls sideways (attnmath.css): mark it, so that a shadow
// on its right edge says so until the reader has scrolled to the end.
const attnmathMarkScrolling = () => {
  document.querySelectorAll(".bd-article pre").forEach((pre) => {
    const scrolls = pre.scrollWidth > pre.clientWidth + 1;
    pre.classList.toggle("attnmath-scrolls", scrolls);
    if (scrolls && !pre.dataset.attnmathWatched) {
      pre.dataset.attnmathWatched = "1";
      pre.addEventListener("scroll", () => pre.classList.toggle("attnmath-scrolled-end",
        pre.scrollLeft + pre.clientWidth >= pre.scrollWidth - 1), { passive: true });
    }
  });
};

// The text is never hidden while mathematics is typeset. The book's formulas are typeset when the
// book is built (book/_ext/attnmath_mathjax.py), so most pages load no MathJax at all; where
// MathJax runs in the browser (a build without Node.js, or TeX in a cell's output), the text is
// shown at once and the formulas are marked when MathJax is done.
document.addEventListener("DOMContentLoaded", () => {
  attnmathMarkWide();
  attnmathMarkScrolling();
  const startup = window.MathJax && MathJax.startup;
  if (startup && startup.promise) startup.promise.then(attnmathMarkWide, attnmathMarkWide);
});
window.addEventListener("resize", () => { attnmathMarkWide(); attnmathMarkScrolling(); });
