/* The filter of the claims appendix (book/claims.md).
 *
 * book/_ext/attnmath_claims.py writes the form (hidden until this script runs) and gives every
 * row its chapter, verdict and source as classes: claim-chapter-01_softmax,
 * claim-verdict-corrected, claim-source-textbook-chapter. Choosing in a menu shows the rows that
 * match all three choices, hides the chapters left without a row, says how many rows are shown
 * (read out by screen readers) and keeps the choice in the page's address (?verdict=corrected),
 * so a filtered view can be linked to. "Show all" clears it. Nothing is fetched.
 */
(function () {
  'use strict';
  const KEYS = ['chapter', 'verdict', 'source'];

  function choice(form) {
    const chosen = {};
    KEYS.forEach((key) => { chosen[key] = form.elements[key].value; });
    return chosen;
  }

  function matches(row, chosen) {
    return KEYS.every((key) => !chosen[key] || row.classList.contains(`claim-${key}-${chosen[key]}`));
  }

  function apply(form) {
    const chosen = choice(form);
    const filtering = KEYS.some((key) => chosen[key]);
    let shown = 0;
    let total = 0;
    document.querySelectorAll('div.claims-chapter').forEach((box) => {
      let here = 0;
      box.querySelectorAll('tr.claim-row').forEach((row) => {
        const show = matches(row, chosen);
        row.hidden = !show;
        total += 1;
        here += show ? 1 : 0;
      });
      box.querySelectorAll('table.claims-table').forEach((table) => {
        const holder = table.closest('.pst-scrollable-table-container') || table;
        holder.hidden = !table.querySelector('tr.claim-row:not([hidden])');
      });
      const section = box.closest('section');
      if (section) section.hidden = filtering && here === 0;
      shown += here;
    });
    form.querySelector('output').textContent = filtering
      ? `${shown} of ${total} rows shown` : `${total} rows`;
    const params = new URLSearchParams(window.location.search);
    KEYS.forEach((key) => (chosen[key] ? params.set(key, chosen[key]) : params.delete(key)));
    const query = params.toString();
    window.history.replaceState(null, '', window.location.pathname + (query ? `?${query}` : '')
      + window.location.hash);
  }

  function start() {
    const form = document.querySelector('form.claims-filter');
    if (!form) return;
    const params = new URLSearchParams(window.location.search);
    KEYS.forEach((key) => {
      const menu = form.elements[key];
      const wanted = params.get(key);
      if (wanted && Array.from(menu.options).some((o) => o.value === wanted)) menu.value = wanted;
    });
    form.hidden = false;
    form.addEventListener('change', () => apply(form));
    form.addEventListener('submit', (event) => event.preventDefault());
    // The reset event comes before the menus are reset: apply the filter once they are.
    form.addEventListener('reset', () => window.setTimeout(() => apply(form), 0));
    apply(form);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
