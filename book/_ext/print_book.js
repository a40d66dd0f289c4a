/* The book laid out as pages by paged.js, in the blank page that make_pdf.py serves.
 *
 * attnmathPrintBook(book) fetches every printed page of the HTML build in reading order, puts
 * their articles one after the other behind a title page and a table of contents, and lets
 * paged.js (a CSS paged-media engine) lay them out with print_book.css: page numbers and running
 * heads in the page margins, contents numbered by target-counter(), each chapter from a new
 * page. Chromium then prints the laid-out pages (make_pdf.py).
 *
 * book: {title, author, year, licence, css, parts: [{caption, docs}], omitted: {doc: doc}, unprinted}.
 * Pages named in `omitted` are not printed; links to them lead to the page they map to; what
 * the selector `unprinted` finds is left out of every page.
 */
(function () {
  'use strict';

  const key = (doc) => doc.replace(/[^A-Za-z0-9_-]/g, '-');
  const at = (doc) => new URL('/' + doc + '.html', location.origin);

  async function fetchPage(doc) {
    const url = at(doc);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    const page = new DOMParser().parseFromString(await response.text(), 'text/html');
    const article = page.querySelector('article.bd-article');
    if (!article) throw new Error(`${url}: no article`);
    return {doc, url, page, article};
  }

  // The page's stylesheets (the theme's, pygments', MathJax's) join the blank page's head once.
  function adoptStyles(part, seen) {
    part.page.querySelectorAll('link[rel=stylesheet]').forEach((link) => {
      const href = new URL(link.getAttribute('href'), part.url).href;
      if (seen.has(href)) return;
      seen.add(href);
      const copy = document.createElement('link');
      copy.rel = 'stylesheet';
      copy.href = href;
      document.head.appendChild(copy);
    });
  }

  // Ids get the page's key as prefix ("book-03_gradients--x"); a link to a printed page becomes
  // a link within the book, a link to an omitted page a link to the page that stands for it, and
  // other links absolute URLs.
  function relink(part, byPath) {
    const prefix = key(part.doc) + '--';
    part.article.querySelectorAll('[id]').forEach((e) => { e.id = prefix + e.id; });
    part.article.querySelectorAll('[src]').forEach((e) => {
      e.src = new URL(e.getAttribute('src'), part.url).href;
    });
    part.article.querySelectorAll('img[loading]').forEach((e) => { e.loading = 'eager'; });
    part.article.querySelectorAll('a[href]').forEach((a) => {
      const target = new URL(a.getAttribute('href'), part.url);
      const found = target.origin === location.origin ? byPath.get(target.pathname) : undefined;
      if (found === undefined) a.href = target.href;
      else if (found.omitted) a.href = '#' + found.key;
      else a.href = '#' + found.key + (target.hash ? '--' + decodeURIComponent(target.hash.slice(1)) : '');
    });
  }

  // What a reader of paper cannot use (make_pdf.UNPRINTED: permalinks, copy buttons, folded cells).
  function tidy(article, unprinted) {
    article.querySelectorAll(unprinted).forEach((e) => e.remove());
  }

  // A heading's text for the running head: a formula counts once, by the text of its MathML,
  // not as its drawing and its spoken form both.
  function plainTitle(h1) {
    const copy = h1.cloneNode(true);
    copy.querySelectorAll('mjx-container').forEach((m) => {
      const mathml = m.querySelector('mjx-assistive-mml math');
      m.replaceWith(document.createTextNode(mathml ? mathml.textContent : ''));
    });
    return copy.textContent.replace(/\s+/g, ' ').trim();
  }

  // Chromium names a bookmark by the heading's text, which leaves out MathJax's drawn glyphs: a
  // formula in a heading that is a single symbol ("Top-$K$ routing") is set as that symbol in
  // text, italic for a variable, so that its bookmark reads as the heading does.
  function symbolsAsText(article) {
    article.querySelectorAll('h1, h2, h3, h4, h5, h6').forEach((h) => {
      h.querySelectorAll('mjx-container').forEach((m) => {
        const math = m.querySelector('mjx-assistive-mml math');
        const tokens = math ? Array.from(math.querySelectorAll('*')) : [];
        if (tokens.length !== 1 || !/^(mi|mn|mo)$/.test(tokens[0].localName)) return;
        const symbol = element(tokens[0].localName === 'mi' ? 'i' : 'span', '', tokens[0].textContent);
        m.replaceWith(symbol);
      });
    });
  }

  // Chromium names a bookmark by the text of its heading's lines and drops the space at which
  // a heading wraps ("the 1/√Dscaling"). A heading's spaces are no-break spaces, each followed
  // by a place where the line may break (<wbr>): it wraps where it did, and the space stays.
  function spacesKept(article) {
    article.querySelectorAll('h1, h2, h3, h4, h5, h6').forEach((h) => {
      const texts = document.createTreeWalker(h, NodeFilter.SHOW_TEXT, {
        acceptNode: (t) => (t.parentElement.closest('mjx-container') ? NodeFilter.FILTER_REJECT
          : NodeFilter.FILTER_ACCEPT)});
      const found = [];
      while (texts.nextNode()) found.push(texts.currentNode);
      found.filter((t) => /\s/.test(t.data)).forEach((t) => {
        const pieces = t.data.split(/\s+/);
        t.replaceWith(...pieces.flatMap((piece, i) => (i ? ['\u00a0', element('wbr'), piece] : [piece]))
          .filter((piece) => piece !== ''));
      });
    });
  }

  // paged.js splits a listing between pages inside its text and there loses line ends; with one
  // block per line it breaks between lines, which keep their highlighting.
  function linesAsBlocks(pre) {
    const lines = [[]];
    for (const node of Array.from(pre.childNodes)) {
      node.textContent.split('\n').forEach((piece, i) => {
        if (i > 0) lines.push([]);
        if (!piece) return;
        const copy = node.nodeType === Node.ELEMENT_NODE ? node.cloneNode(false)
          : document.createTextNode('');
        copy.textContent = piece;
        lines[lines.length - 1].push(copy);
      });
    }
    if (lines.length > 1 && !lines[lines.length - 1].length) lines.pop();
    pre.replaceChildren(...lines.map((nodes) => {
      const line = element('span', 'attnmath-line');
      line.append(...nodes);
      return line;
    }));
  }

  function chapter(part) {
    const section = document.createElement('section');
    section.className = 'attnmath-chapter';
    section.id = key(part.doc);
    const article = document.createElement('article');
    article.className = 'bd-article';
    article.append(...part.article.childNodes);
    section.append(article);
    symbolsAsText(article);
    spacesKept(article);
    article.querySelectorAll('pre').forEach(linesAsBlocks);
    const h1 = article.querySelector('h1');
    if (h1) h1.dataset.runningHead = plainTitle(h1);
    return section;
  }

  function element(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function titlePage(book) {
    const section = element('section', 'attnmath-title');
    section.append(element('p', 'attnmath-title-name', book.title),
                   element('p', 'attnmath-title-author', book.author),
                   element('p', 'attnmath-title-year', book.year),
                   element('p', 'attnmath-title-licence', book.licence));
    return section;
  }

  // One entry per printed page under its part's caption; print_book.css adds the page number of
  // the entry's target (target-counter) after a dotted leader.
  function contents(book, chapters) {
    const section = element('section', 'attnmath-contents');
    section.append(element('h1', '', 'Contents'));
    for (const part of book.parts) {
      const printed = part.docs.filter((doc) => chapters.has(doc));
      if (!printed.length) continue;
      if (part.caption) section.append(element('p', 'attnmath-contents-part', part.caption));
      const list = element('ol', 'attnmath-contents-list');
      for (const doc of printed) {
        const link = element('a', '', chapters.get(doc));
        link.href = '#' + key(doc);
        const item = element('li');
        item.append(link);
        list.append(item);
      }
      section.append(list);
    }
    return section;
  }

  // The theme keeps every code box, admonition and table in one piece; paged.js cannot lay out
  // one taller than a page, and drops the rest of its chapter. Here only what is at most a
  // quarter of a page high, measured in a column of the printed width, is kept in one piece, so
  // that one that does not fit leaves at most that much of a page empty; a figure, with its
  // caption, is kept whole if it fits a page, and floats (FloatingFigures). Returns the book as
  // the fragment that paged.js lays out.
  const KEPT = 'div.highlight, div.cell_output, .admonition, div.proof, figure, table, div.math,'
    + ' mjx-container[display="true"], dl';
  function keepShortTogether(source) {
    const probe = element('div', 'attnmath-probe');
    probe.style.cssText = 'position:absolute;left:0;top:0;width:170mm;visibility:hidden';
    document.body.append(probe);
    probe.append(source);
    source.querySelectorAll('table').forEach(fixColumns);
    source.querySelectorAll(KEPT).forEach((e) => {
      const limit = e.matches('figure') ? mm(253) * 0.95 : mm(253) / 4;
      if (e.getBoundingClientRect().height <= limit) e.classList.add('attnmath-keep');
    });
    probe.remove();
    // paged.js takes the children of a fragment as the flow (an element as parent would be
    // copied, without its reference, onto pages and confuse its search for the overflow).
    const flow = document.createDocumentFragment();
    flow.append(...source.childNodes);
    return flow;
  }

  // paged.js lays out each page's part of a table as a table of its own, whose columns take
  // the widths that part's cells ask for: a row too tall for the foot of one page (its long
  // cell in a narrow column) is short on the next, and the columns jump from page to page. The
  // widths the whole table takes, measured in the printed column, are set on it instead.
  function fixColumns(table) {
    if (table.querySelector('colgroup')) return;
    const row = Array.from(table.rows).reduce((a, r) => (r.cells.length > a.cells.length ? r : a));
    if (!row || Array.from(row.cells).some((c) => c.colSpan > 1)) return;
    const widths = Array.from(row.cells).map((c) => c.getBoundingClientRect().width);
    const columns = document.createElement('colgroup');
    widths.forEach((w) => {
      const col = document.createElement('col');
      col.style.width = `${w}px`;
      columns.append(col);
    });
    table.prepend(columns);
    table.style.width = `${table.getBoundingClientRect().width}px`;
    table.style.tableLayout = 'fixed';
  }

  function mm(length) {
    return length * 96 / 25.4;
  }

  const emptyPiece = (box) => !box.textContent.trim()
    && !box.querySelector('img, svg, canvas, mjx-container');

  // A box that a page break splits before its first line leaves an empty piece (its border and
  // padding) at the foot of one page or the head of the next; such pieces are not printed.
  class EmptyPieces extends Paged.Handler {
    afterRendered(pages) {
      pages.forEach((page) => {
        page.element.querySelectorAll('[data-split-to], [data-split-from]').forEach((piece) => {
          if (emptyPiece(piece)) piece.style.display = 'none';
        });
      });
    }
  }
  Paged.registerHandlers(EmptyPieces);

  // paged.js looks for a page's overflow each time it has added about as many characters as the
  // last pages held, but its pages share one settings object that keeps the first such figure
  // for good: the title page's few words. Every page was then measured every line or so (twice
  // the CPU), and a display formula cut by such a check was lost from the page. Forgetting the
  // figure before each page lets paged.js use its running average, as it means to.
  class CharsPerPage extends Paged.Handler {
    beforePageLayout() {
      this.chunker.settings.maxChars = undefined;
    }
  }
  Paged.registerHandlers(CharsPerPage);

  // Every page that paged.js adds stays in the document, and each measurement it takes on the
  // page it is laying out made Chromium lay out and restyle all the pages before it as well:
  // the later pages cost several times the first (a third of the print's CPU). A page is done
  // once the page after it is laid out (paged.js marks where a box split on the page before),
  // so the pages before that are out of the layout (display: none) until all are laid out; what
  // paged.js reads of them later (their counters, their text) does not need their layout.
  class DonePagesAside extends Paged.Handler {
    beforePageLayout(page, contents, breakToken, chunker) {
      chunker.pages.slice(0, -2).forEach((done) => { done.element.style.display = 'none'; });
    }

    afterRendered(pages) {
      pages.forEach((page) => page.element.style.removeProperty('display'));
    }
  }
  Paged.registerHandlers(DonePagesAside);

  // paged.js lays a page out as the first column of a multi-column box; what does not fit runs
  // on into the next column, off the paper, and paged.js moves what it finds there to the next
  // page. A line of a listing that it left there was lost: the page ended with the line before
  // it and the next page began with the line after it (chapter 4 printed `lengths = [4, 2, 5]`,
  // then on the next page the print after `pad = padding_mask(...)`); a table row it left across
  // the page's foot was cut off there, and the next page began with the row after it. Once a
  // page is laid out, the first line or row (not the page's first) that has a box beyond the
  // page's right edge or foot is taken off the page with all after it, and the next page begins
  // with it.
  const WHOLE = '.attnmath-line, tr';
  function beyond(element, area) {
    return Array.from(element.getClientRects()).some((box) => box.height > 0
      && (box.left >= area.right || (box.bottom > area.bottom + 1 && box.top > area.top + 1)));
  }
  class NothingOffThePage extends Paged.Handler {
    afterPageLayout(pageElement, page, breakToken, chunker) {
      if (!breakToken) return;
      const area = page.area.getBoundingClientRect();
      const first = Array.from(page.wrapper.querySelectorAll(WHOLE)).find((e) => beyond(e, area));
      const from = first && chunker.source.querySelector(`[data-ref="${first.dataset.ref}"]`);
      if (!from) return;
      const rest = document.createRange();
      rest.setStartBefore(first);
      rest.setEndAfter(page.wrapper.lastChild);
      const left = rest.startContainer;
      rest.deleteContents();
      breakToken.node = from;
      breakToken.offset = 0;
      for (let box = left; box && box !== page.wrapper; box = box.parentElement) {
        if (emptyPiece(box)) box.style.display = 'none';
      }
    }
  }
  Paged.registerHandlers(NothingOffThePage);

  // A figure that does not fit in what is left of a page goes to the next one and would leave
  // that space empty. As printed books float their figures, a figure at which a page ends with
  // more than FLOAT_BLANK of it empty moves after the paragraph that follows it (a list, a
  // display formula or a code cell without a figure too; at the end of its section, after the
  // next section's heading and first block), and the page is laid out again, up to FLOAT_MOVES
  // times: the text fills the page, and the figure, with its number and caption, heads the
  // next.
  const FLOAT_BLANK = 0.25;
  const FLOAT_MOVES = 4;
  const FLOWING = 'p, ul, ol, dl, div.math, blockquote, div.cell:not(:has(figure, img))';

  // The figure that starts at `node` (a node of the source), or that holds it, if one does.
  function figureAt(node) {
    const e = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
    let first = e && (e.closest('figure') || e);
    while (first && !first.matches('figure')) first = first.firstElementChild;
    return first;
  }

  // What the figure may move after: the block that follows it, or its cell, if it flows.
  function followingText(figure) {
    const after = (e) => {
      let next = e.nextElementSibling;
      while (next && next.matches('script, style')) next = next.nextElementSibling;
      return next;
    };
    let at = figure;
    while (!after(at) && at.parentElement
           && !at.parentElement.matches('article, .attnmath-chapter')) at = at.parentElement;
    let next = after(at);
    if (next && next.matches('section')) {  // the next section's first block, under its heading
      next = Array.from(next.children).find((e) => !e.matches('h1, h2, h3, h4, h5, h6, span, script, style'));
      return next && next.matches(FLOWING + ', .admonition') ? next : null;
    }
    return next && next.matches(FLOWING) ? next : null;
  }

  // The share of the page's text area under the last thing laid out on it.
  function emptyShare(page) {
    const area = page.area.getBoundingClientRect();
    const laidOut = document.createRange();
    laidOut.selectNodeContents(page.wrapper);
    const bottom = Math.max(area.top, laidOut.getBoundingClientRect().bottom);
    return (area.bottom - bottom) / area.height;
  }

  class FloatingFigures extends Paged.Handler {
    beforePageLayout(page) {
      const layout = page.layout.bind(page);
      page.layout = async (contents, start, maxChars) => {
        let end = await layout(contents, start, maxChars);
        for (let moves = 0; moves < FLOAT_MOVES && end && end.node; moves++) {
          const figure = figureAt(end.node);
          const next = figure && !(start && figure.contains(start.node)) && followingText(figure);
          if (!next || emptyShare(page) <= FLOAT_BLANK) break;
          next.after(figure);
          end = await layout(contents, start, maxChars);
        }
        return end;
      };
    }
  }
  Paged.registerHandlers(FloatingFigures);

  // paged.js reports an element it cannot place on any page and goes on without the rest of its
  // chapter; a book with a gap is not printed.
  async function paginate(source, css) {
    const lost = [];
    const warn = console.warn;
    console.warn = (...args) => {
      if (String(args[0]).startsWith('Unable to layout item')) {
        const node = args[1];
        lost.push(node && node.outerHTML ? node.outerHTML.slice(0, 200) : String(node));
      }
      warn.apply(console, args);
    };
    try {
      const flow = await new Paged.Previewer().preview(source, [css], document.body);
      if (lost.length) {
        throw new Error(`paged.js could not place ${lost.length} element(s): ${lost.join(' | ')}`);
      }
      return flow.total;
    } finally {
      console.warn = warn;
    }
  }

  window.attnmathPrintBook = async function (book) {
    const docs = book.parts.flatMap((part) => part.docs);
    const byPath = new Map(docs.map((d) => [at(d).pathname, {key: key(d), omitted: false}]));
    for (const [doc, standsFor] of Object.entries(book.omitted)) {
      byPath.set(at(doc).pathname, {key: key(standsFor), omitted: true});
    }
    const printed = docs.filter((doc) => !(doc in book.omitted));
    const parts = await Promise.all(printed.map(fetchPage));
    const seen = new Set();
    const chapters = new Map();
    const sections = parts.map((part) => {
      adoptStyles(part, seen);
      relink(part, byPath);
      tidy(part.article, book.unprinted);
      const section = chapter(part);
      const h1 = section.querySelector('h1');
      chapters.set(part.doc, h1 ? h1.dataset.runningHead : part.doc);
      return section;
    });
    const source = document.createElement('div');
    source.append(titlePage(book), contents(book, chapters), ...sections);
    if (document.fonts) await document.fonts.ready;
    const total = await paginate(keepShortTogether(source), book.css);
    await Promise.all(Array.from(document.images).map((img) => img.complete ? null :
      new Promise((done) => { img.onload = img.onerror = done; })));
    return total;
  };
})();
