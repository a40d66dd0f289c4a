"""The glossary's definitions render whole.

Sphinx's ``glossary`` directive takes the indentation of a definition's first line as the
indentation of the whole definition and cuts that many characters from every later line: a first
line indented by four spaces and the others by two loses two letters of each later line ("the
residual path" became "s residual path" on the page). The check reads the sources, so it needs
no build.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = re.compile(r"^```\{glossary\}[^\n]*\n(.*?)^```", re.M | re.S)


def short_lines(source: str) -> list[str]:
    """The definition lines of ``source``'s glossaries indented less than their definition's first
    line, each as ``"<term>: <line>"``."""
    problems = []
    for block in GLOSSARY.findall(source):
        term, first = None, None
        for line in block.splitlines():
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip(" "))
            if indent == 0 and not line.startswith(":"):  # a term (options start with a colon)
                term, first = line.strip(), None
            elif term is not None:
                if first is None:
                    first = indent
                elif indent < first:
                    problems.append(f"{term}: {line.strip()}")
    return problems


def test_short_lines_finds_a_definition_whose_first_line_is_indented_deeper():
    source = "```{glossary}\nterm\n    first line\n  second line\n\nother\n  one\n  two\n```\n"
    assert short_lines(source) == ["term: second line"]


def test_every_glossary_definition_keeps_its_letters():
    pages = [p for p in sorted((ROOT / "book").glob("*.md")) if "{glossary}" in p.read_text()]
    assert pages, "the book has a glossary"
    problems = [f"{p.name}: {line}" for p in pages for line in short_lines(p.read_text())]
    assert not problems, "definition lines indented less than their first line lose letters:\n" \
        + "\n".join(problems)
