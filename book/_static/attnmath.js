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

// A page with mathematics is shown once MathJax has typeset it, so that the text does not jump
// when the TeX source turns into formulas: attnmath.css hides the article meanwhile (for 3 s at
// most, should MathJax never finish). A page with hundreds of formulas (marked by
// book/_ext/attnmath_html.py; none today) is shown at once and typeset while the reader reads.
if (window.MathJax) {
  if (!document.querySelector('meta[name="attnmath-typeset"][content="progressive"]')) {
    document.documentElement.classList.add("attnmath-typesetting");
  }
  document.addEventListener("DOMContentLoaded", () => {
    const reveal = () => {
      attnmathMarkWide();
      document.documentElement.classList.remove("attnmath-typesetting");
    };
    const startup = window.MathJax && MathJax.startup;
    if (startup && startup.promise) startup.promise.then(reveal, reveal);
    else reveal();
  });
  window.addEventListener("resize", attnmathMarkWide);
}
