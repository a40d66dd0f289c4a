"""The formulas of a feedback page, typeset when the page is written.

A feedback page goes to the student alone (``--return``: an LMS attaches it to a comment), so
its mathematics cannot wait for a MathJax beside it. The task text's formulas (``$...$`` and
``$$...$$``) are typeset by MathJax's server-side package, the book's own runner
(:mod:`mathjax_node`, with the book's macros from ``_config.yml``), and the page carries the
markup and one stylesheet whose fonts are inlined (``data:`` URLs, only the fonts the formulas
use): it shows its formulas with nothing beside it and nothing fetched.

Without Node.js or ``node_modules/mathjax-full`` (``make book`` installs it), a formula stays
TeX and the page says so in a note of its own; opened where it was written (``OUT/feedback``,
with the book's MathJax copied beside it) MathJax still typesets it in the browser.

Every page of one assignment shows the same task text, so MathJax runs once for them all; the
result is kept in ``$XDG_CACHE_HOME/attngrade/mathjax`` (``~/.cache``) under a digest of the
formulas, the macros, the script and MathJax's version, so a later run of the same assignment
does not start Node.js at all.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import os
import re
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

import mathjax_node

__all__ = ["FORMULA", "Maths", "book_macros", "formulas_in", "replace_formulas", "typeset", "NOTE"]

#: A formula of the task text: ``$$ displayed $$`` or ``$ inline $`` (on one line).
FORMULA = re.compile(r"\$\$(?P<display>.+?)\$\$|\$(?P<inline>[^$\n]+?)\$", re.S)
#: A Markdown code span (its ``$`` are not maths) or a formula.
_CODE_OR_FORMULA = re.compile(r"(?P<ticks>`+)(?!`).+?(?<!`)(?P=ticks)(?!`)|" + FORMULA.pattern, re.S)
#: The note of a page whose formulas are left as TeX.
NOTE = ("The formulas on this page are written in TeX, between $ signs: they could not be typeset "
        "when the page was written (that needs Node.js and the book's MathJax package).")
_FONT_URL = "ATTNGRADE-FONTS"  # where the stylesheet's fonts are, until they are inlined
_FONT_FACE = re.compile(r"@font-face[^{]*\{\s*font-family:\s*(?P<family>[\w-]+);\s*"
                        r"src:\s*url\(\"" + _FONT_URL + r"/(?P<file>[\w.-]+)\"\)[^}]*\}\s*")
#: The families MathJax's CommonHTML draws stretched delimiters from (its stylesheet's rule).
_STRETCHY = {"MJXTEX-S1", "MJXTEX-S4", "MJXTEX-A"}


@dataclass
class Maths:
    """The typeset formulas of some texts: markup per ``(TeX, displayed)`` and their stylesheet."""

    markup: dict = field(default_factory=dict)
    css: str = ""

    def formula(self, source: str) -> str:
        """``source`` (``$...$`` or ``$$...$$``) as typeset markup, or its TeX escaped for HTML."""
        m = FORMULA.fullmatch(source)
        key = (m["display"], True) if m and m["display"] is not None else (m["inline"] if m else None, False)
        return self.markup.get(key) or html.escape(source)

    def complete(self, formulas) -> bool:
        """Whether every formula of ``formulas`` has its markup."""
        return all(f in self.markup for f in formulas)


def replace_formulas(text: str, replace) -> str:
    """``text`` with each formula outside code spans replaced by ``replace(formula source)``."""
    return _CODE_OR_FORMULA.sub(lambda m: m.group(0) if m["ticks"] else replace(m.group(0)), text)


def formulas_in(texts) -> list[tuple[str, bool]]:
    """Every distinct formula of ``texts`` (outside code spans), as ``(TeX, displayed)``, sorted."""
    found = set()
    for text in texts:
        for m in _CODE_OR_FORMULA.finditer(text):
            if not m["ticks"]:
                found.add((m["display"], True) if m["display"] is not None else (m["inline"], False))
    return sorted(found)


def book_macros() -> dict:
    """The book's TeX macros (``_config.yml``'s ``mathjax3_config``), or none if unreadable."""
    return dict(_book_macros())


@functools.lru_cache(maxsize=1)
def _book_macros() -> dict:
    try:
        import yaml

        config = yaml.safe_load((mathjax_node.ROOT / "_config.yml").read_text(encoding="utf-8"))
        macros = config["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"]
        return {str(k): str(v) for k, v in macros.items()}
    except Exception:  # noqa: BLE001 - without the book's macros a formula that uses one stays TeX
        return {}


def _font_dir() -> Path:
    return mathjax_node.node_modules() / "mathjax-full" / "es5" / "output" / "chtml" / "fonts" / "woff-v2"


def _inline_fonts(css: str, markup: list[str]) -> str:
    """The stylesheet with the fonts the markup uses inlined and the other fonts' rules left out."""
    text = " ".join(markup)
    used = {"MJXZERO", "MJXTEX"} | {f"MJXTEX-{v}" for v in re.findall(r"\bTEX-([A-Z0-9]+)\b", text)}
    if "mjx-stretchy" in text:
        used |= _STRETCHY

    def face(m):
        path = _font_dir() / m["file"]
        if m["family"] not in used or not path.is_file():
            return ""
        data = base64.b64encode(path.read_bytes()).decode()
        return (f"@font-face {{ font-family: {m['family']}; "
                f"src: url(\"data:font/woff;base64,{data}\") format(\"woff\"); }}\n")

    return _FONT_FACE.sub(face, css)


def _cache_file(key: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "attngrade" / "mathjax" / f"{key}.json"


def _load(key: str) -> Maths | None:
    try:
        data = json.loads(_cache_file(key).read_text(encoding="utf-8"))
        return Maths({(t, bool(d)): h for t, d, h in data["markup"]}, data["css"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _save(key: str, maths: Maths) -> None:
    path = _cache_file(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        data = {"markup": [[t, d, h] for (t, d), h in maths.markup.items()], "css": maths.css}
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a cache that cannot be written costs one run of Node.js next time


_LOCK = threading.Lock()
_MEMORY: dict[str, Maths] = {}


def typeset(formulas: list[tuple[str, bool]]) -> Maths:
    """``formulas`` typeset (those MathJax cannot typeset are left out), or an empty
    :class:`Maths` without Node.js or when it fails: the caller then shows the TeX."""
    if not formulas or not mathjax_node.renderer_available():
        return Maths()
    macros = book_macros()
    digest = mathjax_node.renderer_digest()
    digest.update(json.dumps([macros, sorted(formulas)]).encode())
    key = digest.hexdigest()
    with _LOCK:  # the pages of one class are written by many threads: MathJax runs once
        maths = _MEMORY.get(key) or _load(key)
        if maths is None:
            try:
                result = mathjax_node.run_mathjax(formulas, macros, _FONT_URL, timeout=120)
            except (OSError, RuntimeError, ValueError, subprocess.SubprocessError):
                return Maths()  # the pages show their TeX, with the note
            done = [(f, h) for f, h, e in zip(formulas, result["html"], result["errors"]) if h and not e]
            maths = Maths(dict(done), _inline_fonts(result["css"], [h for _, h in done]))
            _save(key, maths)
        _MEMORY[key] = maths
    return maths
