// The search page's scorer (Sphinx's html_search_scorer, loaded before searchtools.js): Sphinx's
// own weights, with the chapters before the back matter and the section named by the query first.
//
// Sphinx scores a glossary term matched by the query as an index entry (100 for an exact match),
// far above a chapter whose section title holds it (about 15), so "online softmax" found the
// glossary first. A result on a page of the course's text (a numbered chapter or the closing
// chapter) gains CHAPTER_BOOST, more than a match on another page scores, so the chapters come
// first. Among them, a result whose title (the page's, or "page > section") holds the whole query
// gains TITLE_BOOST: "online softmax" finds the section "The online softmax" before chapter 1,
// which is about softmax and mentions the online one.
const CHAPTER_BOOST = 200;
const TITLE_BOOST = 50;
const CHAPTER_PAGE = /^book\/(\d\d_[a-z_]+|closing)$/;

const attnmathQuery = () =>
  (new URLSearchParams(window.location.search).get("q") || "").toLowerCase().trim();

var Scorer = {
  score: (result) => {
    const [docname, title, , , score] = result;
    const query = attnmathQuery();
    let boost = CHAPTER_PAGE.test(docname) ? CHAPTER_BOOST : 0;
    if (query && (title || "").toLowerCase().includes(query)) boost += TITLE_BOOST;
    return score + boost;
  },
  // Sphinx's weights (sphinx/themes/basic/static/searchtools.js), unchanged.
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
