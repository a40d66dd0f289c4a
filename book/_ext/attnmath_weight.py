"""Lighter pages: the theme's stylesheets keep only the rules this book's pages can use, the icon
font only the icons those rules draw, and code blocks only the markup that shows.

pydata-sphinx-theme ships Bootstrap, Font Awesome's stylesheet (a rule for each of its 2,000
icons) and its own styles in one 400 kB file, and sphinx-design, myst-nb and the other extensions
add 150 kB more; a chapter uses a small part of them. After the build, :func:`trim_css` rewrites
each of these files with only the rules whose selectors can match something in the book: a selector is
kept unless it names a class or an id that appears nowhere in the written pages and nowhere in the
book's scripts (which add classes such as ``show`` or ``collapsing`` while a reader uses the
page), or a class of Font Awesome's icons that no page uses. Attribute selectors, pseudo-classes
and element names are never a reason to drop a rule, and neither is anything inside ``:not()``,
``:is()``, ``:where()`` or ``:has()``; ``@font-face``, ``@keyframes`` and custom properties stay.
The browser tests and screenshots check the pages that result (tests/browser).

Code blocks lose the ``<span>`` of every token class that the highlighting style draws in the
colour of the code around it, in both themes (names and punctuation: :func:`plain_tokens`); that
is a third of a chapter page's bytes, and what a reader sees and copies stays the same.

Font Awesome's solid font (156 kB) is then cut down (:func:`subset_icon_font`, fontTools) to the
glyphs that the remaining rules name (the admonition and download icons), as a WOFF file of a few
kilobytes that the stylesheet loads instead.
"""

from __future__ import annotations

import re
from pathlib import Path

#: The stylesheets that are trimmed (patterns relative to ``_static``); the theme's comes first.
STYLESHEETS = ("styles/pydata-sphinx-theme.css", "styles/sphinx-book-theme.css", "basic.css",
               "sphinx-design.min.css", "mystnb.*.css", "proof.css",
               "togglebutton.css")
#: Classes that scripts build at run time from parts (Bootstrap's ``bs-tooltip-auto``...) and
#: states they set, kept whether or not their name appears whole in a script.
KEEP_PREFIXES = ("bs-", "tooltip", "popover", "show", "fade", "collaps", "modal", "dropdown",
                 "offcanvas", "active", "disabled", "focus", "hide", "sd-tab", "sd-active",
                 "toggle", "copybtn", "o-tooltip", "success", "pst-", "theme-", "scrolled")
_WORD = re.compile(r"[A-Za-z_][\w-]*")
_FUNCTIONAL = re.compile(r":(?:not|is|where|has|nth-[a-z-]+|lang|dir|host|host-context)\(")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_FA_ICON = re.compile(r"^fa-[a-z0-9-]+$")
_FA_HELPERS = {"fa-solid", "fa-regular", "fa-brands", "fa-lg", "fa-fw", "fa-sm", "fa-xs"}


def used_words(outdir: Path) -> set[str]:
    """Every word of every written page and every script of the book but MathJax: a superset of
    the classes and ids that can occur in the pages."""
    words: set[str] = set()
    files = list(outdir.rglob("*.html"))
    files += [p for p in (outdir / "_static").rglob("*.js") if "mathjax" not in p.parts]
    for path in files:
        words.update(_WORD.findall(path.read_text(errors="replace")))
    return words


def _strip_functional(selector: str) -> str:
    """The selector without the arguments of functional pseudo-classes (never a reason to drop)."""
    out, i = [], 0
    while True:
        match = _FUNCTIONAL.search(selector, i)
        if match is None:
            out.append(selector[i:])
            return "".join(out)
        out.append(selector[i:match.start()])
        depth, j = 1, match.end()
        while j < len(selector) and depth:
            depth += {"(": 1, ")": -1}.get(selector[j], 0)
            j += 1
        i = j


def _split_selectors(prelude: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(prelude):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(prelude[start:i])
            start = i + 1
    parts.append(prelude[start:])
    return [p.strip() for p in parts if p.strip()]


def selector_can_match(selector: str, words: set[str], icons: set[str]) -> bool:
    """False when the selector names a class or an id that the book never uses."""
    plain = re.sub(r"\[[^\]]*\]", "", _strip_functional(selector))
    if "\\" in plain:  # escaped names: not worth parsing, keep
        return True
    for kind, name in re.findall(r"([.#])(-?[A-Za-z_][\w-]*)", plain):
        if kind == "." and _FA_ICON.match(name) and name not in _FA_HELPERS:
            if name not in icons:
                return False
            continue
        if name in words or name.startswith(KEEP_PREFIXES):
            continue
        return False
    return True


def trim_css(css: str, words: set[str], icons: set[str]) -> str:
    """The stylesheet with only the rules and selectors that can match (see the module)."""
    import tinycss2

    def walk(rules) -> list[str]:
        out = []
        for rule in rules:
            if rule.type == "qualified-rule":
                prelude = tinycss2.serialize(rule.prelude).strip()
                keep = [s for s in _split_selectors(prelude)
                        if s.startswith((":root", "@")) or selector_can_match(s, words, icons)]
                if keep:
                    out.append(",".join(keep) + "{" + tinycss2.serialize(rule.content).strip() + "}")
            elif rule.type == "at-rule":
                head = "@" + rule.at_keyword + tinycss2.serialize(rule.prelude)
                if rule.content is None:
                    out.append(head.strip() + ";")
                elif rule.lower_at_keyword in ("media", "supports", "layer", "container"):
                    inner = walk(tinycss2.parse_rule_list(rule.content, skip_whitespace=True,
                                                          skip_comments=True))
                    if inner:
                        out.append(head.strip() + "{" + "".join(inner) + "}")
                else:  # @font-face, @keyframes, @page ...: as they are
                    out.append(head.strip() + "{" + tinycss2.serialize(rule.content).strip() + "}")
        return out

    rules = tinycss2.parse_stylesheet(css, skip_whitespace=True, skip_comments=True)
    # tinycss2 writes escapes (the icons' "\\f0f3") as the characters: escape them again (ASCII)
    return _NON_ASCII.sub(lambda m: "\\%x " % ord(m.group()), "\n".join(walk(rules))) + "\n"


def used_icons(outdir: Path) -> set[str]:
    """The Font Awesome icon classes (``fa-download``) that the written pages use."""
    icons: set[str] = set()
    for page in outdir.rglob("*.html"):
        for classes in re.findall(r'class="([^"]*)"', page.read_text(errors="replace")):
            icons.update(c for c in classes.split() if _FA_ICON.match(c))
    return icons


_PUA_ESCAPE = re.compile(r"\\(f[0-9a-f]{3}|e[0-9a-f]{3})\b", re.I)
_SOLID_FACE = re.compile(
    r"url\((?P<path>[^)'\"]*fa-solid-900)\.woff2\)\s*format\(\"woff2\"\)")


def subset_icon_font(static: Path, css_path: Path) -> None:
    """Cut Font Awesome's solid font down to the glyphs the trimmed stylesheet names, and load that
    subset (WOFF) instead of the whole font."""
    font = static / "vendor" / "fontawesome" / "webfonts" / "fa-solid-900.ttf"
    css = css_path.read_text()
    if not font.exists() or not _SOLID_FACE.search(css):
        return
    from fontTools import subset

    codepoints = sorted({int(c, 16) for c in _PUA_ESCAPE.findall(css)})
    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = []
    options.name_IDs = []
    options.notdef_outline = True
    loaded = subset.load_font(str(font), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=codepoints)
    subsetter.subset(loaded)
    target = font.with_name("fa-solid-900.book.woff")
    subset.save_font(loaded, str(target), options)
    css_path.write_text(_SOLID_FACE.sub(
        lambda m: f'url({m["path"]}.book.woff) format("woff")', css))


_TOKEN_RULE = re.compile(r'html\[data-theme="(\w+)"\] \.highlight(?: \.(\w+))? \{([^}]*)\}')
_CODE_BLOCK = re.compile(r'<div class="highlight"><pre>.*?</pre></div>', re.S)
_TOKEN_SPAN = re.compile(r'<span class="(\w+)">([^<]*)</span>')


def plain_tokens(pygments_css: str) -> set[str]:
    """The code token classes (``n``: names, ``p``: punctuation) that every theme draws exactly
    like the code around them: their ``<span>`` changes nothing a reader sees."""
    base: dict[str, str] = {}
    rules: dict[str, dict[str, str]] = {}
    for theme, token, body in _TOKEN_RULE.findall(pygments_css):
        declarations = " ".join(body.split())
        if not token:
            colour = re.search(r"(?:^|;|\s)color:\s*([^;]+)", declarations)
            base[theme] = colour.group(1).strip() if colour else ""
        else:
            rules.setdefault(token, {})[theme] = declarations.rstrip(";").strip()
    return {token for token, by_theme in rules.items()
            if base and set(by_theme) == set(base)
            and all(by_theme[t] == f"color: {base[t]}" for t in base)}


def unwrap_plain_tokens(html: str, plain: set[str]) -> str:
    """The page with the spans of :func:`plain_tokens` removed from its code blocks (a third of
    a chapter's bytes); the text of the code is unchanged."""
    def unwrap(block):
        return _TOKEN_SPAN.sub(lambda m: m[2] if m[1] in plain else m[0], block[0])

    return _CODE_BLOCK.sub(unwrap, html) if plain else html


def lighten_static(outdir: Path) -> None:
    """Lighten the written book in ``outdir`` (see the module): code spans, stylesheets, icons."""
    static = outdir / "_static"
    pygments = static / "pygments.css"
    plain = plain_tokens(pygments.read_text()) if pygments.exists() else set()
    for page in outdir.rglob("*.html"):
        text = page.read_text()
        lighter = unwrap_plain_tokens(text, plain)
        if lighter != text:
            page.write_text(lighter)
    words, icons = used_words(outdir), used_icons(outdir)
    for pattern in STYLESHEETS:
        for path in static.glob(pattern):
            path.write_text(trim_css(path.read_text(), words, icons))
    theme = static / STYLESHEETS[0]
    if theme.exists():
        subset_icon_font(static, theme)
