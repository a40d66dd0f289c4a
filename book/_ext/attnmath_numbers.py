"""Hand-typed numbers in the chapters: every number in a chapter's prose is glued from its code,
cited, or listed with a reason in ``book/numbers_allowed.yml``.

A number that a chapter's code computes is pasted into the text with myst-nb's ``glue`` roles
(``{glue:text}`key:.2f```), so that the text changes when the code does; a constant from
elsewhere carries its ``{cite}`` in the same sentence. :func:`unsourced_numbers` reads a chapter's
MyST source and returns every other number in its prose: paragraphs, headings, tables, figure
captions and alt text, the titles and bodies of theorems, exercises, solutions and admonitions.

What it does not count as a number of the text:

- code (code cells, listings, inline code), directive options other than ``:alt:``, comments,
  labels and links' addresses;
- mathematics, except decimals and percentages in it: an integer in a formula is part of a
  definition ($1/\\sqrt{D}$, $2^{16}$);
- years (1950-2029), references ("Chapter 6", "Eq. 3.2", "Theorem 2", "Section 4.1"), shapes
  (``(2, 3, 8)``, ``64 × 64``), the numbers of an ordered list, numbers that are part of a name
  ("fp16", "H100", "GPT-3", "top-2", "8-bit");
- small integers (0 to 12) used as words ("two heads", "3 experts"), unless they are a result: next
  to ``=``, ``≈``, ``×``, ``%`` or "times".

The remaining exceptions are listed in ``book/numbers_allowed.yml``, each with the chapter, the
number, a piece of its line and the reason; an entry that no longer matches is an error too, so
the list stays reviewed.

A number that a cell *prints* is glued too when the text repeats it, even where the rules above
would let it pass: an integer in maths ("$k = 725$") or a small integer of prose ("rank 8"). The
build knows what each executed chapter printed, so it compares (:func:`repeated_printed_values`):
an integer of the text whose name (the word or symbol just before it) and value are printed
together by one of the chapter's cells is an error unless the chapter's code sets that name to
that value (``C = 8``: an input the text may name) or the list allows it with ``printed: true``. The book build runs the check on every chapter it reads (a warning,
an error under ``-W``), and ``tests/book/test_numbers.py`` runs it without a build.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = ROOT / "book" / "numbers_allowed.yml"
#: The chapters: ``book/01_softmax.md`` ... (the other pages are not executed notebooks).
CHAPTER = re.compile(r"^book/\d\d_[a-z_]+\.md$")

#: Directives whose body is code or data, never prose (their numbers are the code's).
CODE_DIRECTIVES = {"code-cell", "literalinclude", "code", "code-block", "sourcecode", "raw",
                   "eval-rst", "mermaid", "glue", "glue:figure", "glue:any", "glue:math",
                   "include", "toctree", "bibliography", "attnmath-theorems", "claims-summary",
                   "claims-table", "claims-tests"}
MATH_DIRECTIVES = {"math"}
#: Directives whose options are prose (a theorem's status: book/_ext/attnmath_theorems.py).
PROSE_OPTIONS = {"theorem-status"}

_FENCE = re.compile(r"^(\s*)(`{3,}|:{3,})\s*(\{([\w:-]+)\})?\s*(.*)$")
_GLUE_CALL = re.compile(r"\bglue\(\s*(f?)([\"'])(.+?)\2")
_META = re.compile(r"^:(\s*)([\w-]+):\s*(.*)$")
_OPTION = re.compile(r"^\s*:([\w-]+):\s*(.*)$")
_ROLE = re.compile(r"\{([\w:-]+)\}(`+)(.*?)\2")
_CODE = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"\]\([^)]*\)|<https?://[^>]*>|https?://\S+")
_COMMENT = re.compile(r"<!--.*?-->")
_MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$]+?)\$")
_NUMBER = re.compile(r"(?<![\w.\-−/^])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?!(?!x\b)\w|\.\d|,\d{3})")
_MATH_NUMBER = re.compile(r"(?<!\^{-)(?<![\w.^_{])(\d+\.\d+|\d+(?=\s*\\%))")
_REFERENCE = re.compile(
    r"(?:Chapters?|chapters?|Sections?|sections?|§|Eqs?\.|Equations?|equations?|Figs?\.|"
    r"Figures?|figures?|Tables?|tables?|Theorems?|Lemmas?|Propositions?|Corollar(?:y|ies)|"
    r"Definitions?|Exercises?|Algorithms?|Examples?|Appendix|Part|Parts|[Ll]ines?|[Ss]teps?|"
    r"[Pp]ages?|pp?\.|arXiv:?|Python|version|v|PEP|Listings?|Claims?|claims?|[Ll]ayers?)\s*"
    r"(?:\d+(?:\.\d+)*\s*(?:,|and|or|–|-|to)\s*)*$")
_SHAPE = re.compile(r"\(\s*\d+(?:\s*,\s*\d+)+\s*,?\s*\)|\d+\s*[×x]\s*\d+(?:\s*[×x]\s*\d+)*")
_RESULT_BEFORE = re.compile(r"(?:=|≈|≃|~|×|≥|≤|>|<|about|roughly|of)\s*$")
_RESULT_AFTER = re.compile(r"^\s*(?:×|x\b|%|times\b|percent)")
_CITE = re.compile(r"\{cite(?::\w+)?\}")
#: A sentence: up to a full stop, question or exclamation mark followed by white space.
SENTENCE = re.compile(r"(?:[^.!?]|[.!?](?!\s))+[.!?]?")
_LIST_ITEM = re.compile(r"^\s*\d+[.)]\s", re.M)
#: Quotations of a source (which the text corrects or discusses): its words, not the book's.
_QUOTE = re.compile(r'"[^"\n]*(?:\n[^"\n]*)?"|“[^”]*”')


@dataclass(frozen=True)
class Hit:
    """A number found in a chapter's prose: file (relative to the root), line, the number, the line."""

    path: str
    line: int
    number: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: the number {self.number} is neither glued nor cited: " \
               f"{self.text.strip()[:100]}"


def prose_lines(source: str):
    """Yield ``(line number, text, kind)`` for each piece of prose of a MyST notebook.

    ``kind`` is ``"prose"`` or ``"math"`` (the body of a ``{math}`` directive or of ``$$`` lines).
    """
    for number, text, kind, _ in prose_blocks(source):
        yield number, text, kind


@dataclass(frozen=True)
class Block:
    """A directive that encloses prose: its name (``prf:theorem``, ``solution``, ``admonition``)
    and its label (the ``:label:`` option, a solution's exercise, or a ``(label)=`` line above)."""

    name: str
    label: str | None


def prose_blocks(source: str):
    """Yield ``(line number, text, kind, blocks)``: :func:`prose_lines` with the directives that
    enclose each piece of prose, outermost first (a tuple of :class:`Block`)."""
    lines = source.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":
        start = next((i + 1 for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)
    stack: list[list] = []  # [fence, directive, options still allowed, Block or None]
    display_math = False
    caption = None  # the indent of a code cell's block caption while it is read
    for index in range(start, len(lines)):
        line, number = lines[index], index + 1
        fence = _FENCE.match(line)
        if stack and fence and _closes(stack[-1][0], fence):
            stack.pop()
            continue
        kind = stack[-1][1] if stack else ""
        blocks = tuple(entry[3] for entry in stack if entry[3] is not None)
        if kind == "code-cell":
            caption, text = _cell_metadata(line, caption)
            if text:
                yield number, text, "prose", blocks
            continue
        if kind in CODE_DIRECTIVES or kind == "verbatim":
            if fence and fence.group(2)[0] == stack[-1][0][0] and fence.group(4):
                stack.append([fence.group(2), "verbatim", False, None])
            continue
        if fence:
            name = fence.group(4) or ("verbatim" if fence.group(2)[0] == "`" else "")
            block = None if name in CODE_DIRECTIVES or name == "verbatim" else \
                Block(name, _directive_label(lines, index, name, fence.group(5)))
            stack.append([fence.group(2), name, True, block])
            if block is not None and fence.group(5):
                yield number, fence.group(5), "math" if name in MATH_DIRECTIVES else "prose", blocks + (block,)
            continue
        if stack and stack[-1][2]:
            option = _OPTION.match(line)
            if option:
                if option.group(1) == "alt" or stack[-1][1] in PROSE_OPTIONS:
                    yield number, option.group(2), "prose", blocks
                continue
            stack[-1][2] = False
        if line.strip() == "$$":
            display_math = not display_math
            continue
        if display_math or kind in MATH_DIRECTIVES:
            yield number, line, "math", blocks
        elif not re.match(r"^\s*(%|\+\+\+|\(.*\)=\s*$|\[\^?[\w-]+\]:)", line):
            yield number, line, "prose", blocks


def _directive_label(lines: list[str], index: int, name: str, argument: str) -> str | None:
    """The label of the directive opened on line ``index``: its ``:label:`` option, the argument
    of a ``{solution}`` (the exercise it solves), or a ``(label)=`` line just above it."""
    for line in lines[index + 1:]:
        option = _OPTION.match(line)
        if not option:
            break
        if option.group(1) == "label":
            return option.group(2).strip()
    if name in ("solution", "theorem-status") and argument.strip():
        return argument.split()[0]
    above = re.match(r"^\(([\w-]+)\)=\s*$", lines[index - 1]) if index else None
    return above.group(1) if above else None


def _cell_metadata(line: str, block: int | None) -> tuple[int | None, str | None]:
    """A code cell's line: ``(indent of the block caption being read, prose or None)``.

    A code cell's figure caption and alt text (``:mystnb:`` metadata, ``caption: |`` followed by
    deeper lines, or ``alt: text``) are prose; the rest of the cell is code.
    """
    if not line.startswith(":"):
        return None, None
    body = line[1:]
    indent = len(body) - len(body.lstrip())
    if block is not None and indent > block:
        return block, body.strip()
    key = _META.match(line)
    if key and key.group(2) in ("caption", "alt"):
        value = key.group(3).strip()
        if value in ("|", ">", "|-", ">-"):
            return indent, None
        return None, value
    return None, None


def _closes(open_fence: str, fence: re.Match) -> bool:
    mark = fence.group(2)
    return (mark[0] == open_fence[0] and len(mark) >= len(open_fence)
            and not fence.group(4) and not fence.group(5).strip())


def numbers_in(text: str, kind: str = "prose") -> list[tuple[int, str]]:
    """The numbers of a paragraph of prose (or a line of maths) that need a source, with their
    positions in ``text``, in order."""
    if kind == "math":
        return [(m.start(), m.group(1)) for m in _MATH_NUMBER.finditer(text)]
    text = _blank(_COMMENT, text)
    text = _blank(_ROLE, text, "ROLE")
    text = _blank(_CODE, text, "CODE")
    text = _blank(_LINK, text)
    found = []
    for math in _MATH.finditer(text):
        inner = 1 if math.group(1) is not None else 2
        found += [(math.start(inner) + at, value)
                  for at, value in numbers_in(math.group(inner), "math")]
    text = _blank(_MATH, text, "MATH")
    text = _blank(_LIST_ITEM, text)
    skipped = [m.span() for m in _SHAPE.finditer(text)] + [m.span() for m in _QUOTE.finditer(text)]
    for match in _NUMBER.finditer(text):
        if any(a <= match.start() < b for a, b in skipped) or _is_word(text, match):
            continue
        found.append((match.start(), match.group(0)))
    return sorted(found)


def _blank(pattern: re.Pattern, text: str, word: str = "") -> str:
    """``text`` with each match of ``pattern`` replaced by ``word`` padded to the same length
    (newlines kept), so that positions stay those of the source."""
    def fill(match):
        inner = match.group(0)
        body = "".join("\n" if c == "\n" else " " for c in inner)
        return (" " + word + body[len(word) + 1:]) if word and len(inner) > len(word) + 1 else body
    return pattern.sub(fill, text)


def _is_word(text: str, match: re.Match) -> bool:
    """Whether a number is a year, a reference, part of a name or a small integer used as a word."""
    before, after = text[:match.start()], text[match.end():]
    whole, decimals = match.group(1), match.group(2)
    if re.search(r"[A-Za-z]-$", before) or re.match(r"^-[A-Za-z]", after):
        return True  # top-2, GPT-3, 8-bit
    if _REFERENCE.search(before):
        return True
    if decimals:
        return False
    value = int(whole.replace(",", ""))
    if 1950 <= value <= 2029 and "," not in whole:
        return True
    if value <= 12:
        return not (_RESULT_BEFORE.search(before) or _RESULT_AFTER.match(after))
    return False


def chapter_numbers(path: Path, root: Path = ROOT) -> list[Hit]:
    """Every number of a chapter's prose that is neither glued nor cited (before the allow-list)."""
    return source_numbers(path.read_text(), path.resolve().relative_to(root).as_posix())


def source_numbers(source: str, relative: str) -> list[Hit]:
    """The numbers of a MyST source that are neither glued nor cited; ``relative`` names it."""
    hits = []
    paragraph: list[tuple[int, str]] = []
    for number, text, kind in list(prose_lines(source)) + [(0, "", "prose")]:
        if kind == "prose" and text.strip():
            paragraph.append((number, text))
            continue
        hits.extend(_paragraph_hits(relative, paragraph))
        paragraph = []
        hits.extend(Hit(relative, number, value, text) for _, value in numbers_in(text, kind))
    return hits


def _paragraph_hits(path: str, paragraph: list[tuple[int, str]]) -> list[Hit]:
    """The hits of one paragraph; a sentence with a ``{cite}`` role sources its numbers."""
    joined = "\n".join(text for _, text in paragraph)
    starts = [0]
    for _, text in paragraph:
        starts.append(starts[-1] + len(text) + 1)
    sentences = [m.span() for m in SENTENCE.finditer(joined)
                 if _CITE.search(m.group(0))]
    hits = []
    for position, value in numbers_in(joined):
        if any(a <= position < b for a, b in sentences):
            continue
        row = max(i for i, start in enumerate(starts[:-1]) if start <= position)
        hits.append(Hit(path, paragraph[row][0], value, paragraph[row][1]))
    return hits


def read_yaml(path: Path):
    """A YAML file's content, parsed by libyaml where PyYAML has it (ten times faster than the
    pure-Python parser on the book's lists)."""
    import yaml

    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_allowed(path: Path = ALLOWED) -> list[dict]:
    """The reviewed exceptions: ``file``, ``number``, ``context`` (a piece of the line), ``reason``."""
    entries = read_yaml(path) or []
    for entry in entries:
        missing = {"file", "number", "context", "reason"} - set(entry)
        if missing or not str(entry["reason"]).strip():
            raise ValueError(f"{path.name}: entry {entry!r} needs {sorted(missing) or 'a reason'}")
    return entries


def _allows(entry: dict, hit: Hit) -> bool:
    return (entry["file"] == hit.path and str(entry["number"]) == hit.number
            and entry["context"] in hit.text)


def unsourced_numbers(path: Path, root: Path = ROOT, allowed: list[dict] | None = None) -> list[Hit]:
    """The numbers of a chapter that are neither glued, cited nor allowed: each is an error."""
    allowed = [e for e in (load_allowed() if allowed is None else allowed) if not e.get("printed")]
    return [hit for hit in chapter_numbers(path, root)
            if not any(_allows(entry, hit) for entry in allowed)]


def stale_allowances(paths: list[Path], root: Path = ROOT,
                     allowed: list[dict] | None = None) -> list[dict]:
    """The entries of the allow-list that match no number of the given chapters."""
    allowed = [e for e in (load_allowed() if allowed is None else allowed) if not e.get("printed")]
    hits = [hit for path in paths for hit in chapter_numbers(path, root)]
    return [entry for entry in allowed if not any(_allows(entry, hit) for hit in hits)]


def unglued_keys(source: str) -> set[str]:
    """The keys a chapter's text pastes (``{glue:text}`key:fmt```) that no ``glue(...)`` call of
    its code defines; an f-string key stands for every key its fixed parts allow."""
    patterns = []
    for match in _GLUE_CALL.finditer(source):
        parts = re.split(r"\{[^}]*\}", match.group(3)) if match.group(1) else [match.group(3)]
        patterns.append(re.compile(".+".join(map(re.escape, parts)) + r"\Z"))
    pasted = {m.group(3).split("::")[-1].split(":")[0]
              for m in _ROLE.finditer(source) if m.group(1).startswith("glue")}
    return {key for key in pasted if not any(p.match(key) for p in patterns)}


# Values that a cell prints, repeated by hand: an integer in maths ("$k = 725$") or a small
# integer in prose ("rank 8"), which the checks above take for part of a definition or a word.

_INTEGER = re.compile(r"(?<![\w.^_{}\\])(\d+)(?!\w|\.\d)")
_TEX_WORD = re.compile(r"\\(?:operatorname|mathrm|text|mathit|mathbf)\{([^{}]*)\}")
_TEX = re.compile(r"\\[A-Za-z]+|[{}$]")
_LABEL = re.compile(r"(?<![\w-])([A-Za-z_][A-Za-z_0-9]*)\s*(?:=|:|≈|approx)?\s*$")
_FILLER = {"the", "of", "to", "and", "or", "at", "in", "on", "by", "for", "from", "with", "a", "an",
           "is", "are", "be", "than", "as", "it", "its", "per", "each"}
_CELL = re.compile(r"^(`{3,})\{code-cell\}[^\n]*\n(.*?)^\1\s*$", re.M | re.S)
_ASSIGN = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*(\d+)\b")
_ASSIGN_MANY = re.compile(r"\b([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*=\s*\(?(\d+(?:\s*,\s*\d+)+)")
_LOOP = re.compile(r"\bfor\s+\(?([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\)?\s+in\s+([\[(].*?[\])]):?\s*$", re.M)


def _label(before: str) -> str | None:
    """The name a number is the value of: the word or symbol just before it ("rank" in "rank 8",
    "k" in "$k = 725$"), lower case; ``None`` after a filler word or nothing."""
    match = _LABEL.search(_TEX.sub(" ", _TEX_WORD.sub(r" \1 ", before[-50:])))
    if not match or match.group(1).lower() in _FILLER:
        return None
    return match.group(1).lower()


def printed_pairs(printed: list[str]) -> set[tuple[str, str]]:
    """The ``(name, integer)`` pairs of a chapter's printed output ("rank 8", "k = 725")."""
    return {(label, m.group(1)) for line in printed for m in _INTEGER.finditer(line)
            if (label := _label(line[:m.start()]))}


def code_pairs(source: str) -> set[tuple[str, str]]:
    """The ``(name, integer)`` pairs a chapter's code sets (``C = 8``, ``C, H = 8, 4``, ``D=64``):
    inputs, which the text may name as they are."""
    pairs = set()
    for _, cell in _CELL.findall(source):
        for line in cell.splitlines():
            many = _ASSIGN_MANY.findall(line)
            for names, values in many:
                pairs |= {(a.strip().lower(), b.strip()) for a, b in zip(names.split(","), values.split(","))}
            if not many:
                pairs |= {(a.lower(), b) for a, b in _ASSIGN.findall(line)}
        for names, values in _LOOP.findall(cell):  # for L, S in [(12, 3), (12, 2)]: / for n in (1, 2):
            names = [a.strip().lower() for a in names.split(",")]
            rows = re.findall(r"\(([^()]*)\)", values[1:-1]) if len(names) > 1 else [values[1:-1]]
            for row in rows:
                items = [v.strip() for v in row.split(",")]
                pairs |= {(a, v) for a, v in zip(names, items) if v.isdigit()} if len(names) > 1 \
                    else {(names[0], v) for v in items if v.isdigit()}
    return pairs


def _integers(text: str, kind: str):
    """``(value, name)`` of each integer of a line that the other checks let pass: every integer
    in maths, and the small integers of prose."""
    text = _blank(_COMMENT, text)
    for pattern, word in ((_ROLE, "ROLE"), (_CODE, "CODE"), (_LINK, "")):
        text = _blank(pattern, text, word)
    maths = [(0, len(text))] if kind == "math" else [m.span() for m in _MATH.finditer(text)]
    skipped = [m.span() for m in _SHAPE.finditer(text)] + [m.span() for m in _QUOTE.finditer(text)]
    for match in _INTEGER.finditer(text):
        inside = any(a <= match.start() < b for a, b in maths)
        value = int(match.group(1))
        if value < 2 or any(a <= match.start() < b for a, b in skipped):
            continue
        before = text[:match.start()]
        if not inside and (value > 12 or _REFERENCE.search(before) or re.search(r"[A-Za-z]-$", before)):
            continue  # a larger number of prose is the static check's; references and names are not values
        label = _label(before)
        if label and not (not inside and re.search(r"(?<![\w-])[A-Z][A-Za-z]+\s*$", before)):
            yield match.group(1), label  # (a capitalised word before a number of prose: a name, "LLaMA 2")


def repeated_printed_values(source: str, relative: str, printed: list[str],
                            allowed: list[dict] | None = None) -> list[Hit]:
    """The integers of a chapter's text that repeat a value its code prints under the same name
    ("rank 8" printed, "rank 8" typed) and that its code does not set, unless allowed."""
    allowed = [e for e in (load_allowed() if allowed is None else allowed) if e.get("printed")]
    return [hit for hit in _printed_repeats(source, relative, printed)
            if not any(_allows(e, hit) for e in allowed)]


def _printed_repeats(source: str, relative: str, printed: list[str]) -> list[Hit]:
    shown, set_by_code = printed_pairs(printed), code_pairs(source)
    return [Hit(relative, number, value, text) for number, text, kind in prose_lines(source)
            for value, label in _integers(text, kind)
            if (label, value) in shown and (label, value) not in set_by_code]


def stale_printed_allowances(source: str, relative: str, printed: list[str],
                             allowed: list[dict] | None = None) -> list[dict]:
    """The ``printed: true`` entries of one chapter that match no repeated printed value."""
    hits = _printed_repeats(source, relative, printed)
    return [e for e in (load_allowed() if allowed is None else allowed)
            if e.get("printed") and e["file"] == relative and not any(_allows(e, h) for h in hits)]


def printed_output(doctree) -> list[str]:
    """The lines a chapter's executed cells printed (their output, as myst-nb put it in the doctree)."""
    from docutils import nodes

    found = []
    for output in doctree.findall(nodes.Element):
        if "cell_output" in output.get("classes", []):  # its text and tables, not a figure's caption
            for node in output.findall(lambda n: isinstance(n, (nodes.literal_block, nodes.table))):
                found += node.astext().splitlines()
    return found


def check_printed_values(app, doctree):
    """Sphinx ``doctree-read``: warn about each value a chapter's cells print that its text repeats
    by hand (:func:`repeated_printed_values`)."""
    from sphinx.util import logging

    path = Path(app.env.doc2path(app.env.docname)).resolve()
    if not path.is_relative_to(ROOT) or not CHAPTER.match(path.relative_to(ROOT).as_posix()):
        return
    source, relative, printed = path.read_text(), path.relative_to(ROOT).as_posix(), printed_output(doctree)
    logger = logging.getLogger(__name__)
    for hit in repeated_printed_values(source, relative, printed):
        logger.warning(f"the number {hit.number} repeats a value the chapter's code prints: glue it "
                       f"(book/numbers_allowed.yml lists the exceptions, with printed: true)",
                       location=(app.env.docname, hit.line), type="attnmath", subtype="numbers")
    for entry in stale_printed_allowances(source, relative, printed):
        logger.warning(f"book/numbers_allowed.yml: {entry} matches no printed value",
                       type="attnmath", subtype="numbers")


def check_numbers(app, env, docnames):
    """Sphinx ``env-before-read-docs``: warn about each unsourced number of the chapters read."""
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    allowed = load_allowed()  # the repository's list, whichever folder Sphinx builds
    for docname in docnames:
        path = Path(env.doc2path(docname)).resolve()
        if not path.is_relative_to(ROOT) or not CHAPTER.match(path.relative_to(ROOT).as_posix()):
            continue
        for hit in unsourced_numbers(path, ROOT, allowed):
            logger.warning(f"the number {hit.number} is neither glued nor cited "
                           f"(book/numbers_allowed.yml lists the exceptions)",
                           location=(docname, hit.line), type="attnmath", subtype="numbers")


def setup(app):
    app.setup_extension("attnmath_words")  # absolute words in the same prose (attnmath_words.py)
    app.connect("env-before-read-docs", check_numbers)
    app.connect("doctree-read", check_printed_values)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
