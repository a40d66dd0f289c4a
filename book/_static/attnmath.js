// An inline formula wider than its line (on a phone) scrolls by itself instead of being cut
// off; narrower ones keep their ordinary place on the text's baseline. See attnmath.css.
window.addEventListener("load", () => {
  const mark = () => {
    document.querySelectorAll("mjx-container:not([display])").forEach((math) => {
      const block = math.parentElement.closest("p, li, dd, dt, td, th, div, figcaption");
      const line = block ? block.clientWidth : window.innerWidth;
      math.classList.remove("attnmath-wide");
      math.classList.toggle("attnmath-wide", math.getBoundingClientRect().width > line);
    });
  };
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(mark);
  }
  window.addEventListener("resize", mark);
});
