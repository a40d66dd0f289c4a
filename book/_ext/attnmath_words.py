"""Absolute words in the chapters are earned: each use of "always", "never", "only", "nothing",
"all", "whole", "cannot" or "provable" in prose is backed by a theorem, a claim test, a citation
or a worked solution, or it is rewritten.

A use is found in the prose that ``attnmath_numbers`` reads (paragraphs, headings, captions, alt
text, the titles and bodies of theorems, exercises, solutions and admonitions); code, maths,
quotations of a source, comments, links, negated uses ("not only", "not always", "not all",
"not the only"), the idiom "in all" (a total), hedged
uses ("almost all", "nearly nothing") and hyphenated compounds ("all-ones") are not uses. A use is backed, in this order, by:

1. the theorem, proposition, lemma or corollary it stands in, or whose proof it stands in;
2. the exercise it stands in, or whose solution it stands in (``solution <label>``: the worked
   solution argues it);
3. a reference in its own sentence: ``{prf:ref}`` (the theorem) or ``{cite}`` (the work);
4. a claim test: the Correction or Clarification box it stands in is named by a claim marker
   (``box=``), or a statement of the book registered in ``tests/claims.py`` quotes the words of
   its sentence that it stands in (``quote=``);
5. an entry of :data:`LEDGER`, keyed by chapter and a piece of the sentence::

       - {file: book/04_masking.md, word: only, context: "depends only on", by: theorem prop-causal}

   where ``by`` is ``theorem <label>``, ``claim <test id or box label>``, ``cite <key>``,
   ``solution <exercise label>`` or ``definition <label>`` (an equation or section that defines
   what the sentence restates).

:func:`uses` lists every use with its backing (the appendix "Claims and errata" shows the list,
:class:`WordsTable`); the build warns about each unbacked use and each ledger entry that matches
no use (an error under ``-W``), and ``tests/book/test_words.py`` runs the same check without a build.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from attnmath_numbers import CHAPTER, ROOT, SENTENCE, _blank, _CODE, _COMMENT, _LINK, _MATH, \
    _QUOTE, _ROLE, prose_blocks, read_yaml

LEDGER = ROOT / "book" / "absolute_words.yml"
#: The pages checked besides the chapters.
OTHER_PAGES = ("book/glossary.md",)
WORDS = re.compile(r"(?<![\w-])(always|never|only|nothing|all|whole|cannot|provable|provably)(?![\w-])",
                   re.I)
#: Uses that are not absolute: "not only ... but", "in all" closing a clause (a total).
IDIOMS = re.compile(r"\bnot (?:only|always|all|the only)\b|\bin all(?=\s*(?:[.,;:)]|$))"
                    r"|\b(?:almost|nearly|virtually)\s+(?:all|nothing|never|always)\b", re.I)
THEOREMS = ("prf:theorem", "prf:proposition", "prf:lemma", "prf:corollary")
EXERCISES = ("exercise", "solution")
KINDS = ("theorem", "claim", "cite", "solution", "definition")
_PRF_REF = re.compile(r"\{prf:ref\}`(?:[^`<]*<)?([\w-]+)>?`")
_CITE_KEYS = re.compile(r"\{cite(?::\w+)?\}`([^`]+)`")


@dataclass(frozen=True)
class Use:
    """One absolute word in a page's prose, and what backs it (``None``: nothing)."""

    path: str
    line: int
    word: str
    sentence: str  # the sentence as written, on one line
    backing: str | None  # "theorem thm-x", "cite key", "claim tests/...::test", ...
    from_ledger: bool = False  # whether the ledger, not the text around the use, backs it

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: \"{self.word}\" is not backed by a theorem, claim test, " \
               f"citation or solution: {self.sentence[:120]}"


def pages(root: Path = ROOT) -> list[Path]:
    """The pages whose prose is checked: the chapters and :data:`OTHER_PAGES`."""
    chapters = [p for p in sorted((root / "book").glob("*.md"))
                if CHAPTER.match(p.relative_to(root).as_posix())]
    return chapters + [root / page for page in OTHER_PAGES]


def _paragraphs(source: str):
    """``(lines, blocks, theorem)``: each paragraph of prose as ``[(line number, text)]``, with
    the directives enclosing it and the label of the last theorem opened before it."""
    paragraph, current, theorem = [], None, None
    for number, text, kind, blocks in list(prose_blocks(source)) + [(0, "", "end", ())]:
        if paragraph and (kind != "prose" or not text.strip() or blocks != current):
            yield paragraph, current, theorem
            paragraph = []
        for block in blocks:
            if block.name in THEOREMS:
                theorem = block.label
        if kind == "prose" and text.strip():
            paragraph.append((number, text))
            current = blocks


def _words(sentence: str) -> list[tuple[int, str]]:
    """The absolute words of a sentence that count, with their positions."""
    text = sentence
    for pattern in (_COMMENT, _ROLE, _CODE, _LINK, _MATH, _QUOTE, IDIOMS):
        text = _blank(pattern, text)
    return [(m.start(), m.group(1).lower()) for m in WORDS.finditer(text)]


def source_uses(source: str, relative: str, ledger: list[dict] | None = None,
                claims: "ClaimIndex | None" = None) -> list[Use]:
    """Every use of an absolute word in a MyST source, with its backing."""
    ledger = load_ledger() if ledger is None else ledger
    claims = claim_index() if claims is None else claims
    found = []
    for paragraph, blocks, theorem in _paragraphs(source):
        joined = "\n".join(text for _, text in paragraph)
        starts = [0]
        for _, text in paragraph:
            starts.append(starts[-1] + len(text) + 1)
        for match in SENTENCE.finditer(joined):
            sentence = " ".join(match.group(0).split())
            # the same words in the same order, at their places in the source and in the sentence
            for (at, word), (where, _) in zip(_words(match.group(0)), _words(sentence)):
                row = max(i for i, s in enumerate(starts[:-1]) if s <= match.start() + at)
                backing = _backing(relative, word, sentence, where, blocks, theorem, claims)
                entry = None if backing else next((e for e in ledger if _matches(e, relative, word, sentence)), None)
                found.append(Use(relative, paragraph[row][0], word, sentence,
                                 entry["by"] if entry else backing, entry is not None))
    return found


def _backing(path, word, sentence, where, blocks, theorem, claims) -> str | None:
    """What in the text around a use backs it (items 1 to 4 of the module docstring), or ``None``."""
    names = [b.name for b in blocks]
    if any(n in THEOREMS for n in names) or "prf:proof" in names:
        label = next((b.label for b in reversed(blocks) if b.name in THEOREMS), None) or theorem
        if label:
            return f"theorem {label}"
    exercise = next((b.label for b in reversed(blocks) if b.name in EXERCISES and b.label), None)
    if exercise:
        return f"solution {exercise}"
    ref = _PRF_REF.search(sentence)
    if ref:
        return f"theorem {ref.group(1)}"
    cite = _CITE_KEYS.search(sentence)
    if cite:
        return f"cite {cite.group(1).split(',')[0].strip()}"
    box = next((b.label for b in reversed(blocks) if b.label in claims.boxes), None)
    if box:
        return f"claim {box}"
    quoted = claims.quoting(path, sentence, where)
    return f"claim {quoted}" if quoted else None


def _matches(entry: dict, path: str, word: str, sentence: str) -> bool:
    return entry["file"] == path and entry["word"] == word and \
        " ".join(entry["context"].split()) in sentence


@dataclass(frozen=True)
class ClaimIndex:
    """What the claim registry backs: the boxes its markers name, and the book's statements'
    quotations by chapter (``{chapter path: [(quote, test id)]}``)."""

    boxes: frozenset
    quotes: dict
    tests: frozenset

    def quoting(self, path: str, sentence: str, where: int) -> str | None:
        """The claim test whose quotation, in ``sentence``, covers the position ``where``."""
        for quote, test in self.quotes.get(path, ()):
            start = sentence.find(quote)
            while start >= 0:
                if start <= where < start + len(quote):
                    return test
                start = sentence.find(quote, start + 1)
        return None


def claim_index(root: Path = ROOT) -> ClaimIndex:
    """The claim registry's boxes, quotations and tests (``tests/claims.py``, parsed statically)."""
    if str(root / "tests") not in sys.path:
        sys.path.insert(0, str(root / "tests"))
    import claims

    markers = claims.collect_markers(root / "tests")
    quotes: dict[str, list] = {}
    for m in markers:
        if getattr(m, "quote", None):
            quotes.setdefault(f"book/{m.chapter}.md", []).append((" ".join(m.quote.split()), m.test))
    boxes = {m.box for m in markers if m.box} | {c.box for c in claims.NOT_VERIFIABLE if c.box}
    return ClaimIndex(frozenset(boxes), quotes, frozenset(m.test for m in markers))


def load_ledger(path: Path = LEDGER) -> list[dict]:
    """The ledger's entries: ``file``, ``word``, ``context`` (containing the word) and ``by``."""
    entries = read_yaml(path) if path.exists() else []
    for entry in entries or []:
        missing = {"file", "word", "context", "by"} - set(entry)
        if missing:
            raise ValueError(f"{path.name}: entry {entry!r} needs {sorted(missing)}")
        if str(entry["by"]).split(" ")[0] not in KINDS or len(str(entry["by"]).split()) != 2:
            raise ValueError(f"{path.name}: entry {entry!r}: by must be '<kind> <name>', kind one of {KINDS}")
        if not WORDS.search(entry["context"]) or entry["word"] not in entry["context"].lower():
            raise ValueError(f"{path.name}: entry {entry!r}: the context must contain the word")
    return entries or []


@functools.lru_cache(maxsize=1)
def _labels(root: Path = ROOT) -> dict[str, set[str]]:
    """The names a backing may refer to: theorem labels, exercise labels, other labels
    (equations, sections, boxes) and the bibliography's keys."""
    theorem, exercise, other = set(), set(), set()
    for page in (root / "book").glob("*.md"):
        source = page.read_text()
        for _, _, _, blocks in prose_blocks(source):
            for b in blocks:
                if b.label:
                    (theorem if b.name in THEOREMS else exercise if b.name == "exercise" else other).add(b.label)
        other |= set(re.findall(r"^\(([\w-]+)\)=\s*$", source, re.M))
        other |= set(re.findall(r"^:label:\s*([\w-]+)", source, re.M))
    keys = set(re.findall(r"^@\w+\{([^,\s]+),", (root / "book" / "references.bib").read_text(), re.M))
    return {"theorem": theorem, "solution": exercise, "definition": other | theorem, "cite": keys}


def bad_backings(uses_: list[Use], claims: ClaimIndex, root: Path = ROOT) -> list[str]:
    """The backings that name nothing: an unknown theorem, exercise, label, key or claim test."""
    labels = _labels(root)
    bad = []
    for use in uses_:
        if not use.backing:
            continue
        kind, _, name = use.backing.partition(" ")
        known = claims.tests | claims.boxes if kind == "claim" else labels[kind]
        if name not in known:
            bad.append(f"{use.path}:{use.line}: \"{use.word}\" is backed by {use.backing}, which does not exist")
    return bad


def uses(root: Path = ROOT, ledger: list[dict] | None = None) -> list[Use]:
    """Every use of every checked page, in page order."""
    ledger = load_ledger() if ledger is None else ledger
    claims = claim_index(root)
    return [use for page in pages(root)
            for use in source_uses(page.read_text(), page.relative_to(root).as_posix(), ledger, claims)]


def stale_entries(all_uses: list[Use], ledger: list[dict]) -> list[dict]:
    """The ledger's entries that back no use: they match none, or only uses that the text around
    them already backs."""
    return [e for e in ledger if not any(u.from_ledger and _matches(e, u.path, u.word, u.sentence)
                                         for u in all_uses)]


def check_words(app, env, docnames):
    """Sphinx ``env-before-read-docs``: warn about each unbacked use of the checked pages (all of
    them, read in this build or not: 0.2 s), each backing that names nothing, and each ledger
    entry that backs no use."""
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    ledger, everything = _this_build(app)
    docnames_of = {Path(env.doc2path(d)).resolve(): d for d in env.found_docs}
    for use in everything:
        if use.backing is None:
            logger.warning(f"\"{use.word}\" is not backed (book/absolute_words.yml): {use.sentence[:100]}",
                           location=(docnames_of.get((ROOT / use.path).resolve(), use.path), use.line),
                           type="attnmath", subtype="words")
    for problem in bad_backings(everything, claim_index(ROOT)):
        logger.warning(problem, type="attnmath", subtype="words")
    for entry in stale_entries(everything, ledger):
        logger.warning(f"book/absolute_words.yml: the entry {entry} backs no use", type="attnmath",
                       subtype="words")


# The appendix's list: every use with what backs it ({absolute-words}, in book/claims.md).

DOCNAME = "book/claims"


def _shown(sentence: str) -> str:
    """A sentence as the list shows it: roles (glue, references) as an ellipsis, one line."""
    return _ROLE.sub("…", sentence).replace("\n", " ")


def backing_markup(backing: str | None, equations: set[str] = frozenset()) -> str:
    """A backing as MyST: a link to the theorem, exercise, definition or claim test, or the citation."""
    if not backing:
        return "{bdg-danger}`not backed`"
    kind, _, name = backing.partition(" ")
    if kind == "theorem":
        return f"{{prf:ref}}`{name}`"
    if kind == "cite":
        return f"{{cite:p}}`{name}`"
    if kind == "solution":
        return f"solution of {{ref}}`{name}`"
    if kind == "definition":
        return f"definition {{eq}}`{name}`" if name in equations else f"definition, {{ref}}`here <{name}>`"
    if "::" in name:
        test = name.partition("::")[2]
        return f"claim test {{ref}}`{test.replace('_', '_' + chr(0x200b))} <claimtest-{test.replace('_', '-')}>`"
    return f"claim tests of the {{ref}}`Correction box <{name}>`"


def listing_digest(all_uses: list[Use]) -> str:
    import hashlib

    return hashlib.sha256(repr([(u.path, u.word, u.sentence, u.backing) for u in all_uses]).encode()).hexdigest()


def _equations(root: Path = ROOT) -> set[str]:
    found = set()
    for page in (root / "book").glob("*.md"):
        found |= set(re.findall(r"^```\{math\}\s*\n:label:\s*([\w-]+)", page.read_text(), re.M))
    return found


try:
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective
except ImportError:  # the check runs without Sphinx too (tests/book/test_words.py)
    SphinxDirective = object


class WordsTable(SphinxDirective):
    """``{absolute-words}``: per page, every use of an absolute word and what backs it, folded."""

    def run(self):
        from docutils import nodes

        all_uses = _this_build(self.env.app)[1]
        equations = _equations(ROOT)
        lines = []
        for path in dict.fromkeys(u.path for u in all_uses):
            mine = [u for u in all_uses if u.path == path]
            kinds = {}
            for u in mine:
                kind = u.backing.split()[0] if u.backing else "not backed"
                kinds[kind] = kinds.get(kind, 0) + 1
            counts = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
            lines += [f"::::{{dropdown}} {Path(path).stem}: {len(mine)} uses ({counts})",
                      ":::{list-table}", ":header-rows: 1", ":widths: 10 60 30", ":class: claims-table", "",
                      "* - word", "  - sentence", "  - backed by"]
            for u in mine:  # no line numbers: the list is read again only when a use changes
                lines += [f"* - *{u.word}*", f"  - {_shown(u.sentence)}",
                          f"  - {backing_markup(u.backing, equations)}"]
            lines += [":::", "::::", ""]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=DOCNAME), self.content_offset, container)
        return container.children


#: The ledger and the uses of this build, per application: read once, by the first hook that needs them.
_BUILD: dict[int, tuple[list[dict], list[Use]]] = {}


def _this_build(app) -> tuple[list[dict], list[Use]]:
    if id(app) not in _BUILD:
        ledger = load_ledger()
        _BUILD[id(app)] = (ledger, uses(ROOT, ledger))
    return _BUILD[id(app)]


def reread_listing(app, env, added, changed, removed):
    """Sphinx ``env-get-outdated``: the appendix's list is read again when a use or its backing changed."""
    _BUILD.pop(id(app), None)  # a new build (or a new read phase): read the sources again
    digest = listing_digest(_this_build(app)[1])
    if getattr(env, "attnmath_words_digest", None) == digest or DOCNAME not in env.found_docs:
        return []
    env.attnmath_words_digest = digest
    return [DOCNAME]


def setup(app):
    app.connect("env-before-read-docs", check_words)
    app.connect("env-get-outdated", reread_listing)
    app.add_directive("absolute-words", WordsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
